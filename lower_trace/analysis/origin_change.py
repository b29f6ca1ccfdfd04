"""One pass's change of a text, as the source map reads it: the old and new lines, which old line
each new one is (the diff's pairs, corrected by the lines' own spans where a pass moved or
re-indented lines), the hunks between them, and the first fact of every line -- its own span, or
the origin of the line it was kept from. analysis/origin_carry.py's phases fill in the rest.
"""

from __future__ import annotations

import collections
import itertools

from lower_trace.analysis.origin_rules import BRANCH, Origin, Origins, SourceOf, Spans, indent_depths, names_a_with, own_span
from lower_trace.analysis.statements import copy_key
from lower_trace.analysis.text_diff import myers, split_lines


class Change:
    """One pass's change of a text: the old and new lines, the diff's pairs and hunks, the origins so far."""

    def __init__(self, before: str, before_origins: Origins, after: str, spans: Spans, source_of: SourceOf) -> None:
        self.old, self.new = split_lines(before), split_lines(after)
        self.before = list(before_origins[: len(self.old)]) + [None] * max(0, len(self.old) - len(before_origins))
        self.spans, self.source_of = spans, source_of
        self.origins: Origins = [None] * len(self.new)
        self.libraries: dict[int, tuple[str, int]] = {}
        self.vague: dict[int, Origin] = {}  # own spans that name a `with` block, not the statement: the last resort
        self.pairs = self._moved_by_spans(self._kept_pairs())
        self.matched = {j: i for i, j in self.pairs}
        kept_old = self.matched_old = {i for i, _ in self.pairs}
        self.removed = [i for i in range(len(self.old)) if i not in kept_old and self.before[i] is not None]
        # The hunks: runs of new lines between kept ones, each with the old lines it replaced.
        self.hunks = [(i0, j0, i1, j1) for (i0, j0), (i1, j1) in itertools.pairwise([(-1, -1), *self.pairs, (len(self.old), len(self.new))]) if j1 - j0 > 1]
        self._depths: list[int] = []
        self._old_branches: list[tuple[int, tuple[str, ...], Origin]] | None = None

    def _kept_pairs(self) -> list[tuple[int, int]]:
        """The diff's pairs of equal lines. A pass that indents the whole body anew (SplitHostDevice
        moves it into a function of its own) keeps every line, but only the few its new indentation
        happens to match are equal, and those pair the wrong copies of a repeated line: then lines
        are compared without their indentation, when that keeps far more of them."""
        pairs = myers(self.old, self.new)
        if len(pairs) < len(self.new) // 2:
            old, new = [line.strip() for line in self.old], [line.strip() for line in self.new]
            # Only a body moved as it is: most lines the same but for indentation (and the diff cheap).
            if sum((collections.Counter(old) & collections.Counter(new)).values()) >= 0.5 * len(new):
                unindented = myers(old, new)
                if len(unindented) > 2 * len(pairs):
                    return unindented
        return pairs

    def _moved_by_spans(self, pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The diff pairs equal texts in order; a pass that moved one of two equal lines (loop
        unswitching hoists one ``if tx < 160:`` over its loop) leaves it paired with the other.
        A new line's own span says which old line it is: the unpaired old line of the same text
        that came from that span's line, when one sits between the neighbouring pairs."""
        paired = {i for i, _ in pairs}
        for n, (i, j) in enumerate(pairs):
            kept = self.before[i]
            span = self.spans.get(j)
            if kept is None or span is None or span[2] or (kept.file, kept.line) == (span[0], span[1]):
                continue
            low = pairs[n - 1][0] if n else -1
            high = pairs[n + 1][0] if n + 1 < len(pairs) else len(self.old)
            text = self.new[j].strip()
            place = (span[0], span[1])
            moved = [k for k in range(low + 1, high) if k not in paired and self.old[k].strip() == text and _at(self.before[k], place)]
            if len(moved) == 1:
                pairs[n] = (moved[0], j)
                paired.discard(i)
                paired.add(moved[0])
        return pairs

    @property
    def depths(self) -> list[int]:
        if not self._depths:
            self._depths.extend(indent_depths(self.new))
        return self._depths

    def open_lines(self):
        """(hunk, j) of every new line no phase has given an origin yet."""
        for hunk in self.hunks:
            for j in range(hunk[1] + 1, hunk[3]):
                if self.origins[j] is None:
                    yield hunk, j

    def hunk_of(self, j: int) -> tuple[int, int, int, int] | None:
        """The hunk new line j is in (None: a kept line)."""
        return next((h for h in self.hunks if h[1] < j < h[3]), None)

    # --- the first fact: a line's own span, or the line the diff kept it from -----------------

    def own_spans_and_kept_lines(self) -> None:
        for j, line in enumerate(self.new):
            own, library = own_span(self.spans, j)
            if own is not None and (names_a_with(own, line, self.source_of) or self._guard_of_another_condition(j, own)):
                self.vague[j], own = own, None
            elif own is not None and j not in self.matched and (earlier := self._same_rank_branch(j, own)) is not None:
                own = earlier
            if library is not None:
                self.libraries[j] = library
            if own is not None:
                self.origins[j] = own
            elif j in self.matched:
                kept = self.before[self.matched[j]]
                self.origins[j] = kept if kept is None or library is None else Origin(kept.file, kept.line, kept.how, library, kept.columns)

    def _guard_of_another_condition(self, j: int, own: Origin) -> bool:
        """A branch a pass added inside a user's ``if`` (LegalizeSafeMemoryAccess's bounds checks of
        the store it guards) carries that ``if``'s span, with a condition of its own: it is no copy of
        the user's branch when that branch is still there, or when it was already told apart before
        (an old branch of its condition came from elsewhere)."""
        if not BRANCH.match(self.new[j]) or (key := copy_key(self.new[j])) is None:
            return False
        if self._old_branches is None:
            self._old_branches = []
            for i, old in enumerate(self.old):
                if BRANCH.match(old) and (old_key := copy_key(old)) and (origin := self.before[i]) is not None:
                    self._old_branches.append((i, old_key, origin))
        here = [(i, other) for i, other, origin in self._old_branches if (origin.file, origin.line) == (own.file, own.line)]
        if not here or any(other == key for _, other in here):
            return False
        still_there = any(i in self.matched_old for i, _ in here)
        told_apart = any(other == key and origin.certain and (origin.file, origin.line) != (own.file, own.line) for _, other, origin in self._old_branches)
        return still_there or told_apart

    def _same_rank_branch(self, j: int, own: Origin) -> Origin | None:
        """A pass that rewrote a nest of branches (Simplify on a user's ``if`` and the bounds checks
        added inside it, all spanned to the ``if``) keeps their number and order: the k-th new branch
        of the hunk is its k-th removed one, whose certain origin from elsewhere stays."""
        if not BRANCH.match(self.new[j]):
            return None
        hunk = self.hunk_of(j)
        if hunk is None:
            return None
        olds = [i for i in range(hunk[0] + 1, hunk[2]) if BRANCH.match(self.old[i])]
        news = [k for k in range(hunk[1] + 1, hunk[3]) if BRANCH.match(self.new[k]) and k not in self.matched]
        if len(olds) != len(news) or len(olds) < 2:
            return None
        earlier = self.before[olds[news.index(j)]]
        if earlier is None or not earlier.certain or (earlier.file, earlier.line) == (own.file, own.line):
            return None
        return earlier


def _at(origin: Origin | None, place: tuple[str, int]) -> bool:
    return origin is not None and (origin.file, origin.line) == place
