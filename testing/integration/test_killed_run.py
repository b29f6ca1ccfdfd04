"""A run killed (SIGKILL) while a nested pass runs: the passes that were open at the kill are in
the loaded trace as incomplete, around the nested passes that finished, with their time so far.

The killed program is a real TileLang lowering in a subprocess whose tir.StorageRewrite is
replaced by two Sequentials built in Python: test.Outer = [the real StorageRewrite,
test.Inner = [the real tl.Simplify, a pass that hangs]]. Ground truth is what the test built
and a normal traced lowering of the same kernel (which passes come before StorageRewrite).
"""

import base64
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

import lower_trace
from lower_trace.model import CRASHED_NESTED, KernelStatus, PassStatus

tilelang = pytest.importorskip("tilelang")

from tilelang import tvm  # noqa: E402

import kernels  # noqa: E402
from conftest import lower_trace_cli  # noqa: E402

CUDA = {"kind": "cuda", "arch": "sm_90a"}

SCRIPT = """\
import os, sys, time
sys.path.insert(0, {kernels_dir!r})
import tilelang, tilelang.transform, kernels
from tilelang import tvm

real_storage_rewrite, real_simplify = tilelang.transform.StorageRewrite, tilelang.transform.Simplify

@tvm.transform.module_pass(opt_level=0, name="test.Hang")
def hang(mod, ctx):
    open({signal!r}, "w").close()
    while True:  # until the test kills the process
        time.sleep(0.1)

def outer():
    inner = tvm.transform.Sequential([real_simplify(), hang], name="test.Inner")
    return tvm.transform.Sequential([real_storage_rewrite(), inner], name="test.Outer")

tilelang.transform.StorageRewrite = outer
target = tvm.target.Target({cuda!r})
with target:
    tilelang.lower(kernels.gemm(), target=target)
"""


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}


def manifest_records(trace_dir):
    records = []
    for root, _, files in os.walk(trace_dir):
        if "trace.jsonl" in files:
            with open(os.path.join(root, "trace.jsonl")) as handle:
                records += [json.loads(line) for line in handle if line.endswith("\n")]
    return records


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """(the killed run's folder, its trace, the seconds it ran, a normal trace of the same kernel)."""
    tmp = tmp_path_factory.mktemp("killed")
    with lower_trace.trace(mode="html", trace_dir=tmp / "normal") as run:
        target = tvm.target.Target(CUDA)
        with target:
            tilelang.lower(kernels.gemm(), target=target)
    normal = lower_trace.load_trace(run.run_dir)
    script, flag, trace_dir = tmp / "killed.py", tmp / "hanging", tmp / "trace"
    script.write_text(SCRIPT.format(kernels_dir=os.path.dirname(kernels.__file__), signal=str(flag), cuda=CUDA))
    env = {**clean_env(), "TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_DIR": str(trace_dir)}
    started = time.monotonic()
    with open(tmp / "stderr.txt", "w") as stderr:
        child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.DEVNULL, stderr=stderr, env=env, cwd=str(tmp))
    try:
        deadline = started + 240
        while not flag.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert flag.exists(), (tmp / "stderr.txt").read_text()[-2000:]
        # A hung pass runs a while before anyone kills it: give what was recorded time to reach the disk.
        until = time.monotonic() + 20
        while time.monotonic() < until and not any(r.get("name") == "tl.Simplify" and r.get("depth") == 2 for r in manifest_records(trace_dir)):
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    ran = time.monotonic() - started
    assert child.returncode == -signal.SIGKILL
    trace = lower_trace.load_trace(str(trace_dir))
    return trace.path, trace, ran, normal


def test_the_passes_open_at_the_kill_are_incomplete_around_their_nested_passes(killed):
    _, trace, ran, normal = killed
    (kernel,) = trace.kernels
    assert kernel.status is KernelStatus.RUNNING
    by_name = {p.name: p for p in kernel.passes}
    outer, inner, rewrite = (by_name[n] for n in ("test.Outer", "test.Inner", "tir.StorageRewrite"))
    (simplify,) = [p for p in kernel.passes if p.parent == inner.seq]
    assert simplify.name == "tl.Simplify"  # tilelang.transform.Simplify, as the script built it
    # Where the real pipeline ran StorageRewrite, and what ran before it.
    truth = next(p for p in normal.kernels[0].passes if p.name == "tir.StorageRewrite")
    before = [(p.seq, p.name, p.depth) for p in kernel.passes if p.seq < outer.seq]
    assert before == [(p.seq, p.name, p.depth) for p in normal.kernels[0].passes if p.seq < truth.seq]
    assert (outer.seq, outer.depth, outer.parent, outer.phase) == (truth.seq, 0, None, truth.phase)
    # The structure the script built, in the order it ran.
    assert [(p.seq, p.depth, p.parent) for p in (rewrite, inner, simplify)] == [
        (outer.seq + 1, 1, outer.seq), (outer.seq + 2, 1, outer.seq), (outer.seq + 3, 2, inner.seq)
    ]
    assert [p.seq for p in kernel.passes if p.seq > outer.seq] == [outer.seq + 1, outer.seq + 2, outer.seq + 3]
    assert rewrite.status in (PassStatus.CHANGED, PassStatus.UNCHANGED) and rewrite.status is truth.status
    assert simplify.status in (PassStatus.CHANGED, PassStatus.UNCHANGED)
    assert "test.Hang" not in by_name  # the pass that hung left no record (only replay writes one before each pass)
    # Open at the kill: the inner one is where the process died (in it or a pass nested in it).
    assert inner.status is PassStatus.INCOMPLETE and inner.error.type == "Crashed"
    assert inner.error.message == f"{CRASHED_NESTED}; the last nested pass recorded: {simplify.seq} tl.Simplify"
    assert not inner.crashed  # not known to be the pass that ran: nothing to reproduce
    assert outer.status is PassStatus.INCOMPLETE and outer.error.message == "did not finish: nested pass test.Inner crashed"
    # Time so far: at least its nested passes', no more than the process ran.
    assert inner.ms >= simplify.ms and outer.ms >= rewrite.ms + inner.ms - 0.002
    assert 0 < outer.ms < ran * 1000
    assert outer.before == truth.before  # it got what StorageRewrite gets in the real pipeline


def row_of(output, record):
    """A pass's line in `show` / `list --passes` output: its seq (right-aligned) first, then its name."""
    (line,) = re.findall(rf"^ *{record.seq} .* {re.escape(record.name)}  .*$", output, re.M)
    return line


def assert_nested(output, outer, inner, rewrite):
    """Each name indented two columns per depth: the nested passes under the pass they ran in."""
    column = {p.name: row_of(output, p).index(f" {p.name}") for p in (outer, inner, rewrite)}
    assert column[inner.name] == column[rewrite.name] == column[outer.name] + 2, output


def test_show_list_and_the_rebuilt_report_show_them(killed, tmp_path):
    path, trace, _, _ = killed
    passes = {p.name: p for p in trace.kernels[0].passes}
    outer, inner = passes["test.Outer"], passes["test.Inner"]
    rewrite = passes["tir.StorageRewrite"]
    show = subprocess.run([lower_trace_cli(), "show", path, "--color", "never"], capture_output=True, text=True, env=clean_env(), timeout=120)
    assert show.returncode == 0, show.stderr
    assert_nested(show.stdout, outer, inner, rewrite)
    for record in (outer, inner):
        assert re.search(rf"{record.name}  incomplete\s+{record.ms:.2f} ms so far$", row_of(show.stdout, record))
    assert "did not finish: nested pass test.Inner crashed" in show.stdout and CRASHED_NESTED in show.stdout
    listed = subprocess.run([lower_trace_cli(), "list", "--passes", path], capture_output=True, text=True, env=clean_env(), timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert_nested(listed.stdout, outer, inner, rewrite)
    for record in (outer, inner):
        assert row_of(listed.stdout, record).endswith(f"{record.name}  incomplete")
    out = tmp_path / "report.html"
    report = subprocess.run([lower_trace_cli(), "report", path, "-o", str(out)], capture_output=True, text=True, env=clean_env(), timeout=120)
    assert report.returncode == 0, report.stderr
    (payload,) = re.findall(r'<script type="application/octet-stream" class="lt-payload" id="lt-p\d+">(.*?)</script>', out.read_text(), re.S)
    steps = {s["seq"]: s for s in json.loads(gzip.decompress(base64.b64decode(payload)))["steps"]}
    for record in (outer, inner):
        step = steps[record.seq]
        assert (step["name"], step["status"], step.get("depth", 0), step.get("parent"), step["ms"]) == (
            record.name, "incomplete", record.depth, record.parent, record.ms
        )


def test_the_report_page_shows_them_under_their_parent(killed, browser, tmp_path):
    from report_fixtures import Page

    path, trace, _, _ = killed
    passes = {p.name: p for p in trace.kernels[0].passes}
    outer, inner = passes["test.Outer"], passes["test.Inner"]
    out = tmp_path / "report.html"
    assert subprocess.run([lower_trace_cli(), "report", path, "-o", str(out)], capture_output=True, env=clean_env(), timeout=120).returncode == 0
    view = Page(browser, str(out))
    try:
        row = view.page.locator(f"#passes .step[data-seq='{inner.seq}']")
        assert "incomplete" in row.get_attribute("class")
        assert row.locator(".ms").inner_text() == f"≥{inner.ms:.2f} ms"
        assert row.locator(".name").evaluate("e => e.style.paddingLeft") == "14px"
        row.click()
        meta = view.page.locator("#detail .meta").first.inner_text()
        assert f"nested (depth 1, in #{outer.seq})" in meta and f"{inner.ms:.2f} ms so far" in meta
        assert CRASHED_NESTED in view.page.locator("#detail .error .message").inner_text()
        assert not view.errors(), view.messages
    finally:
        view.close()
