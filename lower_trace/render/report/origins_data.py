"""The source map as the report's page reads it (assets/origins.js): per snapshot and generated
source, an origin number per line; the origins; the user's files; what each pass did to the
lines from each of the user's lines. Computed when the kernel's block is written (after the
compile, never per pass)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lower_trace.analysis.device.summary import cuda_lines
from lower_trace.analysis.origins import KernelOrigins, Origin, kernel_origins, parse_spans
from lower_trace.analysis.text_diff import split_lines
from lower_trace.model import KernelTrace, source_key, spans_key

SOURCE_CONTEXT = 3  # lines of the user's file shown around the lines the kernel comes from


def origins_payload(kernel: KernelTrace, text_of: Callable[[str], str], digests: list[str]) -> dict[str, Any] | None:
    """None when no line of the kernel has an origin (no spans: older TileLang, plain TVM)."""

    def spans_of(digest: str) -> str:
        try:
            return text_of(spans_key(digest)) or ""
        except LookupError:  # a text_of that knows snapshots only
            return ""

    if not any(parse_spans(spans_of(digest)) for digest in digests):  # stops at the first that has spans
        return None  # nothing to work out: no diff is run
    result = kernel_origins(kernel, lambda digest: text_of(digest) or "", spans_of)
    if not result.has_spans:
        return None
    files: list[str] = []
    places: list[list[int]] = []
    table: list[list[Any]] = []
    place_of: dict[tuple[str, int], int] = {}
    index_of: dict[Origin, int] = {}

    by_object: dict[int, int] = {}  # most lines share their Origin object with the line they were kept from

    def number(origin: Origin | None) -> int:
        if origin is None:
            return -1
        found = by_object.get(id(origin))
        if found is not None:
            return found
        found = index_of.get(origin)
        if found is not None:
            by_object[id(origin)] = found
            return found
        key = (origin.file, origin.line)
        place = place_of.get(key)
        if place is None:
            if origin.file not in files:
                files.append(origin.file)
            place = place_of[key] = len(places)
            places.append([files.index(origin.file), origin.line])
        library = list(origin.library) if origin.library else None
        index_of[origin] = by_object[id(origin)] = len(table)
        table.append([place, origin.how, library])
        return index_of[origin]

    lines: dict[str, list[int]] = {}
    for digest in digests:
        text = text_of(digest)
        origins = result.texts.get(text)
        if origins is not None:
            lines[digest] = [number(o) for o in origins]
    for step in kernel.codegen:
        entry = result.sources.get(step.seq)
        if entry is not None and step.source:
            lines[step.source] = [number(o) for o in entry.origins]
    record = kernel.device_stage
    entry = result.sources.get(record.seq) if record is not None else None
    if record is not None and entry is not None and record.source in lines:  # the generated source was compiled
        source_lines = lines[record.source]
        for which in ("ptx", "sass"):
            digest = getattr(record, which)
            if digest:
                lines[digest] = [source_lines[n - 1] if 0 < n <= len(source_lines) else -1 for n in cuda_lines(text_of, record, which)]
    history = _histories(result, place_of)
    sources = {}
    for file in files:
        try:
            text = text_of(source_key(file))
        except LookupError:
            text = None
        if text:
            sources[file] = _excerpt(text, sorted(line for (f, line) in place_of if f == file))
    return {"files": files, "places": places, "table": table, "lines": lines, "history": history, "sources": sources}


def _excerpt(text: str, used: list[int]) -> dict[str, Any]:
    """The part of a file the kernel's lines come from, a few lines around (first line number, lines)."""
    all_lines = split_lines(text)
    first = max(1, used[0] - SOURCE_CONTEXT) if used else 1
    last = min(len(all_lines), used[-1] + SOURCE_CONTEXT) if used else len(all_lines)
    return {"first": first, "lines": all_lines[first - 1 : last]}


def _histories(result: KernelOrigins, place_of: dict[tuple[str, int], int]) -> dict[str, list[list[Any]]]:
    """Per place (its number, as a string): [[pass seq, what, lines before, lines after], ...]."""
    out: dict[str, list[list[Any]]] = {}
    every = result.histories()
    for key, place in place_of.items():
        events = every.get(key)
        if events:
            out[str(place)] = [[e.by.seq if e.by else -1, e.kind, e.before, e.after] for e in events]
    return out
