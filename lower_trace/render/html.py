"""The HTML report: one self-contained, offline file per run.

Python builds plain data; the page (assets/report.html, .css, .js, inlined at
render time) builds itself from a JSON data block.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import threading
import urllib.parse
from importlib import resources
from typing import Any

from ..model import CodegenRecord, Trace, to_json
from ..store import load_trace


def _asset(name: str) -> str:
    return resources.files("lower_trace.render").joinpath("assets", name).read_text(encoding="utf-8")


def json_for_script(data: Any) -> str:
    """JSON that is inert inside a script element: no '</script>', '<!--', or raw U+2028/U+2029."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def report_data(trace: Trace) -> dict[str, Any]:
    """Everything the page shows, as plain JSON-ready data; each snapshot text once.

    No diff is computed here: the page diffs a pass when it shows it (and counts
    +/- lines for the kernel on screen), with one algorithm for counts and views.
    """
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
                keep(step.generated)
            else:
                keep(step.before)
                keep(step.after)
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


def pack_snapshots(snapshots: dict[str, str]) -> str:
    """Snapshots as base64 gzip JSON: IR text compresses about tenfold; the page inflates it."""
    raw = json.dumps(snapshots, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


_PLACEHOLDER = re.compile(r"/\*\{\{(\w+)\}\}\*/|\{\{(\w+)\}\}")


def fill(template: str, values: dict[str, str]) -> str:
    """Replace {{name}} and /*{{name}}*/ in one pass, so inserted text is never scanned again."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1) or m.group(2)], template)


def render(trace: Trace) -> str:
    data = report_data(trace)
    snapshots = data.pop("snapshots")
    title = f"lower-trace: {trace.run.script}"
    return fill(
        _asset("report.html"),
        {
            "title": title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"),
            "css": _asset("report.css"),
            "diff_js": _asset("diff.js"),
            "text_js": _asset("text.js"),
            "js": _asset("report.js"),
            "data": json_for_script(data),
            "snapshots": pack_snapshots(snapshots),
        },
    )


def write_report(run_dir: str, out_path: str | None = None, latest_link: str | None = None) -> str:
    """Render the run in run_dir to out_path (default run_dir/report.html); latest_link gets a pointer page."""
    trace = load_trace(run_dir)
    out_path = out_path or os.path.join(trace.path, "report.html")
    _write_atomically(out_path, render(trace))
    if latest_link:
        write_pointer(latest_link, out_path)
    return os.path.abspath(out_path)


def write_pointer(path: str, target: str) -> None:
    """A tiny page at path that opens target (the seed's {dir}/{script}/report.html = latest run)."""
    relative = os.path.relpath(target, os.path.dirname(os.path.abspath(path))).replace(os.sep, "/")
    href = urllib.parse.quote(relative)
    page = _asset("pointer.html").replace("{{href}}", href)
    _write_atomically(path, page)


def _write_atomically(path: str, text: str) -> None:
    """Write to a temporary file and rename it over path; never leave the temporary behind."""
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
