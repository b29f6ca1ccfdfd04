"""Origins (the source map): which line of the user's program each line of each snapshot and of
each generated source comes from. Pure over a stored trace.

The rules for one text are in analysis/origin_rules.py; here they are applied along the kernel's
history (blame's chain of changes), and the answers the views ask for are worked out: a user
line's history, the lines a failure points at, the pass that made a generated line. Generated
source lines take the origin of the TIR line they were generated from (the codegen's line map,
integrations/ir_reading/tir_spans.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from lower_trace.analysis.blame import Change, history
from lower_trace.analysis.generated_lines import place_generated_lines
from lower_trace.analysis.inlined_lets import place_inlined_lets
from lower_trace.analysis.origin_carry import carried
from lower_trace.analysis.origin_rules import GUESS, Origin, Origins, SourceOf, Spans, encloses, loop_variables, standalone
from lower_trace.analysis.text_diff import myers, split_lines
from lower_trace.model import CodegenRecord, KernelTrace, PassRecord, Trace, source_key

_ARROW = re.compile(r"-->\s+(\S+?):(\d+):\d+")  # TVM's diagnostic location line
_QUOTED = 8  # the shortest IR line a failure's message is taken to quote (origins.js's rule too)


@dataclass
class LineEvent:
    """What a pass did to the lines that come from one line of the user's program."""

    by: PassRecord | None
    kind: str  # appeared, changed, duplicated, reduced, disappeared
    before: int  # how many lines came from it before the pass
    after: int  # and after


@dataclass(frozen=True)
class SourceOrigins:
    text: str  # the generated source
    origins: Origins
    tir_lines: list[int]  # per line, the 1-based line of tir_text it came from (0: none)
    tir_text: str


@dataclass
class KernelOrigins:
    """The origins of one kernel's snapshots and generated sources."""

    texts: dict[str, Origins] = field(default_factory=dict)  # by snapshot text
    changes: list[Change] = field(default_factory=list)
    sources: dict[int, SourceOrigins] = field(default_factory=dict)  # by codegen step (seq)
    has_spans: bool = False
    _owners: dict[str, list[PassRecord | None]] | None = None

    @property
    def owners(self) -> dict[str, list[PassRecord | None]]:
        """Blame's owner of each line, by text: worked out when first asked (the report needs none)."""
        if self._owners is None:
            self._owners = {}
            for change in self.changes:
                if change.before not in self._owners:
                    self._owners[change.before] = [None] * len(split_lines(change.before))
                if change.after not in self._owners:
                    self._owners[change.after] = _owners(change, self._owners[change.before])
        return self._owners

    def of_text(self, text: str) -> Origins:
        return self.texts.get(text) or [None] * len(split_lines(text))

    def final_text(self) -> str:
        return self.changes[-1].after if self.changes else ""

    def path_to_final(self) -> list[Change]:
        """The changes that lead to the final text (not the host branch TileLang filters off and drops)."""
        path: list[Change] = []
        target = self.final_text()
        for change in reversed(self.changes):
            if change.by is not None and change.after == target:  # by None: back to an IR seen before
                path.append(change)
                target = change.before
        return path[::-1]

    def line_history(self, file: str, line: int) -> list[LineEvent]:
        """Per pass, in order, what happened to the lines from file:line (passes that left them alone are left out)."""
        return self.histories().get((file, line), [])

    def histories(self) -> dict[tuple[str, int], list[LineEvent]]:
        """line_history of every user line at once: one walk over the history."""
        events: dict[tuple[str, int], list[LineEvent]] = {}
        by_place: dict[str, dict[tuple[str, int], list[str]]] = {}

        def grouped(text: str) -> dict[tuple[str, int], list[str]]:
            if text not in by_place:
                groups: dict[tuple[str, int], list[str]] = {}
                for origin, line_text in zip(self.of_text(text), split_lines(text), strict=False):
                    if origin is not None:
                        groups.setdefault((origin.file, origin.line), []).append(line_text)
                by_place[text] = groups
            return by_place[text]

        for change in self.path_to_final():
            if change.by is None:
                continue
            old, new = grouped(change.before), grouped(change.after)
            for place in old.keys() | new.keys():
                event = _event(change.by, old.get(place, []), new.get(place, []))
                if event is not None:
                    events.setdefault(place, []).append(event)
        return events


def _event(by: PassRecord, before: list[str], after: list[str]) -> LineEvent | None:
    """What one pass did to the lines from one user line (None: left them alone)."""
    if not before:
        kind = "appeared"
    elif not after:
        kind = "disappeared"
    elif len(after) > len(before):
        kind = "duplicated"
    elif len(after) < len(before):
        kind = "reduced"
    elif before != after:
        kind = "changed"
    else:
        return None
    return LineEvent(by, kind, len(before), len(after))


def lines_from(text: str, origins: Origins, file: str, line: int) -> list[tuple[int, str, Origin]]:
    """(1-based line, text, its origin) of each line of text that comes from file:line; the origin
    says how that is known (a guess is one)."""
    lines = split_lines(text)
    return [(i + 1, lines[i], o) for i, o in enumerate(origins[: len(lines)]) if o is not None and o.line == line and o.file == file]


def error_points_at(text: str, origins: Origins, message: str) -> list[Origin]:
    """The user's lines a failure points at, each once: first the locations TVM's diagnostics
    print (``--> file:line:column``, from the failing statement's span), then the origins of the
    failing IR's lines the message quotes. Short lines ("}", "else:") would match anywhere."""
    found: dict[tuple[str, int], Origin] = {}
    users = {o.file for o in origins if o is not None}
    for match in _ARROW.finditer(message):
        file, line = match.group(1), int(match.group(2))
        if file in users:  # a location in the user's kernel, not in TileLang's own code
            found.setdefault((file, line), Origin(file, line, "error"))
    for i, line in enumerate(split_lines(text)):
        stripped = line.strip()
        origin = origins[i] if i < len(origins) else None
        if origin is not None and len(stripped) >= _QUOTED and stripped in message:
            found.setdefault((origin.file, origin.line), origin)
    return list(found.values())


def parse_spans(stored: str) -> Spans:
    """A snapshot's stored spans by 0-based line: (file, line, is library, columns)."""
    if not stored:
        return {}
    try:
        data = json.loads(stored)
        files, library = data["files"], data["library"]
        found: Spans = {}
        for number, file, line, column, end_line, end_column in data["lines"]:
            # TileLang's frontend spans a whole line (columns 1 to 2**20): no column range then.
            columns = (column, end_column) if end_line == line and 0 < column < end_column < 1 << 20 else None
            found.setdefault(number - 1, (files[file], line, bool(library[file]), columns))
        return found
    except (ValueError, KeyError, TypeError, IndexError):
        return {}  # damaged: no spans, the rest of the view stays


def trace_origins(trace: Trace, kernel: KernelTrace) -> KernelOrigins:
    """kernel_origins of a loaded trace's kernel."""
    return kernel_origins(kernel, trace.snapshot, trace.spans)


def kernel_origins(kernel: KernelTrace, text_of: Callable[[str], str], spans_of: Callable[[str], str]) -> KernelOrigins:
    """The origins of every snapshot on the kernel's history and of its generated sources."""
    digest_of_text: dict[str, str] = {}
    for record in kernel.passes:
        for digest in (record.before, record.after):
            if digest and digest not in digest_of_text.values():
                digest_of_text.setdefault(text_of(digest), digest)
    for step in kernel.codegen:
        if step.tir:
            digest_of_text.setdefault(text_of(step.tir), step.tir)
    result = KernelOrigins()
    spans_cache: dict[str, Spans] = {}

    def spans(text: str) -> Spans:
        if text not in spans_cache:
            digest = digest_of_text.get(text, "")
            spans_cache[text] = parse_spans(spans_of(digest)) if digest else {}
            result.has_spans = result.has_spans or bool(spans_cache[text])
        return spans_cache[text]

    sources: dict[str, list[str] | None] = {}

    def source_of(file: str) -> list[str] | None:
        if file not in sources:
            try:
                sources[file] = split_lines(text_of(source_key(file))) or None
            except LookupError:
                sources[file] = None
        return sources[file]

    changes = history(kernel, text_of)
    result.changes = changes
    texts = result.texts
    for change in changes:
        if change.before not in texts:
            texts[change.before] = standalone(change.before, spans(change.before), source_of)
        if change.after in texts:
            continue
        texts[change.after] = carried(change.before, texts[change.before], change.after, spans(change.after), source_of)
    for step in kernel.codegen:
        _source_origins(result, step, text_of, spans, source_of)
    return result


def _owners(change: Change, before: list[PassRecord | None]) -> list[PassRecord | None]:
    """Blame's owners of change.after (analysis/blame.py's rule: kept lines keep theirs)."""
    new = split_lines(change.after)
    kept: list[PassRecord | None] = [change.by] * len(new)
    for i, j in myers(split_lines(change.before), new):
        if i < len(before):
            kept[j] = before[i]
    return kept


def _source_origins(
    result: KernelOrigins, step: CodegenRecord, text_of: Callable[[str], str], spans: Callable[[str], Spans], source_of: SourceOf,
) -> None:  # fmt: skip
    if not step.source:
        return
    source = text_of(step.source)
    tir_text = text_of(step.tir) if step.tir else ""
    if tir_text and tir_text not in result.texts:
        result.texts[tir_text] = standalone(tir_text, spans(tir_text))
    tir_origins = result.texts.get(tir_text, [])
    tir_lines = _line_map(text_of(step.line_map)) if step.line_map else []
    lines = split_lines(source)
    origins: Origins = [None] * len(lines)
    tir = split_lines(tir_text)
    for i in range(min(len(lines), len(tir_lines))):
        k = tir_lines[i] - 1
        if 0 <= k < len(tir_origins) and not _PUNCTUATION.fullmatch(lines[i]) and not _SIGNATURE.match(lines[i]):
            origin = origins[i] = tir_origins[k]
            if origin is not None and k < len(tir) and len(loop_variables(tir[k])) > 1:
                origins[i] = _nested_loop(lines[i], tir[k], origin, source_of)
    place_inlined_lets(lines, origins, tir_lines, tir, source_of)
    place_generated_lines(lines, origins, source_of)
    result.sources[step.seq] = SourceOrigins(source, origins, tir_lines, tir_text)


_C_LOOP = re.compile(r"\s*for \((?:[A-Za-z_][A-Za-z0-9_:]* )+([A-Za-z_][A-Za-z0-9_]*) = ")


def _nested_loop(line: str, tir_line: str, origin: Origin, source_of: SourceOf) -> Origin:
    """TVMScript prints loops nested directly in each other as one ``for i, j in T.grid(...)``, with
    the outer loop's span; the generated source has a ``for`` per loop. The loop of j is the user's
    loop of j: the grid's own line when the user wrote one (``for i, j in T.grid``), else the ``for j``
    nested in the outer one in the user's file; a guess when neither is there."""
    match = _C_LOOP.match(line)
    source = source_of(origin.file)
    if match is None or not source or not 0 < origin.line <= len(source):
        return origin
    variable = re.sub(r"_\d+$", "", match.group(1))
    if variable not in loop_variables(tir_line):
        return origin
    written = loop_variables(source[origin.line - 1])
    if not written or variable in written:
        return origin  # the user's grid, or no loop of theirs (TileLang's own expansion of a statement)
    for number in range(origin.line + 1, len(source) + 1):
        if not encloses(source, origin.line, [number]):
            break
        if variable in loop_variables(source[number - 1]):
            return Origin(origin.file, number, origin.how, origin.library)
    return Origin(origin.file, origin.line, GUESS, origin.library)


_PUNCTUATION = re.compile(r"\s*(?:[{}]|} else {|)\s*")  # a brace (or nothing) is no statement's line
# A kernel's signature comes from no statement (the first kernel's has no #line above it; a second
# kernel's would take the last statement of the kernel before it).
_SIGNATURE = re.compile(r".*\b__global__\b.*\)\s*\{\s*$")


def _line_map(stored: str) -> list[int]:
    try:
        lines = json.loads(stored)["tir_lines"]
        return [int(n) for n in lines]
    except (ValueError, KeyError, TypeError):
        return []


def source_owner(result: KernelOrigins, step: CodegenRecord, line: int) -> PassRecord | None:
    """The pass that last changed the TIR line a generated line (0-based) comes from."""
    entry = result.sources.get(step.seq)
    if entry is None or line >= len(entry.tir_lines) or entry.tir_lines[line] <= 0:
        return None
    owners = result.owners.get(entry.tir_text, [])
    k = entry.tir_lines[line] - 1
    return owners[k] if k < len(owners) else None


_DEF = re.compile(r"\s*def ([A-Za-z_][A-Za-z0-9_]*)\(")


def helper_call_sites(source: str, line: int, used: set[int]) -> tuple[str, list[int]]:
    """A line inside a helper function the kernel calls (a ``T.macro``, a Python function that
    builds statements) has no lines of its own: TileLang attributes its statements to the call.
    (the helper's name, the lines among `used` -- lines the kernel's code comes from -- that call
    it); ("", []) when the line is in no function that a line of the kernel calls."""
    lines = split_lines(source)
    if not 0 < line <= len(lines):
        return "", []
    depth = len(lines[line - 1]) - len(lines[line - 1].lstrip())
    for number in range(line - 1, 0, -1):
        text = lines[number - 1]
        match = _DEF.match(text)
        if match and len(text) - len(text.lstrip()) < depth:
            call = re.compile(rf"\b{re.escape(match.group(1))}\(")
            calls = sorted(n for n in used if 0 < n <= len(lines) and n != number and call.search(lines[n - 1]))
            return (match.group(1), calls) if calls else ("", [])
    return "", []


_CALLED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\(")


def called_helper_lines(source: str, line: int, used: set[int]) -> tuple[str, list[int]]:
    """The other way round: a line that calls a helper whose statements keep spans of their own (a
    ``T.macro`` on TileLang 0.1.15) has no lines itself; its code is on the helper's lines.
    (the helper's name, its lines among `used`); ("", []) when it calls no such helper."""
    lines = split_lines(source)
    if not 0 < line <= len(lines):
        return "", []
    for name in _CALLED.findall(lines[line - 1]):
        definition = re.compile(rf"(\s*)def {re.escape(name)}\(")
        for number, text in enumerate(lines, start=1):
            match = definition.match(text)
            if match is None:
                continue
            indent, inside = len(match.group(1)), []
            for body in range(number + 1, len(lines) + 1):
                body_text = lines[body - 1]
                if body_text.strip() and len(body_text) - len(body_text.lstrip()) <= indent:
                    break
                if body in used:
                    inside.append(body)
            if inside:
                return name, inside
    return "", []
