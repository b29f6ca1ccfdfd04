"""The summary page of ``lower-trace regress`` (DIR/summary.html): one offline file in the report's style.

Python reduces regress.json (cli/regress_command.py builds it, render/regress_view.py's as_json
writes each kernel) to the rows the page shows; the page (assets/regress.html, regress.js) builds
a table from them that sorts by any column and filters by verdict and by name. Links to the
comparison pages are relative to the summary's folder, so the folder can be moved or zipped whole.
"""

from __future__ import annotations

import os
import urllib.parse
from collections import Counter
from typing import Any

from lower_trace.analysis.verdicts import DEVICE_VERDICTS, Verdict
from lower_trace.render.regress_cause_view import WHY
from lower_trace.render.report.page import asset, escape_text, fill, json_for_script, page_script
from lower_trace.store.files import write_atomically

# How each verdict is coloured: a side got worse, a change for the better or a new kernel, nothing
# changed; any other verdict (the code differs) is a warning.
BAD = (Verdict.RESULTS_DIFFER, Verdict.BROKEN, Verdict.DIED_HEAD, Verdict.DIED_BASE, Verdict.MISSING, Verdict.BOTH_FAIL, *DEVICE_VERDICTS)
INFO = (Verdict.FIXED, Verdict.RENAMED, Verdict.NEW, Verdict.VARIES, Verdict.EQUIVALENT)
SPILLS = ("spill_stores", "spill_loads")
CAUSES_SHOWN = 3  # the writers of differing lines a row lists (the comparison page has them all)


def tone(verdict: str) -> str:
    return "ok" if verdict == Verdict.IDENTICAL else "bad" if verdict in BAD else "info" if verdict in INFO else "warn"


def _href(target: str, folder: str) -> str:
    """A link from the summary's folder to target (a path on this machine): relative, URL-quoted."""
    if not target:
        return ""
    relative = os.path.relpath(os.path.abspath(target), folder)
    return urllib.parse.quote(relative.replace(os.sep, "/"), safe="/")


def _pair(device: dict[str, Any], names: tuple[str, ...]) -> list[Any] | None:
    """[base, head] summed over the device numbers named (those that changed), or None where none did."""
    found = [device[name] for name in names if name in device]
    if not found or not all(isinstance(v, int) for pair in found for v in pair):
        return None
    return [sum(pair[0] for pair in found), sum(pair[1] for pair in found)]


def _cause(cause: dict[str, Any] | None, href: str) -> list[dict[str, Any]]:
    """The writers of the differing lines as the evidence cell lists them: the phrase, the pass's
    name (shown apart), and a link to its row on the comparison page."""
    if not cause:
        return []
    return [
        {"pass": p["pass"], "text": p["text"], "href": f"{href}#{p['row']}" if href and p.get("row") is not None else ""}
        for p in cause.get("passes", [])[:CAUSES_SHOWN]
    ]


def _apart(kernel: dict[str, Any]) -> str:
    """The part of the signature that tells this kernel from others of its origin and name ("" when none must)."""
    label = str(kernel.get("label", ""))
    return label[label.index(" [") + 2 : -1] if label.endswith("]") and " [" in label else ""


def _side_ms(side: dict[str, Any] | None) -> float | None:
    """The compile's time; none for a compile that never ended (its side died during it)."""
    return None if side is None or side.get("ms") is None or side.get("status") == "running" else float(side["ms"])


def summary_rows(found: dict[str, Any], folder: str) -> list[dict[str, Any]]:
    """One row per kernel, as the table shows it, in regress.json's order (most severe first)."""
    rows = []
    for number, kernel in enumerate(found.get("kernels", [])):
        device = kernel.get("device") or {}
        base, head = kernel.get("base"), kernel.get("head")
        rows.append({
            "n": number,
            "verdict": kernel["verdict"],
            "severity": kernel["severity"],
            "tone": tone(kernel["verdict"]),
            "reasons": kernel.get("reasons", []),
            "origin": kernel.get("origin", ""),
            "kernel": kernel.get("kernel", ""),
            "occurrence": kernel.get("occurrence", 1),
            "apart": _apart(kernel),
            "signature": kernel.get("signature", ""),
            "evidence": [fact for fact in kernel.get("evidence", []) if not fact.startswith(WHY)],
            "cause": _cause(kernel.get("cause"), _href(kernel.get("compare_page", ""), folder)),
            "registers": _pair(device, ("registers",)),
            "spills": _pair(device, SPILLS),
            "base_ms": _side_ms(base),
            "head_ms": _side_ms(head),
            "base_status": None if base is None else base.get("status"),
            "head_status": None if head is None else head.get("status"),
            "href": _href(kernel.get("compare_page", ""), folder),
        })  # fmt: skip
    return rows


def _side(side: dict[str, Any], folder: str) -> dict[str, Any]:
    """A side as the header shows it: how it ran, or the stored folder it was read from."""
    out = {key: side[key] for key in ("label", "folder", "python", "tilelang", "configs", "exit", "seconds", "summary") if key in side}
    out["folder_href"] = _href(side.get("folder", ""), folder)
    out["log_href"] = _href(side.get("log", ""), folder) if side.get("log") else ""
    return out


def summary_data(found: dict[str, Any], folder: str) -> dict[str, Any]:
    rows = summary_rows(found, folder)
    counts = Counter(row["verdict"] for row in rows)
    severity = {row["verdict"]: row["severity"] for row in rows}
    tones = {row["verdict"]: row["tone"] for row in rows}
    return {
        "sides": [_side(found["base"], folder), _side(found["head"], folder)],
        "notes": list(found.get("notes", [])),
        "counts": [[verdict, counts[verdict], tones[verdict]] for verdict in sorted(counts, key=lambda v: (severity[v], v))],
        "rows": rows,
    }


def write_summary_page(path: str, found: dict[str, Any]) -> str:
    """Write the summary of a regress result (regress.json's content) to path, atomically; returns its absolute path."""
    path = os.path.abspath(path)
    data = summary_data(found, os.path.dirname(path))
    differ = sum(count for verdict, count, _ in data["counts"] if verdict != Verdict.IDENTICAL)
    page = fill(
        asset("regress.html"),
        {
            "title": escape_text(f"lower-trace regress: {len(data['rows'])} kernels, {differ} not identical"),
            "css": asset("report.css") + "\n" + asset("regress.css"),
            "data": json_for_script(data),
            "scripts": page_script("regress.js"),
        },
    )
    write_atomically(path, page)
    return path
