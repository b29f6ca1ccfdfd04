"""Why two compiles' code differs, explained from the final code back (regress's cause).

Pure over stored traces (no TVM). The final generated sources and the final TIR of the two
sides are diffed as the comparison compared them (its normalisation, and the renamings it
equated); each line that differs is given the pass that wrote it on its side -- blame's answer
(analysis/blame.py: the pass that last changed the line; a source line, the pass that wrote the
TIR line codegen made it from). The lines are grouped by pass and the passes ranked by how many
differing lines they explain. Then one step back: where the lines such a pass transformed (its
input lines that the edit replaced) already differed from the other side's input to the same
pass, the passes that wrote those input lines are named -- cause and effect, not only the last
writer. Across releases the pipelines part at once, so the first divergence says nothing; this
says which pass wrote the lines a user sees differ.
"""

from __future__ import annotations

import bisect
import collections
import json
from collections.abc import Callable
from dataclasses import dataclass

from lower_trace.analysis.blame import Change, history
from lower_trace.analysis.compare import Comparison, compiled, short_name
from lower_trace.analysis.renaming import rename
from lower_trace.analysis.text_diff import myers, split_lines, unkept
from lower_trace.model import CodegenRecord, KernelTrace, PassRecord, Trace

TIR = "TIR"  # where a line is: the final TIR, else "<role> source"
CODEGEN = "codegen"  # the writer of a source line no TIR line made (a brace, a declaration)
FRONTEND = "frontend"  # the writer of a line that was in the IR before any pass ran
UPSTREAM_SHOWN = 3  # one step back: the writers named per pass, most lines first
_CACHED = 64  # kernels whose blame is kept (a corpus is compared kernel by kernel)


@dataclass(frozen=True)
class DifferingLine:
    """A line of one side's final code that the other side's lacks."""

    where: str  # "device source", "host source" or TIR
    line: int  # 1-based, in the text as compared (the comparison page shows the same)
    text: str
    by: PassRecord | None  # the pass that wrote it; None: codegen or the frontend (the group says which)


@dataclass(frozen=True)
class Upstream:
    """One step back: a pass that wrote input lines that already differed where a later pass transformed them."""

    name: str
    base: int  # such input lines on base
    head: int

    @property
    def lines(self) -> int:
        return self.base + self.head


@dataclass(frozen=True)
class PassCause:
    """The differing lines one pass wrote, on each side."""

    name: str  # the pass (head's spelling where it ran there), CODEGEN or FRONTEND
    base: tuple[DifferingLine, ...]  # base's differing lines it wrote
    head: tuple[DifferingLine, ...]
    base_runs: tuple[PassRecord, ...]  # every run of the pass on that side (empty: it did not run there)
    head_runs: tuple[PassRecord, ...]
    # Whether the lines it transformed already differed from the other side's input to it: True
    # (upstream says who wrote them), False (the same input lines, other output: the pass itself),
    # None (not comparable: it ran on one side only, or it is codegen or the frontend).
    input_differs: bool | None
    upstream: tuple[Upstream, ...] = ()

    @property
    def lines(self) -> int:
        return len(self.base) + len(self.head)

    @property
    def is_pass(self) -> bool:
        return self.name not in (CODEGEN, FRONTEND)

    def writers(self, side: int) -> tuple[PassRecord, ...]:
        """The runs that wrote this side's lines (a pass that runs several times: those that did), in order."""
        lines = self.base if side == 0 else self.head
        return tuple(sorted({line.by.seq: line.by for line in lines if line.by is not None}.values(), key=lambda p: p.seq))


@dataclass(frozen=True)
class RegressCause:
    """Why the final code differs: every writer of a differing line, most lines explained first."""

    passes: tuple[PassCause, ...]
    base_lines: int  # differing lines on base, in all
    head_lines: int
    wheres: tuple[str, ...]  # the texts that differ (device source, host source, TIR)

    @property
    def top(self) -> PassCause | None:
        return self.passes[0] if self.passes else None


# --- one kernel's blame, with where each line was written ------------------------------------


class KernelBlame:
    """A kernel's history (blame.history) and, for each text on it, where each line was written:
    (change index, line in that change's `after`); change -1: the input, before any pass."""

    def __init__(self, kernel: KernelTrace, text_of: Callable[[str], str]) -> None:
        self.changes: list[Change] = history(kernel, text_of)
        self.written: dict[str, list[tuple[int, int]]] = {}
        self._lines: dict[str, list[str]] = {}
        self._matches: dict[int, tuple[list[int], list[int]]] = {}
        self._content: dict[int, tuple[list[str], list[str]]] = {}
        if not self.changes:
            return
        first = self.changes[0].before
        seen = {first: [(-1, i) for i in range(len(self.lines(first)))]}
        lines, owners = self.lines(first), seen[first]
        for n, change in enumerate(self.changes):  # blame_lines' walk, keeping places, not passes
            if change.before in seen:
                lines, owners = self.lines(change.before), seen[change.before]
            new = self.lines(change.after)
            if change.by is None and change.after in seen:  # back to an IR seen before (the host/device split)
                lines, owners = new, seen[change.after]
                continue
            kept = [(n, j) for j in range(len(new))]
            pairs = myers(self.content(lines), self.content(new))
            if lines is self.lines(change.before):  # the diff transformed() reads
                self._matches[n] = ([i for i, _ in pairs], [j for _, j in pairs])
            for i, j in pairs:
                kept[j] = owners[i]
            _moved(self.content(lines), self.content(new), pairs, owners, kept)
            lines, owners = new, kept
            seen[change.after] = owners  # a text made again (a pass undoing another): its latest writers, as blame says
        self.written = seen

    def lines(self, text: str) -> list[str]:
        found = self._lines.get(text)
        if found is None:
            found = self._lines[text] = split_lines(text)
        return found

    def content(self, lines: list[str]) -> list[str]:
        """Lines without their indentation: a pass that only re-nests a statement did not write it."""
        key = id(lines)
        found = self._content.get(key)
        if found is None or found[0] is not lines:
            found = self._content[key] = (lines, [line.strip() for line in lines])
        return found[1]

    def writer(self, at: tuple[int, int]) -> PassRecord | None:
        return self.changes[at[0]].by if at[0] >= 0 else None

    def transformed(self, at: tuple[int, int]) -> range:
        """The input lines (of changes[n].before) that the edit which wrote line j replaced: the
        lines between the unchanged ones around it. Empty for a line the pass inserted."""
        n, j = at
        if n not in self._matches:
            change = self.changes[n]
            pairs = myers(self.content(self.lines(change.before)), self.content(self.lines(change.after)))
            self._matches[n] = ([i for i, _ in pairs], [jj for _, jj in pairs])
        olds, news = self._matches[n]
        k = bisect.bisect_left(news, j)
        start = olds[k - 1] + 1 if k > 0 else 0
        end = olds[k] if k < len(olds) else len(self.lines(self.changes[n].before))
        return range(start, end)


def _moved(old: list[str], new: list[str], pairs: list[tuple[int, int]], owners: list[tuple[int, int]], kept: list[tuple[int, int]]) -> None:
    """A line the diff calls removed in one place and added in another was moved, not written: it
    keeps where it was written (a pass that reorders allocations did not write them)."""
    if len(pairs) == len(old) or len(pairs) == len(new):
        return  # nothing removed, or nothing added: nothing moved
    removed: dict[str, collections.deque[tuple[int, int]]] = {}
    kept_old = {i for i, _ in pairs}
    kept_new = {j for _, j in pairs}
    for i, text in enumerate(old):
        if i not in kept_old and text:
            removed.setdefault(text, collections.deque()).append(owners[i])
    for j, text in enumerate(new):
        if j not in kept_new and removed.get(text):
            kept[j] = removed[text].popleft()


_BLAMES: collections.OrderedDict[tuple[str, str], tuple[KernelTrace, KernelBlame]] = collections.OrderedDict()


def kernel_blame(trace: Trace, kernel: KernelTrace) -> KernelBlame:
    """KernelBlame of a stored kernel, computed once (kept for the last _CACHED kernels)."""
    key = (trace.path, kernel.kernel_id)
    found = _BLAMES.get(key)
    if found is not None and found[0] is kernel:
        _BLAMES.move_to_end(key)
        return found[1]
    blame = KernelBlame(kernel, trace.snapshot)
    _BLAMES[key] = (kernel, blame)
    while len(_BLAMES) > _CACHED:
        _BLAMES.popitem(last=False)
    return blame


# --- the two sides ----------------------------------------------------------------------------


class _Side:
    """One side's texts as the comparison compared them, line for line with the stored text."""

    def __init__(self, index: int, trace: Trace, kernel: KernelTrace, result: Comparison) -> None:
        self.index, self.trace, self.kernel, self.result = index, trace, kernel, result
        self.blame = kernel_blame(trace, kernel)
        self.renamed = dict(result.renamed) if index == 1 else {}
        self.digest_of: dict[str, str] = {}
        for record in kernel.passes:
            for digest in (record.before, record.after):
                if digest:
                    self.digest_of.setdefault(trace.snapshot(digest), digest)
        self._compared: dict[str, list[str]] = {}
        self._contents: dict[str, set[str]] = {}

    def compared(self, digest: str) -> list[str]:
        """The text's lines after the comparison's normalisation; the stored lines where that
        would not keep them line for line (a module reordered, an ignored match across lines)."""
        if digest not in self._compared:
            raw = split_lines(self.trace.snapshot(digest)) if digest else []
            norm = split_lines(rename(self.result.text(self.index, digest), self.renamed)) if digest else []
            self._compared[digest] = norm if len(norm) == len(raw) else raw
        return self._compared[digest]

    def contents(self, digest: str) -> set[str]:
        """The set of the compared text's lines, indentation aside."""
        if digest not in self._contents:
            self._contents[digest] = {line.strip() for line in self.compared(digest)}
        return self._contents[digest]

    def compared_text(self, text: str) -> list[str]:
        digest = self.digest_of.get(text)
        return self.compared(digest) if digest else split_lines(text)


def _last_steps(kernel: KernelTrace) -> dict[str, CodegenRecord]:
    """The last codegen step of each role (device first)."""
    last: dict[str, CodegenRecord] = {}
    for step in sorted(kernel.codegen, key=lambda s: s.seq):
        last[step.role] = step
    return dict(sorted(last.items(), key=lambda item: item[0] != "device"))


def _tir_lines(side: _Side, step: CodegenRecord) -> list[int]:
    if not step.line_map:
        return []
    try:
        return [int(n) for n in json.loads(side.trace.snapshot(step.line_map))["tir_lines"]]
    except (ValueError, KeyError, TypeError, LookupError):
        return []


def _differing(a: list[str], b: list[str]) -> tuple[list[int], list[int]]:
    """The lines of each side that a minimal diff of their content (indentation aside) does not keep."""
    return unkept([line.strip() for line in a], [line.strip() for line in b])


# A differing line and where it was written: (change index, line) on its side's history, or None
# (codegen made it, or the TIR it came from is not on the history).
_Found = tuple[DifferingLine, tuple[int, int] | None]


def _final_lines(sides: tuple[_Side, _Side]) -> tuple[list[list[_Found]], list[str]]:
    """Each side's differing lines of the final sources and TIR, with where each was written."""
    found: list[list[_Found]] = [[], []]
    wheres: list[str] = []
    steps = [_last_steps(side.kernel) for side in sides]
    texts: list[tuple[str, str, str]] = [(f"{role} source", role, "source") for role in dict.fromkeys([*steps[0], *steps[1]])]
    texts.append((TIR, "device" if "device" in steps[0] and "device" in steps[1] else next(iter(steps[0]), ""), "tir"))
    for where, role, what in texts:
        pair = [steps[k].get(role) for k in (0, 1)]
        digests = ["" if s is None else compiled(s) if what == "source" else s.tir for s in pair]
        lines = [sides[k].compared(digests[k]) for k in (0, 1)]
        differ = _differing(*lines)
        if not differ[0] and not differ[1]:
            continue
        wheres.append(where)
        for k, side in enumerate(sides):
            step = pair[k]
            tir_text = side.trace.snapshot(step.tir) if step is not None and step.tir else ""
            written = side.blame.written.get(tir_text, [])
            tir_lines = _tir_lines(side, step) if step is not None and what == "source" else []
            for i in differ[k]:
                at: tuple[int, int] | None = None
                if what == "tir":
                    at = written[i] if i < len(written) else None
                elif i < len(tir_lines) and 0 < tir_lines[i] <= len(written):
                    at = written[tir_lines[i] - 1]
                by = side.blame.writer(at) if at is not None else None
                found[k].append((DifferingLine(where, i + 1, lines[k][i], by), at))
    return found, wheres


def _group(line: DifferingLine, at: tuple[int, int] | None) -> str:
    if line.by is not None:
        return short_name(line.by.name)
    return FRONTEND if at is not None else CODEGEN


def explain(base: tuple[Trace, KernelTrace], head: tuple[Trace, KernelTrace], result: Comparison) -> RegressCause | None:
    """Why the two kernels' final code differs (see the module doc); None where it does not."""
    sides = (_Side(0, *base, result), _Side(1, *head, result))
    found, wheres = _final_lines(sides)
    if not found[0] and not found[1]:
        return None
    partner: dict[tuple[int, int], PassRecord] = {}  # (side, seq) -> the aligned pass on the other side
    for row in result.rows:
        if row.a is not None and row.b is not None:
            partner[(0, row.a.seq)], partner[(1, row.b.seq)] = row.b, row.a
    groups: dict[str, list[list[_Found]]] = {}
    for k in (0, 1):
        for item in found[k]:
            groups.setdefault(_group(*item), [[], []])[k].append(item)
    causes = [_cause(name, per_side, sides, partner) for name, per_side in groups.items()]
    causes.sort(key=lambda c: (-c.lines, not c.is_pass, c.name))
    return RegressCause(tuple(causes), len(found[0]), len(found[1]), tuple(wheres))


def _cause(name: str, per_side: list[list[_Found]], sides: tuple[_Side, _Side], partner: dict[tuple[int, int], PassRecord]) -> PassCause:
    runs: list[tuple[PassRecord, ...]] = [(), ()]
    if name not in (CODEGEN, FRONTEND):
        runs = [tuple(p for p in side.kernel.passes if short_name(p.name) == name) for side in sides]
    upstream = _UpstreamCount()
    for k in (0, 1):
        upstream.count_side(k, per_side[k], sides, partner)
    return PassCause(
        _shown_name(name, runs),
        tuple(line for line, _ in per_side[0]),
        tuple(line for line, _ in per_side[1]),
        runs[0],
        runs[1],
        upstream.input_differs(),
        upstream.steps(),
    )


def _shown_name(name: str, runs: list[tuple[PassRecord, ...]]) -> str:
    """The pass as head ran it, else as base did, else the short name."""
    for k in (1, 0):
        if runs[k]:
            return runs[k][0].name
    return name


class _UpstreamCount:
    """One step back from a pass's differing lines: the lines of its input they were made from
    that the other side's input to the pass lacks, counted per their writer and side."""

    def __init__(self) -> None:
        self.upstream: list[collections.Counter[str]] = [collections.Counter(), collections.Counter()]
        self.spelled: dict[str, str] = {}  # short name -> the name as a side ran it
        self.compared = self.differed = False

    def count_side(self, k: int, found: list[_Found], sides: tuple[_Side, _Side], partner: dict[tuple[int, int], PassRecord]) -> None:
        side, other = sides[k], sides[1 - k]
        looked: set[tuple[int, int]] = set()  # input lines already looked at: a hunk writes several lines
        for _line, at in found:
            if at is None or at[0] < 0:
                continue
            change = side.blame.changes[at[0]]
            counterpart = partner.get((k, change.by.seq)) if change.by is not None else None
            if counterpart is None or not counterpart.before:
                continue
            self.compared = True
            self._count_inputs(k, side, at, change, other.contents(counterpart.before), looked)

    def _count_inputs(self, k: int, side: _Side, at: tuple[int, int], change: Change, theirs: set[str], looked: set[tuple[int, int]]) -> None:
        """The input lines the change transformed into the line at `at` that the other side's input lacks."""
        mine = side.compared_text(change.before)
        owners = side.blame.written.get(change.before, [])
        for i in side.blame.transformed(at):
            if (at[0], i) in looked or i >= len(mine) or mine[i].strip() in theirs:
                continue
            looked.add((at[0], i))
            self.differed = True
            by = side.blame.writer(owners[i]) if i < len(owners) else None
            key = short_name(by.name) if by is not None else FRONTEND
            self.spelled.setdefault(key, by.name if by is not None else FRONTEND)
            self.upstream[k][key] += 1

    def input_differs(self) -> bool | None:
        return True if self.differed else False if self.compared else None

    def steps(self) -> tuple[Upstream, ...]:
        """The writers, most lines first, the first UPSTREAM_SHOWN."""
        upstream = self.upstream
        names = sorted(set(upstream[0]) | set(upstream[1]), key=lambda n: (-(upstream[0][n] + upstream[1][n]), n))
        return tuple(Upstream(self.spelled[n], upstream[0][n], upstream[1][n]) for n in names[:UPSTREAM_SHOWN])
