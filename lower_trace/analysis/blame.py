"""Blame: which pass made a line of the IR, and which passes touched what a regex finds.

Pure over a stored trace. A kernel's passes nest (a C++ ``Sequential`` runs its passes
inside the outer one), so the IR's history is read as events in time order: a pass
starts with the IR it received, its nested passes run, it ends with the IR it made.
Whatever changed between two events was done by the pass running at that moment,
the innermost one: between a pass's start and its first nested pass, or after its
last nested pass, by that pass itself. A nested pass that works on another module (a
helper the enclosing pass built: no function in common) is not part of the history. Lines keep the pass that last changed them
(git-blame semantics over the chain of those changes).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from lower_trace.analysis.text_diff import myers, split_lines
from lower_trace.model import KernelTrace, PassRecord

TextOf = Callable[[str], str]


@dataclass(frozen=True)
class Change:
    """One step of the IR's history: `after` made by `by` (None: before any pass) from `before`."""

    by: PassRecord | None
    before: str
    after: str


@dataclass(frozen=True)
class BlamedLine:
    text: str
    by: PassRecord | None  # the pass that last changed the line; None: it was in the input


@dataclass(frozen=True)
class PatternHistory:
    """What happened to the lines a regex matches: introduced, changed, removed."""

    introduced: PassRecord | None  # first pass after which there was a match and before which there was none
    changed: tuple[PassRecord, ...]  # later passes that added or removed matching lines
    removed: PassRecord | None  # the pass after which no match was left (the last such)
    present_at_end: bool

    @property
    def matched(self) -> bool:
        """Whether a line matched at any pass."""
        return self.introduced is not None or self.present_at_end or self.removed is not None


_FUNCTION = re.compile(r"^\s*def (\w+)\(", re.MULTILINE)


def functions(text: str) -> set[str]:
    """The names of the functions a TVMScript module defines."""
    return set(_FUNCTION.findall(text))


def on_another_module(text: str, current: str) -> bool:
    """A nested pass's input that shares no function with the IR so far: a pass may build a helper
    module and run passes on it (TileLang lowers a gemm through one), which is not this IR."""
    mine, theirs = functions(current), functions(text)
    return bool(mine and theirs) and mine.isdisjoint(theirs)


def history(kernel: KernelTrace, text_of: TextOf, until: int | None = None) -> list[Change]:
    """The IR's changes in time order, each with the pass that made it; with `until` (a pass
    seq), up to the end of that pass."""
    children: dict[int | None, list[PassRecord]] = {}
    for record in kernel.passes:
        children.setdefault(record.parent, []).append(record)
    changes: list[Change] = []
    current: list[str | None] = [None]
    done = [False]

    def reach(digest: str, by: PassRecord | None) -> None:
        if not digest or done[0]:
            return
        text = text_of(digest)
        if current[0] is None:
            current[0] = text  # the input: where the history starts
            return
        if text != current[0]:
            changes.append(Change(by, current[0], text))
            current[0] = text

    def visit(record: PassRecord, parent: PassRecord | None) -> None:
        if parent is not None and current[0] is not None and on_another_module(text_of(record.before), current[0]):
            return  # a pass run on a helper module (tl.LowerTileOp's on _gemm_ssr): not this IR's history
        reach(record.before, parent)  # what changed since the last event: the enclosing pass's work
        for child in sorted(children.get(record.seq, []), key=lambda p: p.seq):
            visit(child, record)
        reach(record.after, record)
        if until is not None and record.seq == until:
            done[0] = True

    for top in sorted(children.get(None, []), key=lambda p: p.seq):
        visit(top, None)
    if not changes and current[0] is not None:
        return [Change(None, current[0], current[0])]
    return changes


def final_text(changes: list[Change]) -> str:
    return changes[-1].after if changes else ""


def blame_lines(changes: list[Change]) -> list[BlamedLine]:
    """Each line of the last IR with the pass that last changed it.

    A pipeline is not always a chain: TileLang filters the split module twice, once
    for the host and once for the device, so a pass can start from an IR seen before
    (a change by None). Each IR seen keeps its lines' owners, and a pass's change is
    diffed against the IR that pass really received."""
    if not changes:
        return []
    first = changes[0].before
    seen: dict[str, list[PassRecord | None]] = {first: [None] * len(split_lines(first))}
    lines, owners = split_lines(first), seen[first]
    for change in changes:
        if change.before in seen:
            lines, owners = split_lines(change.before), seen[change.before]
        new = split_lines(change.after)
        if change.by is None and change.after in seen:
            lines, owners = new, seen[change.after]
            continue
        kept: list[PassRecord | None] = [change.by] * len(new)
        for i, j in myers(lines, new):  # the page's diff, so the report blames alike
            kept[j] = owners[i]
        lines, owners = new, kept
        seen.setdefault(change.after, owners)
    return [BlamedLine(text, by) for text, by in zip(lines, owners, strict=False)]


def pattern_history(changes: list[Change], pattern: re.Pattern[str]) -> PatternHistory:
    """Where the lines matching `pattern` came from, which passes touched them, and which removed them."""
    introduced: PassRecord | None = None
    removed: PassRecord | None = None
    changed: list[PassRecord] = []
    present = False
    for change in changes:
        before = [line for line in change.before.splitlines() if pattern.search(line)]
        after = [line for line in change.after.splitlines() if pattern.search(line)]
        present = bool(after)
        if change.by is None:
            continue
        if not before and after:
            if introduced is None:
                introduced = change.by
            else:
                changed.append(change.by)
        elif before and not after:
            removed = change.by
        elif sorted(before) != sorted(after):
            changed.append(change.by)
    if present:
        removed = None  # removed once, but back by the end: nothing removed them for good
    return PatternHistory(introduced, tuple(changed), removed, present)
