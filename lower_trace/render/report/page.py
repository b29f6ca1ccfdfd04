"""The HTML report's parts: one self-contained, offline file per run.

Python builds plain data; the page (assets/report.html, .css, .js, inlined
when the file is started) builds itself from JSON blocks. The file is written
append-only by :class:`~lower_trace.render.report.writer.ReportWriter`: the
page head, then one block per kernel, then an end marker (see docs/report.md).
This module holds what the page is made of and writes nothing; from_trace.py
rebuilds a report from a stored trace through the same writer.
"""

from __future__ import annotations

import functools
import json
import os
import re
import urllib.parse
from collections.abc import Callable
from functools import lru_cache
from importlib import resources
from typing import Any

from lower_trace.analysis.configs import config_value_text, typed_configs
from lower_trace.analysis.device.sass import ListingLine, shown_rows
from lower_trace.analysis.device.summary import cuda_lines, listing_of
from lower_trace.analysis.timing import BETWEEN, StepTime, ir_lines, kernel_totals
from lower_trace.device_model import DeviceSummary
from lower_trace.model import CodegenRecord, EditStatus, KernelState, KernelTrace, RunInfo
from lower_trace.model_json import to_json
from lower_trace.render.device_text import occupancy_text, resources_line
from lower_trace.render.report.bundle import bundle
from lower_trace.text_safety import UNSAFE_RANGES

PAGE_FORMAT = 2  # 1: one data block + one snapshot pack; 2: append-only kernel blocks

# What each edit status means, for the page. Keyed by model.EditStatus so that a
# status added there without a text here fails loudly (page_rules), not silently.
EDIT_TEXT = {
    EditStatus.SYNCED: "the working copy matches the generated source",
    EditStatus.PATCHED: "your edit of the working copy was compiled instead of the generated source",
    EditStatus.REGENERATED: "codegen changed; the working copy was refreshed",
    EditStatus.CONFLICT: "codegen changed and the working copy was edited: the new codegen was compiled, your edit was saved aside",
}
# Statuses that mean "the working copy differs from what codegen made": badged, and "edited" in the index.
EDIT_BADGED = (EditStatus.PATCHED, EditStatus.REGENERATED, EditStatus.CONFLICT)


@functools.cache
def asset(name: str) -> str:
    return resources.files("lower_trace.render.report").joinpath("assets").joinpath(name).read_text(encoding="utf-8")


@functools.cache
def page_script(*entries: str) -> str:
    """A page's JS, one script element: the entry modules (assets/*.js) and every module they
    import, bundled in their imports' order (bundle.py); the entries' exports are the page's globals."""
    return block(f"\n{bundle(entries, asset)}\n")


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


def escape_text(text: str) -> str:
    """Text for an HTML text node (the title)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_PLACEHOLDER = re.compile(r"/\*\{\{(\w+)\}\}\*/|\{\{(\w+)\}\}")


def fill(template: str, values: dict[str, str]) -> str:
    """Replace {{name}} and /*{{name}}*/ in one pass, so inserted text is never scanned again."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1) or m.group(2)], template)


# --- rules the page shares with Python ------------------------------------------


@lru_cache(maxsize=1)
def unsafe_class() -> str:
    """The terminal's unsafe-character set (text_safety.UNSAFE_RANGES) as a character class for a
    JS regex with the `u` flag (code points, so a lone surrogate is one and a pair is not), for
    the page: it marks what the terminal escapes in a line of IR -- all but the tab, which is
    layout there, and the line feed, which the page shows as a line break.
    """
    parts = []
    for first, last in UNSAFE_RANGES:
        pieces = [(first, last)] if not first <= 0x0A <= last else [(first, 0x08), (0x0B, last)]  # tab, line feed
        parts.extend(f"\\u{{{a:x}}}" if a == b else f"\\u{{{a:x}}}-\\u{{{b:x}}}" for a, b in pieces if a <= b)
    return "[" + "".join(parts) + "]"


def page_rules() -> dict[str, Any]:
    """Rules that exist in Python and in the page, injected so there is one source."""
    return {
        "unsafe": unsafe_class(),
        "between": BETWEEN,  # what the compile time outside the steps is (the timing views)
        "edit": {status.value: {"text": EDIT_TEXT[status], "badge": status in EDIT_BADGED} for status in EditStatus},
        "state": {state.name: state.value for state in KernelState},  # what became of a compile, in the views' words
    }


# --- the blocks of the page -----------------------------------------------------------


def block(body: str, kind: str = "", cls: str = "", ident: str = "") -> str:
    """One script element of the page (assets/block.html): JS when kind is empty, else
    an inert data block of that type. body must already be safe for a script element."""
    attrs = "".join(f' {name}="{value}"' for name, value in (("type", kind), ("class", cls), ("id", ident)) if value)
    return fill(asset("block.html"), {"attrs": attrs, "body": body})


def page_head(run: RunInfo, notes: list[str] | tuple[str, ...] = ()) -> str:
    """The start of the file: markup, styles, scripts and the run header (a JSON block)."""
    header = to_json(run)
    header["notes"] = [*run.notes, *notes]
    data = {"format": PAGE_FORMAT, "run": header, "rules": page_rules()}
    return fill(
        asset("report.html"),
        {
            "title": escape_text(f"lower-trace: {run.title or run.script}"),
            "css": asset("report.css"),
            "data": json_for_script(data),
            "scripts": page_script("report.js"),
        },
    )


def snapshot_digests(kernel: KernelTrace) -> list[str]:
    """Every snapshot the kernel's records name, each once, in step order."""
    seen: dict[str, None] = {}
    for step in kernel.steps:
        names = (step.tir, step.source, step.generated) if isinstance(step, CodegenRecord) else (step.before, step.after)
        for digest in names:
            if digest:
                seen[digest] = None
    record = kernel.device_stage
    for digest in (record.source, record.ptx, record.sass) if record is not None else ():
        if digest:
            seen[digest] = None
    return list(seen)


def kernel_steps(times: list[StepTime], text_of: Callable[[str], str]) -> list[dict[str, Any]]:
    """The steps as the page reads them (times: analysis.timing.kernel_timing of the kernel): the
    records, with self time, place on the time line and the IR lines after each (absent: none) --
    the page's chart draws these numbers."""
    steps = []
    for time in times:
        item = to_json(time.step)
        item["kind"] = "codegen" if isinstance(time.step, CodegenRecord) else "pass"
        item["self"] = time.self_ms
        item["at"] = time.at
        lines = ir_lines(time.step, lambda digest: text_of(digest) or "")
        if lines is not None:
            item["lines"] = lines
        steps.append(item)
    return steps


SUMMARY_MESSAGE = 300  # characters of a compile error's message kept in the index summary


def kernel_summary(kernel: KernelTrace, block: int, refs: list[int], times: list[StepTime], device: DeviceSummary | None = None) -> dict[str, Any]:
    """What the index shows of a kernel, read for every kernel when the page opens: kept small."""
    error = None
    if kernel.error is not None:
        error = {"type": kernel.error.type, "message": kernel.error.message[:SUMMARY_MESSAGE]}
    edits = sorted({c.edit_status.value for c in kernel.codegen if c.edit_status is not None})
    return {
        "variant": kernel.working_copy,
        "id": kernel.kernel_id,
        "name": kernel.name,
        "target": kernel.target,
        "entry": kernel.entry,
        "status": kernel.status.value,
        "ms": kernel.ms,
        "passes": len(kernel.passes),
        "changed": kernel.changed_count,
        "failed": kernel.failed_count,
        "steps": len(kernel.passes) + len(kernel.codegen),
        "error": error,
        "edits": edits,
        # Each pass config's value as a comparison says it: the page's "compare with…" lists the ones two kernels differ in.
        "configs": {key: config_value_text(value) for key, value in typed_configs(kernel).items()},
        # Per step name [calls, self ms, slowest self ms, its seq]: the run's timing table, without inflating payloads.
        "timing": kernel_totals(times),
        "block": block,
        "refs": refs,
        "stack": [list(frame) for frame in kernel.stack],  # the user's frames that started the compile
        "device": device_index(device),
        "launches": None,  # they come after the compile: a block of their own fills it in (writer.add_launches)
    }


def launches_index(kernel: KernelTrace, run_path: str) -> dict[str, Any]:
    """A kernel's recorded launches as the page shows them: a row per launch (its arguments, what it wrote
    and returned, kept or not), and the command that writes a launch as a repro, where one can."""
    rows = []
    for launch in kernel.launches:
        written = {v.name: v for v in launch.after}
        args = [_launch_value(v, written.get(v.name)) for v in launch.args]
        returned = [_launch_value(v) for v in launch.after if v.name.startswith("return")]
        tensors = [v for v in launch.args if v.kind == "tensor"]
        rows.append({
            "n": launch.n, "ms": launch.ms, "site": launch.site, "args": args, "returned": returned,
            "error": f"{launch.error.type}: {launch.error.message.strip().splitlines()[0] if launch.error.message.strip() else ''}" if launch.error else "",
            "kept": bool(tensors) and all(v.data for v in tensors),
        })
    rebuild = "" if kernel.rebuild is not None and kernel.rebuild.factory else " --rebuild generated"
    first = next((row["n"] for row in rows if row["kept"]), None)
    repro = f"lower-trace repro {run_path} --launch {kernel.kernel_id}:{first}{rebuild} -o repro-{kernel.kernel_id}-{first}" if first is not None else ""
    return {"rows": rows, "repro": repro}


def _launch_value(value: Any, after: Any = None) -> dict[str, Any]:
    """One argument (or returned tensor): name, what it is (float32[64,32] cpu, or = 2.5), kept, written."""
    if value.kind != "tensor":
        return {"name": value.name, "text": f"= {value.value}", "kept": False, "written": False, "note": value.note}
    text = f"{value.dtype}[{','.join(map(str, value.shape))}] {value.device}"
    return {
        "name": value.name, "text": text, "kept": bool(value.data), "note": value.note,
        "written": after is not None and bool(after.digest) and after.digest != value.digest,
    }


def device_index(summary: DeviceSummary | None) -> dict[str, Any] | None:
    """The index's device columns: registers, spills, shared memory, occupancy (None: no device stage)."""
    if summary is None or summary.resources is None:
        return None
    resources, launch, occupied = summary.resources, summary.launch, summary.occupancy
    return {
        "registers": resources.registers,
        "spill_stores": resources.spill_stores,
        "spill_loads": resources.spill_loads,
        "shared": resources.shared_static + (launch.dynamic_shared if launch else 0),
        "occupancy": occupancy_text(summary),
        "warps": occupied.warps_per_sm if occupied else None,
    }


def device_payload(summary: DeviceSummary, text_of: Callable[[str], str]) -> dict[str, Any]:
    """What the device stage's view shows: its line, the listings, each PTX line's CUDA line and
    the SASS pane's rows (sass_rows)."""
    record = summary.record
    return {
        "seq": record.seq,
        "arch": record.arch,
        "how": record.how,
        "edited": record.edited,
        "command": " ".join(record.command),
        "line": resources_line(summary),
        "counts": [list(item) for item in summary.counts],
        "source": record.source,
        "ptx": record.ptx,
        "sass": record.sass,
        "source_name": record.source_name,
        "cuda": {"ptx": cuda_lines(text_of, record, "ptx")} if record.ptx else {},
        "sass_rows": sass_rows(listing_of(text_of, record, "sass")) if record.sass else [],
        "error": record.error,
    }


def sass_rows(lines: list[ListingLine]) -> list[list[int]]:
    """The SASS pane's rows, its instructions and labels (not nvdisasm's line records): per row
    [its index in the listing, its CUDA line (0: none), nvcc's line where attribution.py moved
    the instruction off it (0: not moved)]. The index names the row's origin in the source map."""
    return [[index, item.line, item.nvcc_line] for index, item in shown_rows(lines)]


# --- the pointer page ------------------------------------------------------------------


def pointer_page(path: str, target: str) -> str:
    """A tiny page, to be written at path, that opens target (the seed's {dir}/{script}/report.html = latest run)."""
    relative = os.path.relpath(target, os.path.dirname(os.path.abspath(path))).replace(os.sep, "/")
    return asset("pointer.html").replace("{{href}}", urllib.parse.quote(relative))
