"""What regress says about why the code differs (analysis/regress_cause.py): a phrase per pass for
the terminal, --markdown and the summary page, its JSON for --json, and the data the comparison
page shows (each differing line with the aligned row of the pass that wrote it, on each side)."""

from __future__ import annotations

import collections
from typing import Any

from lower_trace.analysis.compare import Comparison
from lower_trace.analysis.regress_cause import CODEGEN, FRONTEND, DifferingLine, PassCause, RegressCause
from lower_trace.model import PassRecord
from lower_trace.text_safety import plural

WHY = "why: "  # how the evidence's phrases of the cause start (the summary page lists them apart)
SHOWN = 2  # passes named in the terminal's and markdown's evidence (the rest: --json, the pages)
PAGE_LINES = 200  # differing lines per side and pass the comparison page lists


def phrase(cause: PassCause) -> str:
    """One pass's share: "tl.LowerTileOp wrote 63 of head's differing lines; on base it ran too and
    wrote 8 instead; its input already differed there: lines from tl.Simplify (17), …"."""
    counts = (len(cause.base), len(cause.head))
    if cause.name == CODEGEN:
        return f"codegen wrote {_sides(counts)} (no TIR line made them)"
    if cause.name == FRONTEND:
        return f"the frontend wrote {_sides(counts)} (there before any pass)"
    main, other = (1, 0) if counts[1] >= counts[0] else (0, 1)
    labels = ("base", "head")
    ran = (cause.base_runs, cause.head_runs)
    out = f"{cause.name} wrote {plural(counts[main], 'differing line')} on {labels[main]}"
    if not ran[other]:
        out += f"; it did not run on {labels[other]}"
    elif counts[other]:
        out += f"; on {labels[other]} it ran too and wrote {counts[other]} instead"
    else:
        out += f"; on {labels[other]} it ran too and wrote none of its differing lines"
    if cause.input_differs is False:
        out += "; the lines it transformed were the same on both sides (the pass itself differs)"
    elif cause.upstream:
        out += "; its input already differed there, from " + ", ".join(f"{u.name} ({u.lines})" for u in cause.upstream)
    return out


def _sides(counts: tuple[int, int]) -> str:
    return f"{plural(counts[0] + counts[1], 'differing line')} (base {counts[0]}, head {counts[1]})"


def phrases(cause: RegressCause | None, limit: int = SHOWN) -> list[str]:
    """The leading passes' phrases, most differing lines first, with a count of the others."""
    if cause is None or not cause.passes:
        return []
    out = [f"{WHY}{phrase(p)}" for p in cause.passes[:limit]]
    rest = cause.passes[limit:]
    if rest:
        names = ", ".join(p.name for p in rest[:4]) + (", …" if len(rest) > 4 else "")
        out.append(f"{WHY}{plural(len(rest), 'other writer')} of {sum(p.lines for p in rest)} lines ({names})")
    return out


def _record(record: PassRecord) -> dict[str, Any]:
    return {"seq": record.seq, "pass": record.name}


def _line(line: DifferingLine) -> dict[str, Any]:
    return {"where": line.where, "line": line.line, "text": line.text, "by": None if line.by is None else _record(line.by)}


def rows_of(result: Comparison | None) -> dict[tuple[int, int], int]:
    """{(side, pass seq): its row in the comparison's alignment} (the comparison page's #N)."""
    found: dict[tuple[int, int], int] = {}
    for index, row in enumerate(result.rows if result is not None else ()):
        for side, record in ((0, row.a), (1, row.b)):
            if record is not None:
                found[(side, record.seq)] = index
    return found


def cause_json(cause: RegressCause | None, result: Comparison | None = None) -> dict[str, Any] | None:
    """--json's "cause": every writer of a differing line, most lines first; "row": the aligned row
    of the run that wrote most of them (head's, else base's) on the comparison page."""
    if cause is None:
        return None
    row_of = rows_of(result)

    def row(p: PassCause) -> int | None:
        for k in (1, 0):
            writers = collections.Counter(line.by.seq for line in (p.head if k else p.base) if line.by is not None)
            if writers:
                return row_of.get((k, writers.most_common(1)[0][0]))
        return None

    return {
        "base_lines": cause.base_lines,
        "head_lines": cause.head_lines,
        "where": list(cause.wheres),
        "passes": [
            {
                "pass": p.name,
                "lines": p.lines,
                "text": phrase(p),
                "row": row(p),
                "input_differs": p.input_differs,
                "upstream": [{"pass": u.name, "base": u.base, "head": u.head} for u in p.upstream],
                **{
                    label: {"ran": [_record(r) for r in runs], "wrote": [_record(r) for r in p.writers(k)], "lines": [_line(line) for line in lines]}
                    for k, (label, runs, lines) in enumerate((("base", p.base_runs, p.base), ("head", p.head_runs, p.head)))
                },
            }
            for p in cause.passes
        ],
    }


def page_data(cause: RegressCause | None, result: Comparison) -> dict[str, Any] | None:
    """The comparison page's "why the code differs": per pass, its phrase, the aligned rows of its
    runs that wrote differing lines, and each such line with the row to open on its side."""
    if cause is None:
        return None
    row_of = rows_of(result)
    groups = []
    for p in cause.passes:
        sides = []
        for k, lines in enumerate((p.base, p.head)):
            sides.append({
                "lines": [
                    {"where": line.where, "line": line.line, "text": line.text, "pass": None if line.by is None else f"{line.by.seq} {line.by.name}",
                     "row": None if line.by is None else row_of.get((k, line.by.seq))}
                    for line in lines[:PAGE_LINES]
                ],
                "more": max(0, len(lines) - PAGE_LINES),
                "rows": [[f"{r.seq} {r.name}", row_of.get((k, r.seq))] for r in p.writers(k)],
            })  # fmt: skip
        groups.append({"pass": p.name, "text": phrase(p), "base": sides[0], "head": sides[1]})
    return {"base_lines": cause.base_lines, "head_lines": cause.head_lines, "where": list(cause.wheres), "passes": groups}
