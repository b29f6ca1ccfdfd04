"""Pure text diffs between two snapshots: hunks and line stats.

No ANSI and no HTML here: renderers decide how a diff looks. Diffs are computed
when something renders them, never in the compiler's hot path.
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class DiffLine:
    tag: str  # " " context, "-" removed, "+" added
    text: str
    old_no: int | None = None  # 1-based line numbers, None where the side has no line
    new_no: int | None = None


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[DiffLine, ...]

    @property
    def header(self) -> str:
        """As diff -u writes it: an empty side's range starts at the line before (-0,0 at the top)."""
        old_start = self.old_start if self.old_len else self.old_start - 1
        new_start = self.new_start if self.new_len else self.new_start - 1
        return f"@@ -{old_start},{self.old_len} +{new_start},{self.new_len} @@"


@dataclass(frozen=True)
class DiffStats:
    added: int
    removed: int

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


class _MinimalMatcher(difflib.SequenceMatcher):
    """difflib's opcodes and hunk groups over the page's matching (myers: minimal, the page's ties),
    so the terminal's counts and hunks are the report's (difflib's own matching is not minimal and
    breaks ties otherwise)."""

    def __init__(self, old: list[str], new: list[str]) -> None:
        super().__init__(None, old, new, autojunk=False)
        self._old, self._new = old, new

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self.matching_blocks is None:
            blocks: list[list[int]] = []
            for i, j in myers(self._old, self._new):
                if blocks and blocks[-1][0] + blocks[-1][2] == i and blocks[-1][1] + blocks[-1][2] == j:
                    blocks[-1][2] += 1
                else:
                    blocks.append([i, j, 1])
            self.matching_blocks = [difflib.Match(*block) for block in blocks] + [difflib.Match(len(self._old), len(self._new), 0)]
        return self.matching_blocks


@lru_cache(maxsize=64)  # stats() and hunks() of one pass share one matcher
def _matcher(before: str, after: str) -> tuple[list[str], list[str], difflib.SequenceMatcher]:
    old = split_lines(before)  # lines as the page splits them
    new = split_lines(after)
    return old, new, _MinimalMatcher(old, new)


def stats(before: str, after: str) -> DiffStats:
    """Lines added and removed going from before to after."""
    if before == after:
        return DiffStats(0, 0)
    _, _, matcher = _matcher(before, after)
    added = removed = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return DiffStats(added, removed)


def hunks(before: str, after: str, context: int = 3) -> list[Hunk]:
    """Unified-diff hunks with `context` unchanged lines around each change."""
    if before == after:
        return []
    old, new, matcher = _matcher(before, after)
    result = []
    for group in matcher.get_grouped_opcodes(context):
        lines: list[DiffLine] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines.extend(DiffLine(" ", old[i], i + 1, j1 + (i - i1) + 1) for i in range(i1, i2))
                continue
            if tag in ("replace", "delete"):
                lines.extend(DiffLine("-", old[i], i + 1, None) for i in range(i1, i2))
            if tag in ("replace", "insert"):
                lines.extend(DiffLine("+", new[j], None, j + 1) for j in range(j1, j2))
        first, last = group[0], group[-1]
        result.append(
            Hunk(
                old_start=first[1] + 1,
                old_len=last[2] - first[1],
                new_start=first[3] + 1,
                new_len=last[4] - first[3],
                lines=tuple(lines),
            )
        )
    return result


def split_lines(text: str) -> list[str]:
    """Lines as the page splits them (at line feeds only; no empty last line), where the two must agree."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# The page's budget (assets/diff.js): past it, a whole replacement is shown instead.
_MYERS_BUDGET = 4e7


def myers(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[int, int]]:
    """The (i, j) pairs with a[i] == b[j] that a minimal edit script keeps (Myers' O(ND)).

    The same algorithm, tie-breaks and budget as the page's ``LTDiff.myers``, so the
    terminal and the report blame and align alike (difflib is not minimal and breaks
    ties otherwise).
    """
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    head = [(i, i) for i in range(start)]
    tail = [(i, end_b + (i - end_a)) for i in range(end_a, len(a))]
    x, y = a[start:end_a], b[start:end_b]
    n, m = len(x), len(y)
    if not n or not m:
        return head + tail
    limit = n + m
    offset = limit + 1
    v = [0] * (2 * limit + 3)
    trace: list[list[int]] = []
    found = False
    for d in range(limit + 1):
        if d * len(v) > _MYERS_BUDGET:
            return head + tail
        trace.append(v[offset - d - 1 : offset + d + 2])  # what the walk back reads: diagonals -d-1..d+1
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                px = v[offset + k + 1]
            else:
                px = v[offset + k - 1] + 1
            py = px - k
            while px < n and py < m and x[px] == y[py]:
                px += 1
                py += 1
            v[offset + k] = px
            if px >= n and py >= m:
                found = True
                break
        if found:
            break
    middle: list[tuple[int, int]] = []
    px, py = n, m
    for d in range(len(trace) - 1, -1, -1):
        vd, k = trace[d], px - py
        base = d + 1  # vd[base + k] is diagonal k
        prev_k = k + 1 if k == -d or (k != d and vd[base + k - 1] < vd[base + k + 1]) else k - 1
        prev_x = vd[base + prev_k]
        prev_y = prev_x - prev_k
        while px > prev_x and py > prev_y:
            px -= 1
            py -= 1
            middle.append((start + px, start + py))
        if d > 0:
            if px == prev_x:
                py -= 1
            else:
                px -= 1
    middle.reverse()
    return head + middle + tail


def unkept(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[list[int], list[int]]:
    """The indices of each sequence that a minimal diff (myers) does not keep: what was removed
    from a, and what was added in b."""
    kept_a, kept_b = set(), set()
    for i, j in myers(a, b):
        kept_a.add(i)
        kept_b.add(j)
    return [i for i in range(len(a)) if i not in kept_a], [j for j in range(len(b)) if j not in kept_b]


def unified_lines(before: str, after: str, before_label: str, after_label: str, context: int = 3) -> list[str]:
    """A unified diff as lines (no line ends), headers included; [] when the texts are equal."""
    if before == after:
        return []
    return [line.rstrip("\n") for line in difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), before_label, after_label, n=context,
    )]
