"""The rules that give each line of one text its origin: from its own span (``standalone``: the
kernel's input), or from the text one pass made it from (``carried``). analysis/origins.py
applies them along a kernel's history.

A line's origin is, in this order:

1. its own span, when the compiler kept one on the statement it prints and the span names a
   file of the user's (TileLang's frontend puts one on every statement it builds);
2. else what it replaced or descends from along the kernel's history (blame's chain of changes):
   the same line before the pass (the diff keeps it), the same statement moved or re-indented (its
   text, indentation aside, was removed elsewhere by the same change), or the removed line of its
   diff hunk it shares most names with (``T.copy(A ...)`` became ``T.tma_load(... A ...)``);
3. for a statement TileLang's own code built (its span names the library), the user's line
   that called it: the line between the statements beside it that have spans of their own
   (``T.reduce_max`` between a ``T.copy`` and a ``T.Parallel``); a loop a pass made around one
   statement's lowering (a TMA copy's boxes), that statement's; a buffer's allocation, the user's
   ``T.alloc_`` line; a statement TileLang spans to a ``with T.ws`` line, the body line it is like;
4. else the statement it is nested in (a line of TileLang's own macro expansion inside the
   ``_gemm_ssr`` block the ``T.gemm`` line became), else the first line its hunk replaced.

A span that names TileLang's or TVM's own Python (a macro generator, a template) is kept as the
line's *library* location, second; the line's origin is still the user's line found by 2 to 4,
i.e. the call site (3 and 4).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from lower_trace.analysis.text_diff import myers, split_lines

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_COMMON = frozenset({"T", "in", "for", "if", "else", "with", "as", "and", "or", "not", "0", "1", "2"})
_LOOP = re.compile(r"\s*for ([A-Za-z_][A-Za-z0-9_]*) in ")
_SIMILAR = 0.4  # the share of a removed line's names a new line keeps, above which it descends from it
_FAR = 0.6  # the same, for a removed line outside the hunk
_RENAMED = (0.8, 0.0)  # a library line at least this like a removed one is that line, renamed (not a new expansion)
_ALLOCATED = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?:: T\.handle\([^)]*\))? = T\.(?:sblock_alloc_buffer|alloc_buffer|decl_buffer|handle_add_byte_offset)\(")
_HEADER = re.compile(r"\s*(?:for|while|if|with) .*:\s*$")  # an IR line with a body
_SOURCE_HEADER = re.compile(r"\s*(?:for|while|if|elif|else|with)\b")
_SOURCE_WITH = re.compile(r"\s*with\b")
_RENAMED_COPY = re.compile(r"_\d+$")
_INSIDE = 0.5  # the share of a with-block's body line's names a statement spanned to the with keeps, to be that line


@dataclass(frozen=True)
class Origin:
    file: str
    line: int
    how: str  # "span": its own span; "call": the user's line that called TileLang's code that built it;
    # "inherited": what it replaced or sits in; "error": a failure's own location
    library: tuple[str, int] | None = None  # where in TileLang's / TVM's own code, when a span named it
    columns: tuple[int, int] | None = None  # 1-based column range on that line, when the span has one

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


Origins = list[Origin | None]


@functools.lru_cache(maxsize=1 << 16)
def _tokens(line: str) -> frozenset[str]:
    """A line's names and numbers (cached: consecutive snapshots share most of their lines)."""
    return frozenset(_TOKEN.findall(line)) - _COMMON


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _own(spans: dict[int, tuple[str, int, bool, tuple[int, int] | None]], i: int) -> tuple[Origin | None, tuple[str, int] | None]:
    span = spans.get(i)
    if span is None:
        return None, None
    file, line, library, columns = span
    if library:
        return None, (file, line)
    return Origin(file, line, "span", columns=columns), None


def _depths(lines: list[str]) -> list[int]:
    """Each line's indentation; -1 for a blank line (it encloses nothing)."""
    return [len(line) - len(line.lstrip(" ")) if line.strip() else -1 for line in lines]


def _enclosing(lines: list[str], origins: Origins, i: int, depths: list[int] | None = None) -> Origin | None:
    """The origin of the nearest line above i that is less indented (the statement i sits in)."""
    depths = depths if depths is not None else _depths(lines)
    depth = _indent(lines[i])
    for k in range(i - 1, -1, -1):
        if 0 <= depths[k] < depth:
            depth = depths[k]
            if origins[k] is not None:
                return origins[k]
    return None


SourceOf = Callable[[str], "list[str] | None"]  # a user's file's lines as traced (None: not stored)


def _no_source(_file: str) -> list[str] | None:
    return None


def standalone(text: str, spans: dict[int, tuple[str, int, bool, tuple[int, int] | None]], source_of: SourceOf = _no_source) -> Origins:
    """A text's origins from its own spans alone (the kernel's input; a text outside the history)."""
    lines = split_lines(text)
    origins: Origins = [None] * len(lines)
    libraries: dict[int, tuple[str, int]] = {}
    for i in range(len(lines)):
        origins[i], library = _own(spans, i)
        origins[i] = _inside_with(origins[i], lines[i], source_of)
        if library is not None:
            libraries[i] = library
    for i in range(len(lines)):
        if origins[i] is None and i in libraries:
            origins[i] = _call_site(lines, origins, i, libraries[i], source_of)
    depths = _depths(lines)
    for i in range(len(lines)):
        if origins[i] is None and (i in libraries or lines[i].strip()):
            found = _enclosing(lines, origins, i, depths)
            if found is not None:
                origins[i] = _allocation(lines[i], found, source_of) or Origin(found.file, found.line, "inherited", libraries.get(i))
    return origins


def _allocation(line: str, near: Origin, source_of: SourceOf) -> Origin | None:
    """A buffer's allocation (a block's field, printed as ``frag = T.sblock_alloc_buffer(...)``, or
    an allocation a pass moved or made again, ``scores_sum = T.decl_buffer(...)``, has no span of
    its own): the user's ``frag = T.alloc_...`` line in near's file nearest near's line (the
    statement it sits in, or the line it was found like)."""
    match = _ALLOCATED.match(line)
    source = source_of(near.file) if match else None
    if not match or not source:
        return None
    name = match.group(1)
    for candidate in dict.fromkeys((name, re.sub(r"_\d+$", "", name))):  # TVM renames a copy A_shared_1
        wanted = re.compile(rf"\s*{re.escape(candidate)}\s*=\s*T\.alloc_")
        found = [number for number in range(1, len(source) + 1) if wanted.match(source[number - 1])]
        if found:  # two kernels in one file may name their buffers alike: the one nearest
            return Origin(near.file, min(found, key=lambda number: (abs(number - near.line), number > near.line)), "inherited")
    return None


def _call_site(lines: list[str], origins: Origins, i: int, library: tuple[str, int], source_of: SourceOf) -> Origin | None:
    """A statement TileLang's own code built among the user's (``T.reduce_max`` is a macro: its
    statement's span is in reduce_op.py) comes from the user's line between its neighbours: the
    nearest statements beside it, in the same block, with spans of their own. Of the lines
    between those two in the user's file, the first at the neighbour's indentation (not a
    continuation, not a loop's body)."""
    depth = _indent(lines[i])

    def neighbour(step: int) -> Origin | None:
        k = i + step
        while 0 <= k < len(lines):
            if lines[k].strip():
                if _indent(lines[k]) < depth:
                    return None  # the block ends
                found = origins[k]
                if _indent(lines[k]) == depth and found is not None and found.how == "span":
                    return found
            k += step
        return None

    before, after = neighbour(-1), neighbour(1)
    file = before.file if before is not None else after.file if after is not None else ""
    source = source_of(file) if file else None
    if not source:
        return None
    if after is not None and after.file != file:
        after = None
    if before is not None:
        candidates = range(before.line + 1, after.line if after is not None else len(source) + 1)
        indent = _indent(source[before.line - 1]) if before.line <= len(source) else -1
    elif after is not None:
        candidates = range(after.line - 1, 0, -1)
        indent = _indent(source[after.line - 1]) if after.line <= len(source) else -1
    else:
        return None
    for number in candidates:
        if number > len(source):
            break
        text = source[number - 1]
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _indent(text) < indent:
            break  # out of the neighbour's block
        if _indent(text) == indent:
            return Origin(file, number, "call", library)
    return None


def carried(
    before: str, before_origins: Origins, after: str, spans: dict[int, tuple[str, int, bool, tuple[int, int] | None]],
    source_of: SourceOf = _no_source,
) -> Origins:  # fmt: skip
    """The origins of `after`, made by one pass from `before` (see the module docstring)."""
    old, new = split_lines(before), split_lines(after)
    origins: Origins = [None] * len(new)
    libraries: dict[int, tuple[str, int]] = {}
    matched: dict[int, int] = {}
    pairs = myers(old, new)
    for i, j in pairs:
        matched[j] = i
    vague: dict[int, Origin] = {}  # own spans that name a `with` block, not the statement: the last resort
    for j in range(len(new)):
        own, library = _own(spans, j)
        if own is not None and _names_a_with(own, new[j], source_of):
            vague[j], own = own, None
        if library is not None:
            libraries[j] = library
        if own is not None:
            origins[j] = own
        elif j in matched:
            kept = before_origins[matched[j]] if matched[j] < len(before_origins) else None
            origins[j] = kept if kept is None or library is None else Origin(kept.file, kept.line, kept.how, library, kept.columns)
    # The hunks: runs of new lines between kept ones, each with the old lines it replaced.
    kept_old = {i for i, _ in pairs}
    removed_by_text: dict[str, list[int]] = {}
    for i, line in enumerate(old):
        if i not in kept_old and i < len(before_origins) and before_origins[i] is not None:
            removed_by_text.setdefault(line.strip(), []).append(i)
            head = _loop_head(line)
            if head:
                removed_by_text.setdefault(head, []).append(i)
    taken: dict[str, int] = {}  # of the removed lines of one text, how many a new line took already
    anchors = [(-1, -1), *pairs, (len(old), len(new))]
    depths: list[int] = []  # worked out at the first line that needs its statement

    def enclosing(j: int) -> Origin | None:
        if not depths:
            depths.extend(_depths(new))
        return _enclosing(new, origins, j, depths)

    # A pass that moves a statement far (warp specialisation puts the producer's copies in a branch
    # of their own) leaves it in another hunk than its old place: any removed line, more alike.
    everywhere = [(i, _tokens(old[i])) for i in range(min(len(old), len(before_origins))) if i not in kept_old and before_origins[i] is not None]
    for (i0, j0), (i1, j1) in itertools.pairwise(anchors):
        if j1 - j0 <= 1:
            continue
        removed = [i for i in range(i0 + 1, i1) if i < len(before_origins) and before_origins[i] is not None]
        removed_tokens = [(i, _tokens(old[i])) for i in removed]
        for j in range(j0 + 1, j1):
            if origins[j] is not None:  # its own span; it still is the next copy of its text
                if new[j].strip() in removed_by_text:
                    taken[new[j].strip()] = taken.get(new[j].strip(), 0) + 1
                continue
            # The removed line it is most like: in its hunk, or anywhere when one there is more alike overall.
            # (TileLang's own loops are new: `for i in T.unroll(1)` of a gemm's expansion is not the user's `for i`.)
            near = i0 + (j - j0)  # where in the old text this line would be, had nothing moved
            found, score = _descends(
                new[j], removed_by_text, removed_tokens, before_origins, _SIMILAR, near, loop_heads=j not in libraries, taken=taken, old_lines=old
            )
            if score[1] < 1.0:  # not the same line (or names) again: a removed line elsewhere may be more alike
                far, far_score = _descends(new[j], {}, everywhere, before_origins, _FAR, near, overall_first=True)
                if far is not None and far_score[1] > score[1]:
                    found, score = far, far_score
            if j in libraries and score < _RENAMED:
                # TileLang's own code, not a line it had before renamed: called among the user's
                # statements, or expanding the user's statement it sits in.
                call = _call_site(new, origins, j, libraries[j], source_of)
                if call is not None:
                    origins[j] = call
                    continue
                inside = enclosing(j)
                if inside is not None:
                    origins[j] = Origin(inside.file, inside.line, "inherited", libraries[j])
                    continue
            if found is not None:
                allocated = _allocation(new[j], found, source_of)
                origins[j] = allocated or Origin(found.file, found.line, "inherited", libraries.get(j), found.columns)
    # A loop, branch or block the pass made around one statement's lowering (the boxes of a TMA
    # copy) comes from that statement: every line of its body does. So does a new loop whose own
    # span names a line of the user's that is no loop (TileLang gives it another statement's span).
    if not depths:
        depths.extend(_depths(new))
    for j in range(len(new)):
        if not new[j].endswith(":") or not _HEADER.match(new[j]):  # endswith first: this runs on every line
            continue
        own = origins[j]
        wrong_span = own is not None and own.how == "span" and _not_a_header(own, source_of)
        if not wrong_span and (j in matched or own is not None):
            continue
        body = _body_origin(origins, j, depths)
        if body is not None:
            origins[j] = Origin(body.file, body.line, "inherited", libraries.get(j))
    for j, own in vague.items():
        if origins[j] is None:  # nothing before it: the body line it is like (the lowered text has drifted from the user's)
            origins[j] = _inside_with(own, new[j], source_of)
    # What is left sits in a statement, or replaced the hunk's first line.
    for (i0, j0), (i1, j1) in itertools.pairwise(anchors):
        first = next((before_origins[i] for i in range(i0 + 1, i1) if i < len(before_origins) and before_origins[i] is not None), None)
        for j in range(j0 + 1, j1):
            if origins[j] is None and (new[j].strip() or j in libraries):
                found = enclosing(j) or first
                if found is not None:
                    origins[j] = _allocation(new[j], found, source_of) or Origin(found.file, found.line, "inherited", libraries.get(j))
    return origins


def _inside_with(origin: Origin | None, line: str, source_of: SourceOf) -> Origin | None:
    """TileLang's frontend gives every statement inside a ``with T.ws(...)`` block the ``with``
    line's span: a statement (no ``with`` itself) spanned so is the line of the block's body it
    is most like, when one keeps most of its names."""
    if origin is None or not _names_a_with(origin, line, source_of):
        return origin
    source = source_of(origin.file) or []
    depth = _indent(source[origin.line - 1])
    mine = {_RENAMED_COPY.sub("", token) for token in _tokens(line)}  # the IR's compute_is_done_1 is the user's compute_is_done
    best, score = origin, 0.0
    for number in range(origin.line + 1, len(source) + 1):
        text = source[number - 1]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if _indent(text) <= depth:
            break
        theirs = _tokens(text)
        share = len(mine & theirs) / len(theirs) if theirs else 0.0
        if share >= _INSIDE and share > score:
            best, score = Origin(origin.file, number, "span", columns=None), share
    return best


def _names_a_with(origin: Origin, line: str, source_of: SourceOf) -> bool:
    """A statement's own span names a ``with`` line of the user's (and the statement is no ``with``)."""
    if origin.how != "span" or line.lstrip().startswith("with "):
        return False
    source = source_of(origin.file)
    return bool(source) and 0 < origin.line <= len(source) and bool(_SOURCE_WITH.match(source[origin.line - 1]))


def _body_origin(origins: Origins, j: int, depths: list[int]) -> Origin | None:
    """The one origin of every line nested in line j (None: none, or more than one)."""
    found: Origin | None = None
    for k in range(j + 1, len(depths)):
        if depths[k] < 0:
            continue
        if depths[k] <= depths[j]:
            break
        origin = origins[k]
        if origin is None or (found is not None and (origin.file, origin.line) != (found.file, found.line)):
            return None
        found = found or origin
    return found


def _not_a_header(origin: Origin, source_of: SourceOf) -> bool:
    """The user's line an IR loop's span names is no loop, branch or block of theirs."""
    source = source_of(origin.file)
    if not source or not 0 < origin.line <= len(source):
        return False
    return not _SOURCE_HEADER.match(source[origin.line - 1])


def _loop_head(line: str) -> str:
    """``for k in`` of a loop line (a pass that pipelines or splits a loop rewrites its range, not its variable)."""
    match = _LOOP.match(line)
    return f"\0for {match.group(1)} in" if match else ""


def _descends(
    line: str, removed_by_text: dict[str, list[int]], removed_tokens: list[tuple[int, frozenset[str]]], before_origins: Origins,
    threshold: float, near: int, overall_first: bool = False, loop_heads: bool = True, taken: dict[str, int] | None = None,
    old_lines: list[str] | None = None,
) -> tuple[Origin | None, tuple[float, float]]:  # fmt: skip
    """The origin of the removed line `line` descends from, and how alike the two are as
    (share of the removed line's names it kept, Jaccard of the two); a moved line: (2, 2);
    (None, (0, 0)) when none keeps `threshold` of its names.

    In a hunk the share kept ranks first (a lowered statement gains many names of its own:
    T.copy(A, A_shared) becomes T.tma_load(T.create_tma_descriptor(... A.data ...), ...)).
    Anywhere (``overall_first``) Jaccard does: among all the removed lines, a short one (a
    barrier wait) keeps all its names in almost any long line."""
    key = line.strip()
    if key not in removed_by_text and loop_heads:
        key = _loop_head(line) or "\1"
    moved = removed_by_text.get(key)
    if moved and key != line.strip() and old_lines is not None:
        # `for i in range(2)` (a TMA copy's boxes) is not the user's `for i in T.Parallel(64)` it
        # happens to share a variable with: a rewritten loop keeps its extent or other names.
        mine = _tokens(line)
        moved = [i for i in moved if len(mine & _tokens(old_lines[i])) > 1]
    if moved:
        # The same line removed in several places (two reductions' `for i in T.unroll(4)`): the
        # k-th copy that comes back is the k-th that went, in order; past them, the nearest.
        count = taken.get(key, 0) if taken is not None else len(moved)
        if taken is not None:
            taken[key] = count + 1
        chosen = moved[count] if count < len(moved) else min(moved, key=lambda i: abs(i - near))
        return before_origins[chosen], (2.0, 2.0)
    mine = _tokens(line)
    if not mine:
        return None, (0.0, 0.0)
    best, rank, score = None, (0.0, 0.0, 0.0), (0.0, 0.0)
    for i, theirs in removed_tokens:
        if not theirs:
            continue
        common = len(mine & theirs)
        kept, overall = common / len(theirs), common / len(mine | theirs)
        order = (overall, kept, -abs(i - near)) if overall_first else (kept, overall, -abs(i - near))
        if kept > threshold and order > rank:
            best, rank, score = before_origins[i], order, (kept, overall)
    return best, score
