"""What ``where``, ``blame --source`` and ``show --ir --origins`` print, and their JSON."""

from __future__ import annotations

import os
from typing import Any, TextIO

from lower_trace.analysis.origins import KernelOrigins, LineEvent, Origin, Origins
from lower_trace.analysis.text_diff import split_lines
from lower_trace.model import KernelTrace, PassRecord
from lower_trace.text_safety import plural


def origin_text(origin: Origin | None, width: int = 0) -> str:
    """``kernels.py:29`` (``kernels.py:31 (via gemm_macro.py:839)`` for TileLang's own code), padded."""
    if origin is None:
        return "".ljust(width)
    text = f"{os.path.basename(origin.file)}:{origin.line}" + ("" if origin.certain else "?")  # ?: inferred, not read off the IR
    if origin.library is not None:
        text += f" (via {os.path.basename(origin.library[0])}:{origin.library[1]})"
    return text.ljust(width)


def origin_json(origin: Origin | None) -> dict[str, Any] | None:
    if origin is None:
        return None
    out: dict[str, Any] = {"file": origin.file, "line": origin.line, "how": origin.how, "certain": origin.certain}
    if origin.columns is not None:
        out["columns"] = list(origin.columns)
    if origin.library is not None:
        out["library"] = {"file": origin.library[0], "line": origin.library[1]}
    return out


def write_with_origins(out: TextIO, text: str, origins: Origins, owners: list[PassRecord | None] | None = None) -> None:
    """Each line with its origin (and the pass that made it) in columns before it."""
    lines = split_lines(text)
    width = max((len(origin_text(o)) for o in origins), default=0)
    made_by = [f"{o.seq:>4} {o.name}" if o is not None else "   - (input)" for o in owners] if owners is not None else []
    made_width = max((len(m) for m in made_by), default=0)  # pass names whole: tl.MergeSharedMemoryAllocations
    for i, line in enumerate(lines):
        origin = origins[i] if i < len(origins) else None
        if owners is not None:
            made = made_by[i] if i < len(made_by) else "   - (input)"
            out.write(f"{made:<{made_width}} {origin_text(origin, width)} | {line}\n")
        else:
            out.write(f"{origin_text(origin, width)} | {line}\n")


Found = list[tuple[int, str, Origin]]  # (1-based line, text, how it is known to come from the line)


Helper = tuple[str, list[int]]  # a helper function the asked line is in, and the lines that call it


def write_where(
    out: TextIO, kernel: KernelTrace, file: str, line: int, final: Found, sources: list[tuple[str, Found]], events: list[LineEvent],
    helper: Helper = ("", []), called: Helper = ("", []),
) -> None:  # fmt: skip
    where = f"{os.path.basename(file)}:{line}"
    out.write(f"{where} in kernel {kernel.kernel_id} ({kernel.name}):\n")
    label = "the IR the failed pass received" if kernel.failed_count else "final TIR"  # a failed compile has no final TIR
    out.write(f"  {label}: {_counted(final)}\n")
    for number, text, origin in final:
        out.write(f"    {number:>5}{_mark(origin)}| {text.strip()}\n")
    for role, found in sources:
        out.write(f"  generated source ({role}): {_counted(found)}\n")
        for number, text, origin in found:
            out.write(f"    {number:>5}{_mark(origin)}| {text.strip()}\n")
    name, calls = helper
    if name:
        at = ", ".join(f"{os.path.basename(file)}:{n}" for n in calls)
        out.write(f"  it is inside {name}(), whose code TileLang attributes to where the kernel calls it: {at} (lower-trace where {at.split(', ')[0]})\n")
    name, lines_of = called
    if name:
        at = ", ".join(f"{os.path.basename(file)}:{n}" for n in lines_of)
        out.write(f"  it calls {name}(), whose statements keep their own lines: {at} (lower-trace where {at.split(', ')[0]})\n")
    out.write(f"  passes that changed its lines: {len(events)}\n")
    for event in events:
        by = event.by
        name = f"{by.seq:>4} {by.name}" if by is not None else "   -"
        out.write(f"    {name:<40} {event.kind:<12} {event.before} -> {event.after} lines\n")


def _mark(origin: Origin) -> str:
    return " " if origin.certain else "?"  # ?: inferred (where it sits in a diff), not read off the IR


def _counted(found: Found) -> str:
    guesses = sum(1 for _, _, origin in found if not origin.certain)
    return plural(len(found), "line") + (f" ({guesses} inferred: ?)" if guesses else "")


def _found_json(found: Found) -> list[dict[str, Any]]:
    return [{"line": n, "text": t, "how": origin.how, "certain": origin.certain} for n, t, origin in found]


def where_json(
    kernel: KernelTrace, file: str, line: int, final: Found, sources: list[tuple[str, Found]], events: list[LineEvent], helper: Helper = ("", []),
    called: Helper = ("", []),
) -> dict[str, Any]:  # fmt: skip
    return {
        "helper": {"name": helper[0], "called_from": helper[1]} if helper[0] else None,  # the line is inside a helper the kernel calls
        "calls": {"name": called[0], "lines": called[1]} if called[0] else None,  # the line calls a helper whose statements keep its lines
        "kernel": kernel.kernel_id,
        "name": kernel.name,
        "file": file,
        "line": line,
        "final_tir": _found_json(final),  # of a failed compile: the IR the failed pass received
        "failed": bool(kernel.failed_count),
        "sources": [{"role": role, "lines": _found_json(found)} for role, found in sources],
        "passes": [
            {"seq": e.by.seq if e.by else None, "name": e.by.name if e.by else "", "what": e.kind, "before": e.before, "after": e.after} for e in events
        ],
    }


def lines_json(text: str, origins: Origins, owners: list[PassRecord | None] | None = None) -> list[dict[str, Any]]:
    out = []
    for i, line in enumerate(split_lines(text)):
        entry: dict[str, Any] = {"line": i + 1, "text": line, "origin": origin_json(origins[i] if i < len(origins) else None)}
        if owners is not None:
            owner = owners[i] if i < len(owners) else None
            entry["pass"] = {"seq": owner.seq, "name": owner.name} if owner is not None else None
        out.append(entry)
    return out


def no_origins_reason(result: KernelOrigins, notes: tuple[str, ...]) -> str:
    """Why a kernel's lines have no origins ("" when they have)."""
    if result.has_spans:
        return ""
    said = next((note for note in notes if "source spans" in note), "")
    return said or "this trace holds no source spans (traced by an older lower-trace, or with TILELANG_ENABLE_IR_SPAN=0)"
