"""The HTML report: one self-contained, offline file per run.

Python builds plain data; the page (assets/report.html, .css, .js, inlined at
render time) builds itself from a ``<script type="application/json">`` block.
"""

from __future__ import annotations

import json
import os
import shutil
from importlib import resources
from typing import Any

from .. import diff
from ..model import CodegenRecord, PassStatus, Trace, to_json
from ..store import load_trace


def _asset(name: str) -> str:
    return resources.files("lower_trace.render").joinpath("assets", name).read_text(encoding="utf-8")


def json_for_script(data: Any) -> str:
    """JSON that is inert inside <script>: no '</script>', '<!--', or raw U+2028/U+2029."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def report_data(trace: Trace) -> dict[str, Any]:
    """Everything the page shows, as plain JSON-ready data; each snapshot text once."""
    snapshots: dict[str, str] = {}

    def keep(digest: str) -> str:
        if digest and digest not in snapshots:
            snapshots[digest] = trace.snapshot(digest)
        return digest

    kernels = []
    for kernel in trace.kernels:
        steps = []
        for step in kernel.steps:
            item = to_json(step)
            item["kind"] = "codegen" if isinstance(step, CodegenRecord) else "pass"
            if isinstance(step, CodegenRecord):
                keep(step.tir)
                keep(step.source)
            else:
                keep(step.before)
                keep(step.after)
                if step.status is PassStatus.CHANGED:
                    s = diff.stats(trace.snapshot(step.before), trace.snapshot(step.after))
                    item["added"], item["removed"] = s.added, s.removed
            steps.append(item)
        kernels.append(
            {
                "id": kernel.kernel_id,
                "name": kernel.name,
                "target": kernel.target,
                "entry": kernel.entry,
                "status": kernel.status.value,
                "ms": kernel.ms,
                "passes": len(kernel.passes),
                "changed": kernel.changed_count,
                "failed": kernel.failed_count,
                "error": to_json(kernel.error) if kernel.error else None,
                "steps": steps,
            }
        )
    return {"run": to_json(trace.run), "kernels": kernels, "snapshots": snapshots}


def render(trace: Trace) -> str:
    page = _asset("report.html")
    title = f"lower-trace: {trace.run.script}"
    return (
        page.replace("{{title}}", title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
        .replace("/*{{css}}*/", _asset("report.css"))
        .replace("/*{{js}}*/", _asset("report.js"))
        .replace("{{data}}", json_for_script(report_data(trace)))
    )


def write_report(run_dir: str, out_path: str | None = None, latest_link: str | None = None) -> str:
    """Render the run in run_dir to out_path (default run_dir/report.html); optionally copy it to latest_link."""
    trace = load_trace(run_dir)
    out_path = out_path or os.path.join(trace.path, "report.html")
    tmp = f"{out_path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(render(trace))
    os.replace(tmp, out_path)
    if latest_link:
        shutil.copyfile(out_path, latest_link + ".tmp")
        os.replace(latest_link + ".tmp", latest_link)
    return os.path.abspath(out_path)
