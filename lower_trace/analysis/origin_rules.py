"""The rules that give each line of one text its origin: from its own span (``standalone``: the
kernel's input), or from the text one pass made it from (``carried``). analysis/origins.py
applies them along a kernel's history.

Facts first, guesses last. A line's origin is, in this order:

1. its own span, when the compiler kept one on the statement it prints and the span names a
   file of the user's (TileLang's frontend puts one on every statement it builds) -- ``span``;
2. the line the pass left as it was (the diff keeps it): that line's origin;
3. the statement it was before the pass, by what the IR says: the same operation on the same
   buffers (``T.initialize_wgmma_descriptor(desc_a, K_tile)`` rewritten, renamed or moved is
   still the descriptor of K_tile; of several alike, the one with the same arguments, else the
   k-th for the k-th), then the same operation on those buffers and more (``T.im2col(data,
   data_shared)`` given a barrier by warp specialisation) -- ``operands``. A statement whose own
   span names TileLang's code is never a removed statement that was not built there (a
   ``T.reduce_max``'s ``max_val[i] = T.max(max_val[i], logits_frag[...])`` is no rewrite of the
   user's ``logits_frag[i, j] = ...max_val[i]...``, though both store to those buffers): rule 4;
4. for a statement TileLang's own code built (its span names the library), the user's statement
   it expands: the block TileLang made of the user's statement it sits in (the ``_gemm_ssr``
   block of a ``T.gemm``, the loops of a ``T.reduce_max``), else the user's statement between the
   spanned statements beside it (``T.reduce_max`` between a ``T.copy`` and a ``T.Parallel``; the
   user's statements read off the file with Python's parser, so a multi-line call's closing line
   is none) -- ``call``. Of several there (two ``T.reduce_sum`` in a row), the k-th start of the
   macro's statements (its first library line again) is the k-th statement's; a block built
   around a statement of one of them is that one's -- ``body``; otherwise a guess;
5. a loop or branch a pass made around one statement's lowering (a TMA copy's boxes): that
   statement's -- ``body``; a buffer's allocation: the user's ``T.alloc_`` line -- ``allocation``;
6. a statement of the pass's hunk that uses buffers one removed statement used, and no other
   (``delta_local[0:2] = delta[...]`` split off ``ds[i] = p[i] * (dp[i] - delta[...])``) --
   ``operands``; sharing a buffer is the weakest fact: when a removed statement of another line,
   outside the hunk, shares more (or as many and is the same operation), the hunk's is a guess;
7. only then guesses, marked ``guess``: the removed line it is most like, the statement it sits in
   (for a loop of the user's: the body line it computes, not the loop's), the hunk's first line.

A span that names TileLang's or TVM's own Python (a macro generator, a template) is kept as the
line's *library* location, second; the line's origin is still the user's line (the call site).
An origin found from a guess stays a guess through every later pass.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from lower_trace.analysis.text_diff import split_lines

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_COMMON = frozenset({"T", "in", "for", "if", "else", "with", "as", "and", "or", "not", "0", "1", "2"})
_LOOP = re.compile(r"\s*for ([A-Za-z_][A-Za-z0-9_]*) in ")
_SIMILAR = 0.4  # the share of a removed line's names a new line keeps, above which it descends from it
_FAR = 0.6  # the same, for a removed line outside the hunk
_RENAMED = (0.8, 0.0)  # a library line at least this like a removed one is that line, renamed (not a new expansion)
_ALLOCATED = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?:: T\.handle\([^)]*\))? = T\.(?:sblock_alloc_buffer|alloc_buffer|decl_buffer|handle_add_byte_offset)\(")
_HEADER = re.compile(r"\s*(?:for|while|if|with) .*:\s*$")  # an IR line with a body
_SOURCE_HEADER = re.compile(r"\s*(?:for|while|if|elif|else|with)\b")
_SOURCE_BLOCK = re.compile(r"\s*(?:with|for)\b")  # a user's line with a body
_RENAMED_COPY = re.compile(r"_\d+$")
_INSIDE = 0.5  # the share of a with-block's body line's names a statement spanned to the with keeps, to be that line


@dataclass(frozen=True)
class Origin:
    file: str
    line: int
    how: str  # how it is known (FACTS, or GUESS): "span": its own span; "operands": the statement it was,
    # by operation and buffers; "call": the user's statement TileLang's code expanded; "body": the statement a
    # loop was built around; "allocation": the user's T.alloc_ line; "error": a failure's own location
    library: tuple[str, int] | None = None  # where in TileLang's / TVM's own code, when a span named it
    columns: tuple[int, int] | None = None  # 1-based column range on that line, when the span has one

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def certain(self) -> bool:
        """Known from what the IR says, not inferred from where a line sits in a diff."""
        return self.how != GUESS

    def known_as(self, how: str, library: tuple[str, int] | None = None) -> Origin:
        """The same place found another way (a guess stays a guess)."""
        return Origin(self.file, self.line, GUESS if self.how == GUESS else how, library, self.columns)


Origins = list[Origin | None]
GUESS = "guess"
FACTS = ("span", "operands", "call", "body", "allocation", "error")


@functools.lru_cache(maxsize=1 << 16)
def _tokens(line: str) -> frozenset[str]:
    """A line's names and numbers (cached: consecutive snapshots share most of their lines)."""
    return frozenset(_TOKEN.findall(line)) - _COMMON


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _own(spans: Spans, i: int) -> tuple[Origin | None, tuple[str, int] | None]:
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
Spans = dict[int, tuple[str, int, bool, tuple[int, int] | None]]  # a text's stored spans by 0-based line (origins.parse_spans)


def _no_source(_file: str) -> list[str] | None:
    return None


def standalone(text: str, spans: Spans, source_of: SourceOf = _no_source) -> Origins:
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
            origins[i] = _call_site(lines, origins, i, libraries, source_of)
    depths = _depths(lines)
    for i in range(len(lines)):
        if origins[i] is None and (i in libraries or lines[i].strip()):
            found = _enclosing(lines, origins, i, depths)
            if found is not None:
                how = "call" if i in libraries and found.certain else GUESS  # TileLang's code in the user's statement
                origins[i] = _allocation(lines[i], found, source_of) or Origin(found.file, found.line, how, libraries.get(i))
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
            return Origin(near.file, min(found, key=lambda number: (abs(number - near.line), number > near.line)), "allocation")
    return None


def _call_site(lines: list[str], origins: Origins, i: int, libraries: dict[int, tuple[str, int]], source_of: SourceOf) -> Origin | None:
    """A statement TileLang's own code built among the user's (``T.reduce_max`` is a macro: its
    statement's span is in reduce_op.py) comes from a user statement between its neighbours: the
    nearest statements beside it, in the same block, with spans of their own. The user's
    statements there are read off the source with Python's parser (a multi-line call's closing
    line is no statement). One of them: that one. Several (two ``T.reduce_sum`` in a row): the
    macro's statements, in order, start again at the same library line for each call; when they
    start as many times as there are statements, the k-th start is the k-th statement's, else
    it is a guess."""
    depth = _indent(lines[i])

    def neighbour(step: int) -> tuple[int, Origin | None]:
        """(index, origin) of the nearest spanned statement at i's depth that way; (the block's edge, None) without one."""
        k = i + step
        while 0 <= k < len(lines):
            if lines[k].strip():
                if _indent(lines[k]) < depth:
                    return k, None  # the block ends
                found = origins[k]
                if _indent(lines[k]) == depth and found is not None and found.how == "span":
                    return k, found
            k += step
        return k, None

    (low, before), (high, after) = neighbour(-1), neighbour(1)
    file = before.file if before is not None else after.file if after is not None else ""
    source = source_of(file) if file else None
    if not source:
        return None
    if after is not None and after.file != file:
        after = None
    candidates = _statements_between(source, before, after)
    if not candidates:
        return None
    library = libraries[i]
    if len(candidates) == 1:
        return Origin(file, candidates[0], "call", library)
    inner = _spanned_inside(lines, origins, i, file)
    if inner in candidates:  # a block TileLang built around a user statement's own: that statement's
        return Origin(file, inner, "body", library)
    # The macro's top-level statements in this gap, in order: a call starts where its first span comes again.
    gap = [libraries[k] for k in range(low + 1, high) if k in libraries and lines[k].strip() and _indent(lines[k]) == depth]
    starts = [n for n, span in enumerate(gap) if span == gap[0]]
    mine = sum(1 for k in range(low + 1, i + 1) if k in libraries and lines[k].strip() and _indent(lines[k]) == depth and libraries[k] == gap[0])
    index = max(0, mine - 1)
    if len(starts) == len(candidates):
        return Origin(file, candidates[index], "call", library)
    return Origin(file, candidates[min(index, len(candidates) - 1)], GUESS, library)


def _spanned_inside(lines: list[str], origins: Origins, i: int, file: str) -> int | None:
    """The one line of `file` that the statements nested in line i certainly come from (None: none,
    or several)."""
    depth, found = _indent(lines[i]), None
    for k in range(i + 1, len(lines)):
        if not lines[k].strip():
            continue
        if _indent(lines[k]) <= depth:
            break
        origin = origins[k]
        if origin is not None and origin.certain and origin.file == file:
            if found is not None and found != origin.line:
                return None
            found = origin.line
    return found


def _statements_between(source: list[str], before: Origin | None, after: Origin | None) -> list[int]:
    """The user's statements after `before`'s (past its last line) and before `after`'s line, in
    `before`'s block (or, without it, in `after`'s, up to it); allocations left out (TileLang hoists
    them: they build no statement there)."""
    starts = _statement_lines(tuple(source))
    if before is not None:
        if before.line > len(source):
            return []
        indent = _indent(source[before.line - 1])
        first = starts.get(before.line, before.line) + 1
        numbers = range(first, after.line if after is not None else len(source) + 1)
    elif after is not None:
        if after.line > len(source):
            return []
        indent = _indent(source[after.line - 1])
        numbers = range(after.line - 1, 0, -1)
    else:
        return []
    found = []
    for number in numbers:
        if number > len(source):
            break
        text = source[number - 1]
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _indent(text) < indent:
            break  # out of the block
        if _indent(text) == indent and (not starts or number in starts) and not _USER_ALLOCATION.match(text):
            found.append(number)
    return found if before is not None else found[::-1]


_USER_ALLOCATION = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_]*\s*=\s*T\.alloc_")


@functools.lru_cache(maxsize=64)
def _statement_lines(source: tuple[str, ...]) -> dict[int, int]:
    """Each statement's first line -> its last (Python's parser on the user's file as traced);
    empty when the file does not parse (then every line at the indentation counts)."""
    try:
        tree = ast.parse("\n".join(source))
    except (SyntaxError, ValueError):
        return {}
    return {node.lineno: node.end_lineno or node.lineno for node in ast.walk(tree) if isinstance(node, ast.stmt)}


def _inside_with(origin: Origin | None, line: str, source_of: SourceOf) -> Origin | None:
    """TileLang's frontend gives every statement inside a ``with T.ws(...)`` block the ``with``
    line's span (and a pass some statements in a loop the loop's): a statement (no block itself)
    spanned so is the line of the block's body it is most like, when one keeps most of its names."""
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
            best, score = Origin(origin.file, number, GUESS, columns=None), share
    return best


def _names_a_with(origin: Origin, line: str, source_of: SourceOf) -> bool:
    """A statement's own span names a ``with`` or ``for`` line of the user's, and the statement is
    no block or loop itself: TileLang spans the statements of a ``T.ws`` block to its ``with``, and
    some a pass builds inside a ``T.Parallel`` loop to the loop. A statement in a loop's body comes
    from the body line it computes, never the loop's line."""
    if origin.how != "span":
        return False
    source = source_of(origin.file)
    if not source or not 0 < origin.line <= len(source):
        return False
    theirs = source[origin.line - 1]
    if _HEADER.match(line):
        # A block TileLang built for one statement of a ``with T.ws(...)`` body (a T.gemm's
        # ``with T.sblock("_gemm_ssr")``) carries the ``with`` line's span too: it is no ``with`` of the user's.
        return line.lstrip().startswith("with T.sblock(") and theirs.lstrip().startswith("with T.ws(")
    return bool(_SOURCE_BLOCK.match(theirs))


def _body_origin(origins: Origins, j: int, depths: list[int], certain: bool = False) -> Origin | None:
    """The one origin of every line nested in line j (None: none, or more than one; with
    `certain`, also when one of them is a guess)."""
    found: Origin | None = None
    for k in range(j + 1, len(depths)):
        if depths[k] < 0:
            continue
        if depths[k] <= depths[j]:
            break
        origin = origins[k]
        if origin is None or (found is not None and (origin.file, origin.line) != (found.file, found.line)) or (certain and not origin.certain):
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
