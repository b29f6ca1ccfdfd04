"""The rules that give each line of one text its origin: from its own span (``standalone``: the
kernel's input), or from the text one pass made it from (``carried``). analysis/origins.py
applies them along a kernel's history.

Facts first, guesses last. A line's origin is, in this order:

1. its own span, when the compiler kept one on the statement it prints and the span names a
   file of the user's (TileLang's frontend puts one on every statement it builds) -- ``span``.
   A span that names a loop or block of the user's (a ``for``, a ``with``) on a statement or a
   branch inside it says where the statement sits, not which line made it: the body line it is
   like, else that line as a guess (a thread's launch under ``with T.Kernel`` excepted);
2. the line the pass left as it was (the diff keeps it): that line's origin; an attribute a call
   of TileLang's language put on the kernel (``T.use_swizzle``'s): that call's line in the
   kernel's function -- ``attribute``;
3. the statement it was before the pass, by what the IR says: the same operation on the same
   buffers (``T.initialize_wgmma_descriptor(desc_a, K_tile)`` rewritten, renamed or moved is
   still the descriptor of K_tile; of several alike, the one with the same arguments, else the
   k-th for the k-th), then the same operation on those buffers and more (``T.im2col(data,
   data_shared)`` given a barrier by warp specialisation) -- ``operands``. A statement whose own
   span names TileLang's code is never a removed statement that was not built there (a
   ``T.reduce_max``'s ``max_val[i] = T.max(max_val[i], logits_frag[...])`` is no rewrite of the
   user's ``logits_frag[i, j] = ...max_val[i]...``, though both store to those buffers): rule 4.
   A statement the pass copied (the pipeliner's prologue, body and epilogue; tl.IfStmtBinding's
   ``if`` per statement) is the line before the pass, kept or not, that is the same up to
   renaming (``block_1: T.int32 = Blocks[k + 1]`` of ``block = Blocks[k]``; ``if 0 <= block_2:``),
   as certain as that one, when all such lines come from one place -- ``copy``; a loop the pass
   rewrote or made more of (warp specialisation's producer and consumer ``for k``) is the removed
   loop of its variable whose user line holds everything its body certainly comes from -- ``copy``;
4. for a statement TileLang's own code built (its span names the library), the user's statement
   it expands (never a loop or block of theirs it merely sits in: a guess): the block TileLang made of the user's statement it sits in (the ``_gemm_ssr``
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
SIMILAR = 0.4  # the share of a removed line's names a new line keeps, above which it descends from it
FAR = 0.6  # the same, for a removed line outside the hunk
_RENAMED = (0.8, 0.0)  # a library line at least this like a removed one is that line, renamed (not a new expansion)
_ALLOCATED = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?:: T\.handle\([^)]*\))? = T\.(?:sblock_alloc_buffer|alloc_buffer|decl_buffer|handle_add_byte_offset)\(")
HEADER = re.compile(r"\s*(?:for|while|if|with) .*:\s*$")  # an IR line with a body
_SOURCE_HEADER = re.compile(r"\s*(?:for|while|if|elif|else|with)\b")
_SOURCE_BLOCK = re.compile(r"\s*(?:with|for)\b")  # a user's line with a body
BRANCH = re.compile(r"\s*(?:if|elif|while) ")
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
COPY = "copy"  # a copy a pass made of a statement (pipelining, unrolling, a guard split per statement)
LET = "let"  # the assignment TileLang inlined into the statement codegen printed it in front of
FACTS = ("span", "operands", COPY, "call", "body", "allocation", "attribute", LET, "error")


@functools.lru_cache(maxsize=1 << 16)
def name_tokens(line: str) -> frozenset[str]:
    """A line's names and numbers (cached: consecutive snapshots share most of their lines)."""
    return frozenset(_TOKEN.findall(line)) - _COMMON


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def own_span(spans: Spans, i: int) -> tuple[Origin | None, tuple[str, int] | None]:
    span = spans.get(i)
    if span is None:
        return None, None
    file, line, library, columns = span
    if library:
        return None, (file, line)
    return Origin(file, line, "span", columns=columns), None


def indent_depths(lines: list[str]) -> list[int]:
    """Each line's indentation; -1 for a blank line (it encloses nothing)."""
    return [len(line) - len(line.lstrip(" ")) if line.strip() else -1 for line in lines]


def enclosing_origin(lines: list[str], origins: Origins, i: int, depths: list[int] | None = None) -> Origin | None:
    """The origin of the nearest line above i that is less indented (the statement i sits in)."""
    depths = depths if depths is not None else indent_depths(lines)
    depth = _indent(lines[i])
    for k in range(i - 1, -1, -1):
        if 0 <= depths[k] < depth:
            depth = depths[k]
            if origins[k] is not None:
                return origins[k]
    return None


SourceOf = Callable[[str], "list[str] | None"]  # a user's file's lines as traced (None: not stored)
Spans = dict[int, tuple[str, int, bool, tuple[int, int] | None]]  # a text's stored spans by 0-based line (origins.parse_spans)


def no_source(_file: str) -> list[str] | None:
    return None


def standalone(text: str, spans: Spans, source_of: SourceOf = no_source) -> Origins:
    """A text's origins from its own spans alone (the kernel's input; a text outside the history)."""
    lines = split_lines(text)
    origins: Origins = [None] * len(lines)
    libraries: dict[int, tuple[str, int]] = {}
    for i in range(len(lines)):
        origins[i], library = own_span(spans, i)
        origins[i] = _inside_with(origins[i], lines[i], source_of)
        if library is not None:
            libraries[i] = library
    for i in range(len(lines)):
        if origins[i] is None and i in libraries:
            origins[i] = call_site(lines, origins, i, libraries, source_of)
    for i in range(len(lines)):
        if origins[i] is None and "T.attr(" in lines[i]:
            origins[i] = attribute_origin(lines[i], origins, source_of)
    depths = indent_depths(lines)
    for i in range(len(lines)):
        if origins[i] is None and (i in libraries or lines[i].strip()):
            found = enclosing_origin(lines, origins, i, depths)
            if found is not None:
                # TileLang's code in the user's statement; in their loop or block, it only sits there
                how = "call" if i in libraries and found.certain and not names_a_block(found, source_of) else GUESS
                origins[i] = allocation_line(lines[i], found, source_of) or Origin(found.file, found.line, how, libraries.get(i))
    return origins


# Attributes TileLang's language puts on a kernel, by key, and the call that puts each (AttrStmts
# carry no span: the call's line is read off the user's file).
_ATTRIBUTE_CALLS = {
    "threadblock_swizzle_pattern": "use_swizzle",
    "tl.min_blocks_per_sm": "annotate_min_blocks_per_sm",
    "tl.ws_pipeline_depth": "annotate_ws_pipeline_depth",
}
_ATTRIBUTE = re.compile(r'\s*(?:with )?T\.attr\([^,]*, "([^"]+)"')


def attribute_origin(line: str, origins: Origins, source_of: SourceOf) -> Origin | None:
    """An attribute a call of TileLang's language put on the kernel (``T.use_swizzle(4)`` becomes
    ``T.attr(None, "threadblock_swizzle_pattern", ...)``): the one line of the user's file that makes
    that call inside the function the kernel's certain lines are in. None when it is no such
    attribute, or the file has no such call there, or several."""
    match = _ATTRIBUTE.match(line)
    call = _ATTRIBUTE_CALLS.get(match.group(1)) if match else None
    if call is None:
        return None
    used: dict[str, set[int]] = {}
    for origin in origins:
        if origin is not None and origin.certain:
            used.setdefault(origin.file, set()).add(origin.line)
    found: set[tuple[str, int]] = set()
    pattern = re.compile(rf"\b{call}\(")
    for file, lines in used.items():
        source = source_of(file)
        if not source:
            continue
        functions = _functions(tuple(source))
        kernel = {span for span in functions if any(span[0] <= line <= span[1] for line in lines)}
        for number, text in enumerate(source, start=1):
            if pattern.search(text) and not text.lstrip().startswith("#"):
                innermost = min((span for span in functions if span[0] <= number <= span[1]), key=lambda span: span[1] - span[0], default=None)
                if innermost in kernel:
                    found.add((file, number))
    if len(found) != 1:
        return None
    file, number = found.pop()
    return Origin(file, number, "attribute")


@functools.lru_cache(maxsize=64)
def parsed(source: tuple[str, ...]) -> ast.Module | None:
    """The user's file as Python's ast (None when it does not parse)."""
    try:
        return ast.parse("\n".join(source))
    except (SyntaxError, ValueError):
        return None


@functools.lru_cache(maxsize=64)
def _functions(source: tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    """(first line, last line) of every function of the user's file (empty when it does not parse)."""
    tree = parsed(source)
    if tree is None:
        return ()
    return tuple((node.lineno, node.end_lineno or node.lineno) for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))


@functools.lru_cache(maxsize=1024)
def _only_statement(source: tuple[str, ...], line: int) -> int | None:
    """The first line of the one statement of the body of the user's loop on `line` (None when the
    loop has more, or there is no loop there)."""
    tree = parsed(source)
    loop = next((node for node in ast.walk(tree) if isinstance(node, ast.For | ast.While) and node.lineno == line), None) if tree else None
    return loop.body[0].lineno if loop is not None and len(loop.body) == 1 and not loop.orelse else None


def allocation_line(line: str, near: Origin, source_of: SourceOf) -> Origin | None:
    """A buffer's allocation (a block's field, printed as ``frag = T.sblock_alloc_buffer(...)``, or
    an allocation a pass moved or made again, ``scores_sum = T.decl_buffer(...)``, has no span of
    its own): the user's ``frag = T.alloc_...`` line in near's file nearest near's line (the
    statement it sits in, or the line it was found like)."""
    match = _ALLOCATED.match(line)
    return allocation_of(match.group(1), near, source_of) if match else None


def allocation_of(name: str, near: Origin, source_of: SourceOf) -> Origin | None:
    """The user's ``name = T.alloc_...`` line in near's file nearest near's line."""
    source = source_of(near.file)
    if not source:
        return None
    for candidate in dict.fromkeys((name, re.sub(r"_\d+$", "", name))):  # TVM renames a copy A_shared_1
        wanted = re.compile(rf"\s*{re.escape(candidate)}\s*=\s*T\.alloc_")
        found = [number for number in range(1, len(source) + 1) if wanted.match(source[number - 1])]
        if found:  # two kernels in one file may name their buffers alike: the one nearest
            return Origin(near.file, min(found, key=lambda number: (abs(number - near.line), number > near.line)), "allocation")
    return None


def call_site(lines: list[str], origins: Origins, i: int, libraries: dict[int, tuple[str, int]], source_of: SourceOf) -> Origin | None:
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
    candidates = statements_between(source, before, after)
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


def statements_between(source: list[str], before: Origin | None, after: Origin | None) -> list[int]:
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
    spanned so is the line of the block's body it is most like, when one keeps most of its names;
    else the block's line, as a guess (see contained)."""
    if origin is None or not names_a_with(origin, line, source_of):
        return origin
    return like_body_line(origin, line, source_of) or contained(origin, line)


def like_body_line(origin: Origin, line: str, source_of: SourceOf) -> Origin | None:
    """The line of the body of the user's block or loop `origin` names that `line` is most like
    (keeps most of its names): a guess, unless it is the loop's one statement; None when none is."""
    source = source_of(origin.file) or []
    if not 0 < origin.line <= len(source):
        return None
    depth = _indent(source[origin.line - 1])
    mine = {_RENAMED_COPY.sub("", token) for token in name_tokens(line)}  # the IR's compute_is_done_1 is the user's compute_is_done
    best, score = None, 0.0
    for number in range(origin.line + 1, len(source) + 1):
        text = source[number - 1]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if _indent(text) <= depth:
            break
        theirs = name_tokens(text)
        share = len(mine & theirs) / len(theirs) if theirs else 0.0
        if share >= _INSIDE and share > score:
            best, score = Origin(origin.file, number, GUESS, columns=None), share
    if best is not None and origin.certain and _only_statement(tuple(source), origin.line) == best.line:
        # The loop's one statement (a multi-line `acc_s[i, j] = T.if_then_else(...)` in a T.Parallel
        # is spanned to the loop): no other line of the user's it can be.
        return Origin(origin.file, best.line, "body")
    return best


_THREAD_LAUNCH = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_]*(?:: [^=]+)? = T\.launch_thread")


def contained(origin: Origin, line: str) -> Origin:
    """A statement whose span names a loop or block of the user's that only contains it: that line,
    but as a guess -- the span says where the statement is, not which line made it. A thread's
    launch spanned to ``with T.Kernel(...)`` is that line's own (the kernel launches its threads)."""
    if origin.how == "span" and _THREAD_LAUNCH.match(line):
        return origin
    return Origin(origin.file, origin.line, GUESS, origin.library, origin.columns)


def names_a_with(origin: Origin, line: str, source_of: SourceOf) -> bool:
    """A statement's own span names a ``with``, ``for`` or ``if`` line of the user's, and the statement is
    no block or loop itself: TileLang spans the statements of a ``T.ws`` block to its ``with``, and
    some a pass builds inside a ``T.Parallel`` loop to the loop. A statement in a loop's body comes
    from the body line it computes, never the loop's line."""
    if origin.how != "span":
        return False
    source = source_of(origin.file)
    if not source or not 0 < origin.line <= len(source):
        return False
    theirs = source[origin.line - 1]
    if HEADER.match(line):
        if _another_loops(line, theirs):
            return True
        if BRANCH.match(line):
            # A branch spanned to a loop or block of the user's (a pass rebuilt a pipelined copy of the
            # user's `if` with the loop's span): the loop only contains it.
            return bool(_SOURCE_BLOCK.match(theirs))
        # A block TileLang built for one statement of a ``with T.ws(...)`` body (a T.gemm's
        # ``with T.sblock("_gemm_ssr")``) carries the ``with`` line's span too: it is no ``with`` of the user's.
        return line.lstrip().startswith("with T.sblock(") and theirs.lstrip().startswith("with T.ws(")
    # A statement a pass rebuilt inside a user's `if` (the store LegalizeSafeMemoryAccess guards anew)
    # may carry the `if`'s span: the branch only contains it (unless the user wrote `if c: x = 1`).
    return bool(_SOURCE_BLOCK.match(theirs) or (BRANCH.match(theirs) and theirs.split("#")[0].rstrip().endswith(":")))


def _another_loops(line: str, theirs: str) -> bool:
    """A loop spanned to a user's sequential loop of other variables: a pass rebuilt an inner loop
    (a T.Parallel's ``for i in T.unroll(4)``) with the span of the loop around it (``for bk_i in
    T.Pipelined``). A T.Parallel's own partitioned, vectorised or fused loops (``for vec``,
    ``i_j_fused``) are still the user's."""
    mine, written = loop_variables(line), loop_variables(theirs)
    if not mine or not written or "T.Parallel(" in theirs:
        return False
    return mine[0] not in written and not any(mine[0].startswith(name + "_") for name in written)


def body_origin(origins: Origins, j: int, depths: list[int], certain: bool = False) -> Origin | None:
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


def names_a_block(origin: Origin, source_of: SourceOf) -> bool:
    """The user's line `origin` names is a loop, branch or block (it has a body)."""
    source = source_of(origin.file)
    return bool(source) and 0 < origin.line <= len(source) and bool(_SOURCE_HEADER.match(source[origin.line - 1]))


def not_a_header(origin: Origin, source_of: SourceOf) -> bool:
    """The user's line an IR loop's span names is no loop, branch or block of theirs."""
    source = source_of(origin.file)
    if not source or not 0 < origin.line <= len(source):
        return False
    return not _SOURCE_HEADER.match(source[origin.line - 1])


_LOOP_VARIABLES = re.compile(r"\s*for ([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*) in ")


def loop_variables(line: str) -> tuple[str, ...]:
    """The variables a ``for`` line binds (``for i, j in T.grid(...)``: i and j), TVM's copy suffixes dropped."""
    match = _LOOP_VARIABLES.match(line)
    return tuple(_RENAMED_COPY.sub("", name.strip()) for name in match.group(1).split(",")) if match else ()


def encloses(source: list[str], outer: int, lines: list[int]) -> bool:
    """Every one of `lines` (1-based) is in the body of the user's line `outer`, by indentation."""
    if not 0 < outer <= len(source) or not lines:
        return False
    depth, end = _indent(source[outer - 1]), outer
    for number in range(outer + 1, len(source) + 1):
        text = source[number - 1]
        if text.strip() and not text.lstrip().startswith("#") and _indent(text) <= depth:
            break
        end = number
    return all(outer < line <= end for line in lines)


def direct_statement(source: list[str], block: int, line: int) -> int:
    """The statement of the body of the user's `block` line that holds `line` (`line` itself, or
    the loop or branch of that body it is nested in)."""
    body = next((_indent(source[n - 1]) for n in range(block + 1, len(source) + 1) if source[n - 1].strip() and not source[n - 1].lstrip().startswith("#")), 0)
    for number in range(line, block, -1):
        text = source[number - 1]
        if text.strip() and not text.lstrip().startswith("#") and _indent(text) <= body:
            return number
    return line


def loop_head(line: str) -> str:
    """``for k in`` of a loop line (a pass that pipelines or splits a loop rewrites its range, not its variable)."""
    match = _LOOP.match(line)
    return f"\0for {match.group(1)} in" if match else ""


def descends_from(
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
        key = loop_head(line) or "\1"
    moved = removed_by_text.get(key)
    if moved and key != line.strip() and old_lines is not None:
        # `for i in range(2)` (a TMA copy's boxes) is not the user's `for i in T.Parallel(64)` it
        # happens to share a variable with: a rewritten loop keeps its extent or other names.
        mine = name_tokens(line)
        moved = [i for i in moved if len(mine & name_tokens(old_lines[i])) > 1]
    if moved:
        # The same line removed in several places (two reductions' `for i in T.unroll(4)`): the
        # k-th copy that comes back is the k-th that went, in order; past them, the nearest.
        count = taken.get(key, 0) if taken is not None else len(moved)
        if taken is not None:
            taken[key] = count + 1
        chosen = moved[count] if count < len(moved) else min(moved, key=lambda i: abs(i - near))
        return before_origins[chosen], (2.0, 2.0)
    mine = name_tokens(line)
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
