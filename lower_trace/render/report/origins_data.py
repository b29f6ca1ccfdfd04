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
    spans_of = _spans_reader(text_of)
    if not any(parse_spans(spans_of(digest)) for digest in digests):  # stops at the first that has spans
        return None  # nothing to work out: no diff is run
    result = kernel_origins(kernel, lambda digest: text_of(digest) or "", spans_of)
    if not result.has_spans:
        return None
    numbers = _Numbering()
    lines = _snapshot_lines(result, text_of, digests, numbers)
    lines.update(_generated_lines(kernel, result, numbers))
    lines.update(_device_lines(kernel, result, text_of, lines))
    history = _histories(result, numbers.place_of)
    sources = _sources(numbers, text_of)
    return {"files": numbers.files, "places": numbers.places, "table": numbers.table, "lines": lines, "history": history, "sources": sources}


def _spans_reader(text_of: Callable[[str], str]) -> Callable[[str], str]:
    """A snapshot's spans ("" where it has none)."""

    def spans_of(digest: str) -> str:
        try:
            return text_of(spans_key(digest)) or ""
        except LookupError:  # a text_of that knows snapshots only
            return ""

    return spans_of


class _Numbering:
    """The payload's tables, filled as lines are numbered: the user's files, the places (file, line)
    in them, and the origins (place, how, library); each origin's number is its row in the table."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.places: list[list[int]] = []
        self.table: list[list[Any]] = []
        self.place_of: dict[tuple[str, int], int] = {}
        self.index_of: dict[Origin, int] = {}
        self.by_object: dict[int, int] = {}  # most lines share their Origin object with the line they were kept from

    def number(self, origin: Origin | None) -> int:
        """The origin's row in the table (-1: none), a new row for an origin not seen before."""
        if origin is None:
            return -1
        found = self.by_object.get(id(origin))
        if found is not None:
            return found
        found = self.index_of.get(origin)
        if found is not None:
            self.by_object[id(origin)] = found
            return found
        library = list(origin.library) if origin.library else None
        self.index_of[origin] = self.by_object[id(origin)] = len(self.table)
        self.table.append([self._place(origin), origin.how, library])
        return self.index_of[origin]

    def _place(self, origin: Origin) -> int:
        key = (origin.file, origin.line)
        place = self.place_of.get(key)
        if place is None:
            if origin.file not in self.files:
                self.files.append(origin.file)
            place = self.place_of[key] = len(self.places)
            self.places.append([self.files.index(origin.file), origin.line])
        return place


def _snapshot_lines(result: KernelOrigins, text_of: Callable[[str], str], digests: list[str], numbers: _Numbering) -> dict[str, list[int]]:
    """Per snapshot (digest): each line's origin number."""
    lines: dict[str, list[int]] = {}
    for digest in digests:
        origins = result.texts.get(text_of(digest))
        if origins is not None:
            lines[digest] = [numbers.number(o) for o in origins]
    return lines


def _generated_lines(kernel: KernelTrace, result: KernelOrigins, numbers: _Numbering) -> dict[str, list[int]]:
    """Per generated source (digest): each line's origin number."""
    lines: dict[str, list[int]] = {}
    for step in kernel.codegen:
        entry = result.sources.get(step.seq)
        if entry is not None and step.source:
            lines[step.source] = [numbers.number(o) for o in entry.origins]
    return lines


def _device_lines(kernel: KernelTrace, result: KernelOrigins, text_of: Callable[[str], str], lines: dict[str, list[int]]) -> dict[str, list[int]]:
    """Per PTX and SASS listing of the compiled generated source: each line's origin number, that of
    the source line it was compiled from."""
    record = kernel.device_stage
    entry = result.sources.get(record.seq) if record is not None else None
    if record is None or entry is None or record.source not in lines:  # the generated source was not compiled
        return {}
    source_lines = lines[record.source]
    out: dict[str, list[int]] = {}
    for which in ("ptx", "sass"):
        digest = getattr(record, which)
        if digest:
            out[digest] = [source_lines[n - 1] if 0 < n <= len(source_lines) else -1 for n in cuda_lines(text_of, record, which)]
    return out


def _sources(numbers: _Numbering, text_of: Callable[[str], str]) -> dict[str, dict[str, Any]]:
    """Per user's file the trace holds: the excerpt the kernel's lines come from."""
    sources = {}
    for file in numbers.files:
        try:
            text = text_of(source_key(file))
        except LookupError:
            text = None
        if text:
            sources[file] = _excerpt(text, sorted(line for (f, line) in numbers.place_of if f == file))
    return sources


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
