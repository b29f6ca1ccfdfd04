"""Pure text diffs between two snapshots: hunks, line stats, intra-line spans.

No ANSI and no HTML here: renderers decide how a diff looks. Diffs are computed
when something renders them, never in the compiler's hot path.
"""

from __future__ import annotations

import difflib
import re
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


def unified(before: str, after: str, context: int = 3, old_name: str = "before", new_name: str = "after") -> str:
    """The classic unified diff text (for files, patches and plain terminals)."""
    lines = [f"--- {old_name}", f"+++ {new_name}"]
    for hunk in hunks(before, after, context):
        lines.append(hunk.header)
        lines.extend(f"{line.tag}{line.text}" for line in hunk.lines)
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def word_spans(old_line: str, new_line: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Character ranges that differ between two lines, at word granularity (old spans, new spans)."""
    old_tokens = _TOKEN.findall(old_line)
    new_tokens = _TOKEN.findall(new_line)
    matcher = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
    old_offsets = _offsets(old_tokens)
    new_offsets = _offsets(new_tokens)
    old_spans: list[tuple[int, int]] = []
    new_spans: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            old_spans.append((old_offsets[i1], old_offsets[i2]))
        if j2 > j1:
            new_spans.append((new_offsets[j1], new_offsets[j2]))
    return old_spans, new_spans


def _offsets(tokens: list[str]) -> list[int]:
    offsets = [0]
    for token in tokens:
        offsets.append(offsets[-1] + len(token))
    return offsets
