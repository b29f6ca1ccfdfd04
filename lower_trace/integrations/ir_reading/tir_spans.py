"""Source spans off TIR statements (TileLang 0.1.15+: ``tilelang.ir``), read through TVM's printer.

TileLang's frontend puts the user's file and line (a Span) on each statement it builds; passes
keep it where they rebuild a statement by copy-on-write and leave it out where they build one
anew. TVMScript does not print spans, but its printer can annotate any object with a comment.
So each statement that has a span is annotated with a marker naming the span, the snapshot is
printed once (its own print, no second one), and the markers are taken out again: what is left
is, character for character, the text an unannotated print gives (the first prints of a process
are checked against one), and beside it which printed line each span is on.

The same markers, naming statements instead of spans, map generated source to the TIR it came
from (:func:`codegen_line_map`): a deep copy of the module handed to codegen gets one made-up
span per statement, TileLang's codegen is run on the copy with ``tl.emit_line_directives``, and
each ``#line`` it writes names the statement the following source lines come from. The user's
module and the source they compile are never touched.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import tvm
import tvm_ffi

from lower_trace.analysis.text_diff import myers

_tir = getattr(tvm, "tirx", None) or tvm.tir
_get_span: Any = tvm_ffi.get_global_func("tl.ir.GetStmtSpan", allow_missing=True)
_set_span: Any = tvm_ffi.get_global_func("tl.ir.SetStmtSpan", allow_missing=True)
_ir_transform: Any = tvm_ffi.get_global_func("tirx.IRTransform", allow_missing=True)

MARK = "@lt:"  # a marker is "@lt:PAYLOAD@" in a comment; PAYLOAD never holds "@"
_FULL_LINE = re.compile(r"[ ]*# @lt:([^@\n]*)@")
_TRAILING = re.compile(r"  # @lt:([^@\n]*)@$")
_STMT_SPAN_SOURCE = "lower-trace-statement"  # the made-up file of the copy's spans
_LINE_DIRECTIVE = re.compile(r'^\s*#line (\d+) "([^"]*)"\s*$')


def available() -> bool:
    """This TileLang puts spans on statements and lets them be read."""
    return _get_span is not None and _ir_transform is not None


def _statement_kinds() -> list[str]:
    """Type keys of every TIR statement (IRTransform calls back for these only: the expressions
    between them are walked in C++)."""
    kinds = []
    for name in dir(_tir):
        cls = getattr(_tir, name)
        if isinstance(cls, type) and issubclass(cls, _tir.Stmt) and cls not in (_tir.Stmt, _tir.SeqStmt):
            info = getattr(cls, "__tvm_ffi_type_info__", None)
            key = getattr(info, "type_key", None) or getattr(cls, "_type_key", None)
            if key:
                kinds.append(str(key))
    return sorted(kinds)


_KINDS: list[str] | None = None


def statements(functions: Any) -> list[Any]:
    """Every statement of the module's PrimFuncs, in preorder (the printer's order, and the same
    order for a deep copy)."""
    global _KINDS
    if _KINDS is None:
        _KINDS = _statement_kinds()
    found: list[Any] = []
    for _, function in _items(functions):
        body = getattr(function, "body", None)
        if body is not None:
            _ir_transform(body, found.append, None, _KINDS)  # returns None: the statement is kept
    return found


def _items(functions: Any) -> list[tuple[Any, Any]]:
    items = list(functions.items())
    return sorted(items, key=lambda item: item[0].name_hint)  # the printer's order of functions


class SpanFiles:
    """The files spans name, numbered in order of appearance (one table per compile), with whether
    each is the compiler's own code (TileLang's or TVM's Python) rather than the user's."""

    def __init__(self, library_dirs: Sequence[str]) -> None:
        self.library_dirs = tuple(os.path.join(os.path.abspath(d), "") for d in library_dirs)
        self.names: list[str] = []
        self._index: dict[str, int] = {}
        # Marker payloads read before: a statement's span prints in every snapshot that keeps it.
        self.parsed: dict[str, tuple[int, ...]] = {}
        # Each Span's marker (or None) by the Span's address, the Span held so that its address stays its
        # own: a copied statement keeps its very Span, and a Span is never changed in place (a pass that
        # sets a statement's span puts another Span there).
        self.marks: dict[int, tuple[Any, str | None]] = {}

    def index(self, name: str) -> int:
        found = self._index.get(name)
        if found is None:
            found = self._index[name] = len(self.names)
            self.names.append(name)
        return found

    def is_library(self, name: str) -> bool:
        return os.path.abspath(name).startswith(self.library_dirs) if self.library_dirs else False


# Statements the printer writes concisely (``bx = T.launch_thread(...)``, ``T.attr(None, "threadblock_swizzle_pattern",
# ...)`` with its body after it rather than a ``with``) only while they carry no comment: a marker would change
# the text, so attributes get none (their bodies' statements carry the spans).
_UNMARKED = tuple(getattr(_tir, name) for name in ("AttrStmt",) if hasattr(_tir, name))


def span_marks(functions: Any, files: SpanFiles) -> dict[Any, str]:
    """The marker of every statement that has a span: ``@lt:FILE:LINE:COL:END_LINE:END_COL@``."""
    marks: dict[Any, str] = {}
    known = files.marks
    for stmt in statements(functions):
        if isinstance(stmt, _UNMARKED):
            continue
        span = _get_span(stmt)
        if span is None:
            continue
        address = span.__chandle__()
        seen = known.get(address)
        if seen is None:
            seen = known[address] = (span, _marker(span, files))
        if seen[1] is not None:
            marks[stmt] = seen[1]
    return marks


def _marker(span: Any, files: SpanFiles) -> str | None:
    """A span's marker; None for a span without a file, or one of the line map's made-up ones."""
    source = span.source_name
    if source is None:
        return None
    name = str(source.name)
    if not name or name == _STMT_SPAN_SOURCE:
        return None
    return f"{MARK}{files.index(name)}:{span.line}:{span.column}:{span.end_line}:{span.end_column}@"


def strip_marks(text: str) -> tuple[str, list[tuple[int, str]]]:
    """The text without the markers, and (1-based line of that text, payload) for each marker. A
    marker on a line of its own (the printer's comment before a ``for``, ``if`` or ``with``) belongs to
    the next line; one at a line's end, to that line."""
    if MARK not in text:
        return text, []
    kept: list[str] = []
    found: list[tuple[int, str]] = []
    pending: list[str] = []
    for line in text.split("\n"):
        if MARK in line:
            whole = _FULL_LINE.fullmatch(line)
            if whole is not None:
                pending.append(whole.group(1))
                continue
            trailing = _TRAILING.search(line)
            while trailing is not None:
                pending.append(trailing.group(1))
                line = line[: trailing.start()]
                trailing = _TRAILING.search(line)
        kept.append(line)
        if pending:
            number = len(kept)
            found.extend((number, payload) for payload in pending)
            pending = []
    return "\n".join(kept), found


def spans_json(found: list[tuple[int, str]], files: SpanFiles) -> str:
    """A snapshot's spans as stored beside it: the files (numbered for this snapshot, library ones
    flagged) and, per marked line, [line, file, span line, column, end line, end column]."""
    if not found:
        return ""
    local: dict[int, int] = {}
    names: list[str] = []
    rows: list[list[int]] = []
    parsed = files.parsed
    for number, payload in found:
        span = parsed.get(payload)
        if span is None:
            span = parsed[payload] = _parse_payload(payload)
        if not span:
            continue  # a statement marker (codegen's) is no span
        file = span[0]
        if file not in local:
            local[file] = len(names)
            names.append(files.names[file])
        rows.append([number, local[file], *span[1:]])
    if not rows:
        return ""
    library = [files.is_library(name) for name in names]
    return json.dumps({"files": names, "library": library, "lines": rows}, separators=(",", ":"))


def _parse_payload(payload: str) -> tuple[int, ...]:
    """A span marker's five numbers, or () for a marker of another kind."""
    try:
        file, line, column, end_line, end_column = (int(part) for part in payload.split(":"))
    except ValueError:
        return ()
    return file, line, column, end_line, end_column


class SpanPrinter:
    """Prints a module with its statements' span markers (what ReusingPrinter pieces together),
    and splits the result into the plain text and its spans. ``check`` prints plainly too and
    compares, for the first prints of a process; a difference switches markers off for good."""

    def __init__(self, print_ir: Callable[[Any], str], library_dirs: Sequence[str]) -> None:
        self._print_ir = print_ir
        self.files = SpanFiles(library_dirs)

    def print_marked(self, mod: Any) -> str:
        if not _MARKING.enabled:
            return self._print_ir(mod)
        marks = span_marks(mod.functions, self.files)
        if not marks:
            return self._print_ir(mod)
        return str(mod.script(obj_to_annotate=marks))

    def split(self, printed: str, rebuild: Callable[[], Any]) -> tuple[str, str]:
        text, found = strip_marks(printed)
        if found and _MARKING.left > 0:
            _MARKING.left -= 1
            plain = self._print_ir(rebuild())
            if plain != text:
                _MARKING.enabled = False  # this printer places comments otherwise than assumed
                return plain, ""
        return text, spans_json(found, self.files)


class _Marking:
    """Process-wide: marked prints are trusted after this many agreed with a plain print."""

    left = 3
    enabled = True


_MARKING = _Marking()


def marking_disabled() -> bool:
    """A marked print once differed from a plain one: this process stores no spans."""
    return not _MARKING.enabled


# --- generated source -> TIR -------------------------------------------------------------------

# Codegen entry points that also compile (nvcc, hipcc): the line map uses their source-only twin.
_SOURCE_ONLY = {
    "target.build.tilelang_cuda": "target.build.tilelang_cuda_without_compile",
    "target.build.tilelang_hip": "target.build.tilelang_hip_without_compile",
}
_DIRECTIVES_CONFIG = "tl.emit_line_directives"


def codegen_line_map(function: str, mod: Any, target: Any, configs: dict[str, Any], source: str, tir_text: str) -> str:
    """For each line of `source` (what `function` made of `mod`), the 1-based line of `tir_text`
    (mod's snapshot) of the statement it was generated from (0: none before it), as stored beside
    the source: ``{"tir_lines": [...]}``; "" when it cannot be worked out here.

    Runs TileLang's codegen once more with #line directives on, each statement carrying for that
    run a made-up span that names it, and matches that source, directives taken out, to `source`
    (equal, unless a post-processing callback or an edit changed it); a marked print of `mod`
    says where each statement prints. The spans are put back as they were before this returns,
    exception or not (a deep copy would be cleaner, but TVM's copies Ops, which codegen then no
    longer knows, and a JSON copy costs ten times the codegen). Called on the run's worker after
    the compile's own codegen, whose source it leaves alone."""
    if _set_span is None or not available():
        return ""
    build = tvm_ffi.get_global_func(_SOURCE_ONLY.get(function, function), allow_missing=True)
    if build is None:
        return ""
    originals = statements(mod.functions)
    if not originals:
        return ""
    marks = {stmt: f"{MARK}s{number}@" for number, stmt in enumerate(originals, start=1) if not isinstance(stmt, _UNMARKED)}
    text, found = strip_marks(str(mod.script(obj_to_annotate=marks)))
    if text != tir_text:
        return ""
    line_of_statement: dict[int, int] = {}
    for line, payload in found:
        if payload.startswith("s"):
            line_of_statement.setdefault(int(payload[1:]), line)
    _place_attributes(originals, line_of_statement, text.split("\n"))
    kept = [_get_span(stmt) for stmt in originals]
    source_name = tvm.ir.SourceName(_STMT_SPAN_SOURCE)
    try:
        for number, stmt in enumerate(originals, start=1):
            _set_span(stmt, tvm.ir.Span(source_name, number, number, 1, 1))
        with tvm.transform.PassContext(config={**configs, _DIRECTIVES_CONFIG: True}):
            lined = build(mod, target)
    finally:
        undefined = tvm.ir.Span(None, 0, 0, 0, 0) if None in kept else None
        for stmt, span in reversed(list(zip(originals, kept, strict=True))):
            _set_span(stmt, span if span is not None else undefined)
    ours = _module_text(lined)
    if not ours:
        return ""
    plain, statement_of = _without_directives(ours)
    wanted = source.split("\n")
    ours_lines = plain.split("\n")
    if ours_lines == wanted:
        matched = {i: i for i in range(len(wanted))}
    else:
        matched = {j: i for i, j in myers(ours_lines, wanted)}
    tir_lines: list[int] = []
    last = 0
    for j in range(len(wanted)):
        i = matched.get(j)
        if i is not None:
            last = line_of_statement.get(statement_of[i], last)
        tir_lines.append(last)  # an unmatched line (an edit's, a callback's): the statement before it
    return json.dumps({"tir_lines": tir_lines}, separators=(",", ":"))


_ATTRIBUTE_LINE = re.compile(r"\s*(?:with )?T\.attr\(")


def _place_attributes(originals: list[Any], line_of_statement: dict[int, int], lines: list[str]) -> None:
    """Attributes print without a marker (one would change their text): an attribute's line is the
    first ``T.attr(`` line after the statement printed before it and before the next one printed
    (statements print in preorder), so its generated lines (``tl::rasterization2DRow``) are not
    taken for the statement before it. One walk back for the next printed lines, one forward."""
    following: list[int] = [0] * (len(originals) + 2)
    following[len(originals) + 1] = len(lines) + 1
    for number in range(len(originals), 0, -1):
        following[number] = line_of_statement.get(number, following[number + 1])
    previous = 0
    for number, stmt in enumerate(originals, start=1):
        if number in line_of_statement:
            previous = line_of_statement[number]
        elif isinstance(stmt, _UNMARKED):
            for line in range(previous + 1, following[number + 1]):
                if _ATTRIBUTE_LINE.match(lines[line - 1]):
                    line_of_statement[number] = previous = line
                    break


def _module_text(runtime_mod: Any) -> str:
    for getter in ("inspect_source", "get_source"):
        method = getattr(runtime_mod, getter, None)
        if method is not None:
            try:
                return str(method())
            except Exception:
                continue
    return ""


def _without_directives(source: str) -> tuple[str, list[int]]:
    """The source without #line directives, and for each of its lines the statement number the
    last of ours before it named (0 before the first)."""
    kept: list[str] = []
    statement_of: list[int] = []
    current = 0
    for line in source.split("\n"):
        directive = _LINE_DIRECTIVE.match(line) if line.lstrip().startswith("#line") else None
        if directive is not None:
            if directive.group(2) == _STMT_SPAN_SOURCE:
                current = int(directive.group(1))
            continue
        kept.append(line)
        statement_of.append(current)
    return "\n".join(kept), statement_of
