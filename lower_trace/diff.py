"""Pure text diffs between two snapshots: hunks and line stats.

No ANSI and no HTML here: renderers decide how a diff looks. Diffs are computed
when something renders them, never in the compiler's hot path.
"""

from __future__ import annotations

import difflib
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
        return f"@@ -{self.old_start},{self.old_len} +{self.new_start},{self.new_len} @@"


@dataclass(frozen=True)
class DiffStats:
    added: int
    removed: int

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


@lru_cache(maxsize=64)  # stats() and hunks() of one pass share one matcher
def _matcher(before: str, after: str) -> tuple[list[str], list[str], difflib.SequenceMatcher]:
    old = before.splitlines()
    new = after.splitlines()
    return old, new, difflib.SequenceMatcher(None, old, new, autojunk=False)


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
