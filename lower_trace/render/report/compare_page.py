"""The comparison page (``lower-trace diff --html FILE``): one offline file in the report's style.

Python compares (analysis/compare.py) and writes what the page shows: the aligned rows, the
first divergence, and each snapshot as it was compared (normalised), once per side, packed like
a report block. The page (assets/compare.html, compare_page.js) builds the view the run report
uses for its own "compare with…" (assets/compare_view.js) from that data.
"""

from __future__ import annotations

import os
from typing import Any

from lower_trace.analysis.compare import Comparison, compiled
from lower_trace.analysis.regress_cause import RegressCause
from lower_trace.model import KernelTrace, PassRecord, Trace
from lower_trace.model_json import to_json
from lower_trace.render.compare_view import config_text, renaming_text
from lower_trace.render.regress_cause_view import page_data
from lower_trace.render.report.page import asset, block, escape_text, fill, json_for_script, page_rules, page_script
from lower_trace.render.report.writer import pack
from lower_trace.store.files import write_atomically


def side_label(trace: Trace, kernel: KernelTrace) -> str:
    versions = " · ".join(f"{name} {version}" for name, version in trace.run.versions.items())
    parts = [f"{trace.path} : {kernel.kernel_id} {kernel.name}", kernel.target or "", f"{len(kernel.passes)} passes", versions]
    return " · ".join(part for part in parts if part)


def comparison_data(result: Comparison, a: KernelTrace, b: KernelTrace) -> dict[str, Any]:
    """What the page needs: rows with their passes, and the texts they name, as compared."""
    texts: list[dict[str, str]] = [{}, {}]

    def ref(record: PassRecord | None, side: int) -> dict[str, Any] | None:
        if record is None:
            return None
        for digest in (record.before, record.after):
            if digest and digest not in texts[side]:
                texts[side][digest] = result.text(side, digest)
        return {**to_json(record), "kind": "pass"}

    rows = [
        {"a": ref(row.a, 0), "b": ref(row.b, 1), "same_input": row.same_input, "same_output": row.same_output}
        for row in result.rows
    ]
    divergence = result.divergence
    return {
        "rows": rows,
        "divergence": None if divergence is None else {"kind": divergence.kind, "row": divergence.row},
        "same_source": result.same_source,
        "identical": result.identical,
        "equivalent": result.equivalent,
        "renamed": renaming_text(result.renamed) if result.renamed else "",
        "configs": config_text(a, b),
        "sources": _paired_sources(result, a, b),
        "texts": texts,
        "a": {"id": a.kernel_id, "name": a.name, "target": a.target, "passes": len(a.passes)},
        "b": {"id": b.kernel_id, "name": b.name, "target": b.target, "passes": len(b.passes)},
    }


def _paired_sources(result: Comparison, a: KernelTrace, b: KernelTrace) -> list[list[Any]]:
    """[role, A's source, B's source] by role, device first (the last of each role; None where a side has none)."""
    last: list[dict[str, str]] = [{}, {}]
    for side, kernel in enumerate((a, b)):
        for step in sorted(kernel.codegen, key=lambda s: s.seq):
            last[side][step.role] = result.text(side, compiled(step))
    roles = sorted({*last[0], *last[1]}, key=lambda role: (role != "device", role))
    return [[role, last[0].get(role), last[1].get(role)] for role in roles]


def write_compare_page(path: str, result: Comparison, a: tuple[Trace, KernelTrace], b: tuple[Trace, KernelTrace], cause: RegressCause | None = None) -> str:
    """Write the page to path (atomically); returns its absolute path. With regress's cause, the page
    lists each differing line of the final code with the pass that wrote it on its side (a link to
    that pass's aligned row)."""
    path = os.path.abspath(path)
    header = {"rules": page_rules(), "labels": [side_label(*a), side_label(*b)], "cause": page_data(cause, result)}
    page = fill(
        asset("compare.html"),
        {
            "title": escape_text(f"lower-trace diff: {a[1].name} / {b[1].name}"),
            "css": asset("report.css") + "\n" + asset("compare_cause.css"),
            "data": json_for_script(header),
            "payload": block(pack(comparison_data(result, a[1], b[1])), "application/octet-stream", "lt-payload", "lt-p0"),
            "scripts": page_script("compare_page.js", "compare_cause.js"),  # the view, then regress's cause below it
        },
    )
    write_atomically(path, page)
    return path
