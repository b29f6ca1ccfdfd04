"""A regress result on disk: the sides' traces loaded back, judged (judge: every kernel compared,
--repeat's variation measured, the lines said of the run), and what a comparison leaves in its
output folder -- regress.json, summary.html (the page to show) and a comparison page for each
pair that is not identical. lower-trace regress and bisect --versions both write it.

A stored side (--compare) is a folder of traces: a regress side (OUT/base, OUT/head), or
TL_LOWER_TRACE_DIR of a run. A regress output folder (OUT, holding base/, head/ and regress.json)
given as a side stands for its head side: comparing two earlier regress runs means comparing
what each of them tested, their heads."""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lower_trace.regress.corpus import LOG
from lower_trace.regress.sides import SideError

if TYPE_CHECKING:
    from lower_trace.analysis.regress import KernelVerdict
    from lower_trace.analysis.variation import KnownVariation
    from lower_trace.model import Trace

RESULT = "regress.json"
REPEAT_NOTE = "the same side again (--repeat)"


def is_regress_output(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, RESULT)) and all(os.path.isdir(os.path.join(folder, side)) for side in ("base", "head"))


def stored_side(folder: str, option: str) -> tuple[str, str]:
    """(the folder of traces a --compare argument names, a note to say when it is not the folder
    itself); SideError when it names no side."""
    from lower_trace.store.layout import list_runs

    if not os.path.isdir(folder):
        raise SideError(f"{option} {folder}: no such folder; name a folder of traces (a regress side such as OUT/head, or TL_LOWER_TRACE_DIR of a run)")
    if is_regress_output(folder):
        head = os.path.join(folder, "head")
        return head, f"{option} {folder} is a regress output folder: comparing its head side, {head}"
    # A regress side whose corpus traced nothing still has its command log: a side, with no kernel.
    if list_runs(folder) or os.path.isfile(os.path.join(folder, LOG)):
        return folder, ""
    raise SideError(
        f"{option} {folder}: holds no trace (no run folder with a trace.jsonl in it or one or two levels down); "
        "name a regress side (OUT/base, OUT/head), a regress output folder, or TL_LOWER_TRACE_DIR of a run"
    )


def load_side(folder: str) -> list[Trace]:
    """Every run in a side's folder (a damaged one loads as far as it goes); none for no folder."""
    from lower_trace.store.layout import list_runs
    from lower_trace.store.reader import TraceDamaged, load_trace

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceDamaged)
        return [load_trace(run) for run in list_runs(folder)] if os.path.isdir(folder) else []


@dataclasses.dataclass
class Judged:
    """One regress run's outcome: every kernel's verdict, the lines said of it (a line per side, then
    the notes), regress.json's content, and what died (a side's process, a pytest-xdist worker)."""

    verdicts: list[KernelVerdict]
    lines: list[str]
    found: dict[str, Any]
    died: list[str]


def judge(
    folders: tuple[str, str], sides: list[dict[str, Any]], failed: Sequence[str], out: str,
    ignore: Sequence[str] = (), known: Sequence[KnownVariation] = (), repeat: bool = False, results_python: str = "",
) -> Judged:
    """The two sides' folders loaded and every kernel compared (analysis/regress.py); with repeat,
    what differs is run-to-run variation, written to out's variation.json. sides are as regress.json
    stores them (each gets its summary line); failed, a line for each side whose corpus failed;
    results_python: check each base launch on head, replays run by that interpreter (regress --run).
    SideError when no kernel was traced on either side."""
    from lower_trace.analysis.regress import regress, side_end

    lines = [side_line(side) for side in sides]
    base, head = _loaded(folders, failed)
    ends = (side_end(sides[0].get("exit")), side_end(sides[1].get("exit")))
    verdicts = regress(base, head, ignore=ignore, ends=ends, known=known)
    if repeat:  # one side twice: whatever differs varies on its own
        verdicts = _varied(verdicts, out, lines)
    if results_python:
        from lower_trace.regress.results import with_results

        verdicts, said = with_results(verdicts, results_python, out)
        lines.extend(said)
    died = _died(sides, ends)
    lines.extend(f"{what}: the side died, which fails the gate" for what in died)
    for side, line in zip(sides, lines, strict=False):  # the summary page says of the sides what the terminal says
        side["summary"] = line.split(": ", 1)[1]
    found = result_of(verdicts, sides[0], sides[1], out, ignore)
    found["notes"] = lines[len(sides) :]
    return Judged(verdicts, lines, found, died)


def _loaded(folders: tuple[str, str], failed: Sequence[str]) -> tuple[list[Trace], list[Trace]]:
    """Both sides' traces; SideError when neither traced a kernel (with the first side that failed)."""
    base, head = load_side(folders[0]), load_side(folders[1])
    if not any(t.kernels for t in base) and not any(t.kernels for t in head):
        why = f"; {failed[0]}" if failed else ""
        raise SideError(f"no kernel was traced on either side ({folders[0]}, {folders[1]}); does the corpus compile any with TileLang?{why}")
    return base, head


def _varied(verdicts: list[KernelVerdict], out: str, lines: list[str]) -> list[KernelVerdict]:
    """--repeat: every difference is run-to-run variation, measured and (with out) written to its
    variation.json, said in a line added to lines."""
    from lower_trace.analysis import variation
    from lower_trace.analysis.regress import with_variation

    known = variation.measured(verdicts)
    verdicts = with_variation(verdicts, known)
    if out:
        variation.write(os.path.join(out, variation.FILE), known)
        lines.append(f"variation: {len(known)} of {len(verdicts)} kernels differ between the two runs; give --variation {out} to a later regress")
    return verdicts


def _died(sides: list[dict[str, Any]], ends: tuple[str, str]) -> list[str]:
    died = [f"{side['label']}'s process {end}" for side, end in zip(sides, ends, strict=True) if end]
    # Under pytest-xdist a process that dies under a test is a worker: the side goes on, and says so.
    died.extend(f"{side['label']}'s worker died under {test}" for side in sides for test in side.get("crashed", ()))
    return died


def side_line(side: dict[str, Any]) -> str:
    """"base: PYTHON (TileLang 0.1.15), tl.x=true; exit 0, 4.7 s", or the folder of a stored side."""
    from lower_trace.analysis.regress import side_end

    if "python" not in side:
        return f"{side['label']}: {side['folder']}"
    configs = " ".join(f"{k}={json.dumps(v)}" for k, v in side["configs"].items())
    forced = f", {configs}" if configs else ""
    again = f", {REPEAT_NOTE}" if side.get("repeat") and side["label"] == "head" else ""
    ended = side_end(side["exit"])
    status = f"its process {ended}" if ended else f"exit {side['exit']}"
    return f"{side['label']}: {side['python']} (TileLang {side['tilelang']}){forced}{again}; {status}, {side['seconds']:.1f} s"


def result_of(verdicts: Sequence[KernelVerdict], base: dict[str, Any], head: dict[str, Any], out: str, ignore: Sequence[str] = ()) -> dict[str, Any]:
    """regress.json's content; with out, each pair that is not identical gets its comparison page there."""
    from lower_trace.render.regress_view import as_json, labels, slower_json

    pages = _compare_pages(verdicts, out) if out else {}
    named = labels(verdicts)  # what tells apart kernels of one origin and name, as the terminal says it
    kernels = [{**as_json(v, pages.get(id(v), "")), "label": named[id(v)]} for v in verdicts]
    return {"base": base, "head": head, "kernels": kernels, "slower_passes": slower_json(verdicts)}


def write_result(out: str, found: dict[str, Any]) -> str:
    """regress.json and summary.html (the page to show) in out; the page's path."""
    from lower_trace.render.report.regress_page import write_summary_page
    from lower_trace.store.files import write_atomically

    os.makedirs(out, exist_ok=True)
    write_atomically(os.path.join(out, RESULT), json.dumps(found, indent=1))
    return write_summary_page(os.path.join(out, "summary.html"), found)


def _compare_pages(verdicts: Sequence[KernelVerdict], out: str) -> dict[int, str]:
    """A comparison page for each pair that is not identical: the summary links to it."""
    from lower_trace.analysis.regress import IDENTICAL
    from lower_trace.render.report.compare_page import write_compare_page
    from lower_trace.store.paths import safe_component

    pages: dict[int, str] = {}
    folder = os.path.join(out, "compare")
    for number, verdict in enumerate(verdicts, start=1):
        if verdict.verdict == IDENTICAL or verdict.comparison is None or verdict.base is None or verdict.head is None:
            continue
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{number}-{safe_component(verdict.key.name, 'kernel')}.html")
        sides = (verdict.base.trace, verdict.base.kernel), (verdict.head.trace, verdict.head.kernel)
        pages[id(verdict)] = write_compare_page(path, verdict.comparison, *sides, verdict.cause)
    return pages
