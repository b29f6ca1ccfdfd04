"""``carried``: the origins of the text one pass made, from the text it was given and that text's
origins -- the rules of analysis/origin_rules.py's docstring, one named phase each, facts first.

A phase only fills lines no earlier phase filled, so a guess never overrides a fact.
"""

from __future__ import annotations

import re

from lower_trace.analysis.origin_change import Change
from lower_trace.analysis.origin_rules import (
    COPY,
    FAR,
    GUESS,
    HEADER,
    SIMILAR,
    Origin,
    Origins,
    SourceOf,
    Spans,
    allocation_line,
    attribute_origin,
    body_origin,
    call_site,
    contained,
    descends_from,
    direct_statement,
    encloses,
    enclosing_origin,
    like_body_line,
    loop_head,
    loop_variables,
    name_tokens,
    names_a_block,
    no_source,
    not_a_header,
    statements_between,
)
from lower_trace.analysis.statements import Statement, copy_key, likeness, statement


def carried(before: str, before_origins: Origins, after: str, spans: Spans, source_of: SourceOf = no_source) -> Origins:
    """The origins of `after`, made by one pass from `before` (see origin_rules' docstring)."""
    change = _Carry(before, before_origins, after, spans, source_of)
    change.own_spans_and_kept_lines()
    change.attributes()
    change.same_statements()
    change.same_operation()
    change.copies()
    change.library_statements()
    change.rewritten_loops()
    change.built_around()
    change.shared_buffers()
    change.rewritten_loops()  # again: a producer loop's copies are known only by the buffers they share
    change.inserted_between()
    change.like_removed_lines()
    change.spans_naming_a_with()
    change.enclosing_or_first()
    return change.origins


_LAUNCH = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?:: [^=]+)? = T\.launch_thread|\s*for ([A-Za-z_][A-Za-z0-9_]*) in T\.thread_binding\(")


class _Carry(Change):
    """The phases of ``carried``, each filling the lines no earlier one did."""

    def __init__(self, before: str, before_origins: Origins, after: str, spans: Spans, source_of: SourceOf) -> None:
        super().__init__(before, before_origins, after, spans, source_of)
        self._branches: set[tuple[str, ...]] | None = None

    def attributes(self) -> None:
        """An attribute a TileLang call put on the kernel (``T.use_swizzle``): that call's line."""
        for _, j in list(self.open_lines()):
            if "T.attr(" in self.new[j]:
                self.origins[j] = attribute_origin(self.new[j], self.before, self.source_of)

    def same_statements(self) -> None:
        """A statement the pass rewrote, renamed or moved: the removed statement with the same
        operation on the same buffers (a header: the same text). Of several: the k-th removed for
        the k-th new when the pass made as many; else the most alike in every name and number."""
        groups: dict[object, list[int]] = {}
        for i in self.removed:
            groups.setdefault(self._key(self.old[i]), []).append(i)
        wanted: dict[object, list[int]] = {}
        for _, j in self.open_lines():
            key = self._key(self.new[j])
            if key is not None and key in groups and any(self._may_be(i, j) for i in groups[key]):
                wanted.setdefault(key, []).append(j)
        for key, news in wanted.items():
            olds = groups[key]
            if isinstance(key, tuple) and key[0] == "header" and len(olds) != len(news):
                continue  # `for i in range(4):` of TMA copies' boxes: alike, no buffer tells them apart, and the order fails
            for rank, j in enumerate(news):
                if len(olds) == len(news) and self._may_be(olds[rank], j):  # as many as it removed: a pass keeps their order
                    best = olds[rank]
                else:  # more or fewer: the most alike in every name and number, then the one at the same place
                    target = rank * len(olds) // len(news)
                    possible = [k for k in range(len(olds)) if self._may_be(olds[k], j)]
                    best = olds[max(possible, key=lambda k: (likeness(self.new[j], self.old[olds[k]]), -abs(k - target)))]
                ancestor = self.before[best]
                assert ancestor is not None
                if self.old[best].strip() == self.new[j].strip():
                    library = self.libraries.get(j)
                    self.origins[j] = ancestor if library is None else Origin(ancestor.file, ancestor.line, ancestor.how, library, ancestor.columns)
                else:
                    self.origins[j] = ancestor.known_as("operands", self.libraries.get(j) or ancestor.library)

    def _may_be(self, i: int, j: int) -> bool:
        """Removed line i can be new line j rewritten: unless j's own span names TileLang's code
        (its macro built j: ``max_val[i] = T.max(max_val[i], logits_frag[...])`` of a
        ``T.reduce_max``) and i was not built there (the user's ``logits_frag[i, j] = ...max_val[i]...``
        stores to the same buffers, but is another statement). An allocation is its buffer's, whatever
        its span."""
        library = self.libraries.get(j)
        ancestor = self.before[i]
        if library is None or ancestor is None or ancestor.library == library or statement(self.new[j]).op == "alloc":
            return True
        # The removed statement is a tile operation TileLang's code expands (T.gemm, T.reduce): its
        # expansion is built there. A store of the user's is no such call.
        return statement(self.old[i]).op not in ("", "store", "alloc")

    def same_operation(self) -> None:
        """A statement the pass rewrote with more buffers (it gave ``T.im2col(data, data_shared)`` a
        barrier): the removed statement of the same operation whose buffers it still uses all of --
        the one with most of them, when one line's statements are those. A store or an allocation is
        no operation of its own (any two stores are alike)."""
        by_op: dict[str, list[int]] = {}
        for i in self.removed:
            facts = statement(self.old[i])
            if facts.op and facts.buffers and facts.op not in ("store", "alloc", "bind"):
                by_op.setdefault(facts.op, []).append(i)
        for _, j in list(self.open_lines()):
            facts = statement(self.new[j])
            ranked = [
                (len(statement(self.old[i]).buffers), i)
                for i in by_op.get(facts.op, [])
                if statement(self.old[i]).buffers <= facts.buffers and self._may_be(i, j)
            ]  # fmt: skip
            if not ranked:
                continue
            top = max(size for size, _ in ranked)
            best = [self.before[i] for size, i in ranked if size == top]
            if len({(o.file, o.line) for o in best if o is not None}) == 1 and best[0] is not None:
                self.origins[j] = best[0].known_as("operands", self.libraries.get(j) or best[0].library)

    def copies(self) -> None:
        """A statement the pass copied (a software pipeliner's prologue, body and epilogue; the
        per-statement ``if`` of tl.IfStmtBinding; an unrolled body) is the statement it copies: the
        line before the pass, kept or not, that is the same up to renaming (statements.copy_key).
        When all such lines come from one place, the copy is from there, as certain as they are;
        from several places, the nearest is only a guess."""
        index = self._copy_index()
        if not index:
            return
        for (i0, j0, _, _), j in list(self.open_lines()):
            key = copy_key(self.new[j])
            olds = index.get(key) if key is not None else None
            if olds and all(self._may_be(i, j) for i in olds):
                self.origins[j] = self._copied_from(olds, j, i0 + (j - j0))

    def _copy_index(self) -> dict[tuple[str, ...], list[int]]:
        """The lines before the pass with an origin, by their copy key."""
        index: dict[tuple[str, ...], list[int]] = {}
        for i, line in enumerate(self.old):
            key = copy_key(line) if self.before[i] is not None else None
            if key is not None:
                index.setdefault(key, []).append(i)
        if any(key[0] == "if" for key in index):
            index = self._without_thread_partitions(index)
        return index

    def _without_thread_partitions(self, index: dict[tuple[str, ...], list[int]]) -> dict[tuple[str, ...], list[int]]:
        """A branch on the thread's index alone (warp specialisation's `if tx >= 128`) is the pass's
        own partition, no copy of a user's `if` on the same index."""
        threads = {match.group(1) or match.group(2) for line in self.old + self.new if (match := _LAUNCH.match(line))}
        return {key: olds for key, olds in index.items() if not (key[0] == "if" and set(key[1:]) <= threads)}

    def _copied_from(self, olds: list[int], j: int, near: int) -> Origin:
        """New line j copies the old lines olds: their place when they share one (a copy, or a guess
        where any of them is), else the one nearest `near` (a guess)."""
        originals = [origin for i in olds if (origin := self.before[i]) is not None]
        places = {(o.file, o.line) for o in originals}
        library = self.libraries.get(j)
        if len(places) == 1:
            first = originals[0]
            how = COPY if all(o.certain for o in originals) else GUESS
            return Origin(first.file, first.line, how, library or first.library, first.columns)
        nearest = self.before[min(olds, key=lambda i: abs(i - near))]
        assert nearest is not None
        return Origin(nearest.file, nearest.line, GUESS, library or nearest.library, nearest.columns)

    @staticmethod
    def _key(line: str) -> object:
        facts = statement(line)
        if facts.op:
            return facts.key if facts.buffers or facts.op not in ("store",) else None
        return ("header", line.strip()) if HEADER.match(line) else None

    def library_statements(self) -> None:
        """TileLang's own code: the user's statement whose block it sits in, else the user's line
        between its spanned neighbours. A statement with no span directly in a block this pass made
        of a user's statement (a ``_gemm_ssr`` block's descriptors) is that statement's too."""
        for _, j in list(self.open_lines()):
            library = self.libraries.get(j)
            if library is None:
                block = self._new_block(j)
                if block is not None and not HEADER.match(self.new[j]):
                    self.origins[j] = block.known_as("call")
                continue
            if self._in_open_block(j):
                continue  # the block it sits in is undecided yet (spanned only to a user's `with`): decided with it
            inside = enclosing_origin(self.new, self.origins, j, self.depths)
            # What TileLang's code built in a loop, branch or block of the user's only sits there: a guess.
            how = GUESS if inside is not None and names_a_block(inside, self.source_of) else "call"
            if inside is not None and inside.certain and not HEADER.match(self.new[j]) and self._in_expansion(j):
                self.origins[j] = inside.known_as(how, library)
                continue
            call = call_site(self.new, self.origins, j, self.libraries, self.source_of)
            if call is None and inside is not None and how == GUESS:
                call = self._call_in_block(j, inside, library)
            if call is not None:
                self.origins[j] = call
            elif inside is not None:
                self.origins[j] = inside.known_as(how, library)

    def _call_in_block(self, j: int, block: Origin, library: tuple[str, int]) -> Origin | None:
        """TileLang's code sitting directly in a loop or branch of the user's (`block`) that has no
        spanned statement beside it there (tl.IfStmtBinding gave a ``T.reduce_max`` in the user's
        ``if`` an ``if`` of its own): the one statement of that block's body, in the user's file,
        between the nearest statements of the body above and below it in the text."""
        source = self.source_of(block.file)
        if not source:
            return None

        def neighbour(step: int) -> Origin | None:
            k = j + step
            while 0 <= k < len(self.new):
                found = self.origins[k]
                if found is not None and found.how == "span" and found.file == block.file and found.line != block.line:
                    inside = encloses(source, block.line, [found.line])
                    return Origin(found.file, direct_statement(source, block.line, found.line), "span") if inside else None
                k += step
            return None

        before, after = neighbour(-1), neighbour(1)
        if before is None and after is None:
            return None
        candidates = [n for n in statements_between(source, before, after) if encloses(source, block.line, [n])]
        return Origin(block.file, candidates[0], "call", library) if len(candidates) == 1 else None

    def _new_block(self, j: int) -> Origin | None:
        """The certain origin of the ``with T.sblock(...)`` line j sits directly in, when this pass made that block."""
        depth = self.depths[j]
        for k in range(j - 1, -1, -1):
            if 0 <= self.depths[k] < depth:
                found = self.origins[k]
                made_here = k not in self.matched
                is_block = self.new[k].lstrip().startswith("with T.sblock(")
                if not (made_here and is_block and found is not None and found.certain):
                    return None
                # A block spanned to a loop, branch or block of the user's (the pipeliner's stage blocks take the
                # `if`'s span): it only contains the statement, which is decided later.
                return None if names_a_block(found, self.source_of) else found
        return None

    def _in_open_block(self, j: int) -> bool:
        """Line j sits in a ``with T.sblock(...)`` whose only span names a user's ``with T.ws``
        (vague, see own_spans_and_kept_lines) and that no phase has placed yet, with nothing placed
        between the two (a loop the block's expansion made): its origin is the block's, not what
        encloses the block."""
        depth = self.depths[j]
        for k in range(j - 1, -1, -1):
            if 0 <= self.depths[k] < depth:
                if k in self.vague and self.origins[k] is None:
                    return True
                if self.origins[k] is not None:
                    return False
                depth = self.depths[k]
        return False

    def _in_expansion(self, j: int) -> bool:
        """Line j sits in a block TileLang made of one statement (``with T.sblock("_gemm_ssr")``, a
        loop its macro made), not directly in a loop of the user's."""
        depth = self.depths[j]
        for k in range(j - 1, -1, -1):
            if 0 <= self.depths[k] < depth:
                text = self.new[k].lstrip()
                return text.startswith("with T.sblock(") or k in self.libraries
        return False

    def rewritten_loops(self) -> None:
        """A loop the pass rewrote, or made more of (warp specialisation gives the producer and the
        consumer each the user's ``for k``): a removed loop of the same variable whose user line
        holds, in its body in the user's file, every statement the new loop's body certainly comes from."""
        removed: dict[str, list[Origin]] = {}
        for i in self.removed:
            origin = self.before[i]
            variables = loop_variables(self.old[i])
            if origin is not None and origin.certain and variables:
                removed.setdefault(variables[0], []).append(origin)
        if not removed:
            return
        for _, j in list(self.open_lines()):
            variables = loop_variables(self.new[j])
            variable = _outermost_fused(variables[0], removed) if variables else None
            candidates = removed.get(variable) if variable else None
            body = self._certain_body(j) if candidates else set()
            found = {
                (o.file, o.line): o
                for o in candidates or ()
                if (source := self.source_of(o.file)) and variable in loop_variables(source[o.line - 1] if 0 < o.line <= len(source) else "")
                and encloses(source, o.line, [line for file, line in body if file == o.file and line != o.line]) and all(file == o.file for file, _ in body)
            }  # fmt: skip
            if len(found) != 1 and variables:
                # A loop nest the pass lowered (LowerTileOp partitions a T.Parallel loop into
                # `for i in T.unroll(4)` and `for vec in T.vectorized(4)`): the loop it removed there.
                found = self._removed_loop_around(j, removed)
            if len(found) == 1:
                loop = next(iter(found.values()))
                self.origins[j] = Origin(loop.file, loop.line, COPY, self.libraries.get(j), loop.columns)

    def _removed_loop_around(self, j: int, removed: dict[str, list[Origin]]) -> dict[tuple[str, int], Origin]:
        """The loop of the user's, removed in new line j's hunk, that most closely holds everything
        j's body certainly comes from (none when its body comes from nothing certain)."""
        hunk = self.hunk_of(j)
        body = self._certain_body(j)
        if hunk is None or not body:
            return {}
        best: Origin | None = None
        for i in range(hunk[0] + 1, hunk[2]):
            variables = loop_variables(self.old[i])
            origin = self.before[i]
            if not variables or origin is None or origin not in removed.get(variables[0], ()):
                continue
            source = self.source_of(origin.file)
            mine = source[origin.line - 1] if source and 0 < origin.line <= len(source) else ""
            inside = [line for _, line in body if line != origin.line]
            nearer = best is None or origin.line > best.line
            if nearer and source and loop_variables(mine) and all(file == origin.file for file, _ in body) and encloses(source, origin.line, inside):
                best = origin
        return {(best.file, best.line): best} if best else {}

    def _certain_body(self, j: int) -> set[tuple[str, int]]:
        """The places the statements nested in line j certainly come from."""
        found: set[tuple[str, int]] = set()
        for k in range(j + 1, len(self.new)):
            if self.depths[k] < 0:
                continue
            if self.depths[k] <= self.depths[j]:
                break
            origin = self.origins[k]
            # A buffer declared anywhere (TileLang declares them again in each branch) is its alloc line's: no statement of the body.
            if origin is not None and origin.certain and origin.how != "allocation" and statement(self.new[k]).op != "alloc":
                found.add((origin.file, origin.line))
        return found

    def built_around(self) -> None:
        """A loop, branch or block the pass made around one statement's lowering (the boxes of a
        TMA copy) comes from that statement: every line of its body does. So does a new loop whose
        own span names a line of the user's that is no loop (TileLang gives it another's span)."""
        for j in range(len(self.new) - 1, -1, -1):  # inner headers first: an outer one's body holds them
            line = self.new[j]
            if not line.endswith(":") or not HEADER.match(line):  # endswith first: this runs on every line
                continue
            own = self.origins[j]
            if (own is None or not own.certain) and self._copies_a_branch(line):
                continue  # a copy of a branch of the user's (the copies phase found it from several places): not built around its body
            wrong_span = own is not None and own.how == "span" and not_a_header(own, self.source_of)
            # A loop whose origin came from its body takes its body's again: the diff may have paired it
            # with an identical loop elsewhere (two TMA copies' `for i in T.unroll(4):`).
            from_body = own is not None and own.how == "body"
            if not (wrong_span or from_body) and (j in self.matched or own is not None):
                if own is None:
                    continue
                if own.certain:
                    # A loop paired by its text alone with a removed one (seven `for i in T.unroll(2):` of
                    # TMA boxes and reductions, reordered) whose body certainly is another statement's
                    # lowering: that statement's. Its own span, or a loop or block of the user's, stays.
                    if own.how != "span" and not names_a_block(own, self.source_of):
                        body = body_origin(self.origins, j, self.depths, certain=True)
                        if body is not None and (body.file, body.line) != (own.file, own.line):
                            self.origins[j] = body.known_as("body", self.libraries.get(j))
                    continue
                # A guessed header over statements all certainly from one line (`if elect:` around a copy's expect and load)
                body = body_origin(self.origins, j, self.depths, certain=True)
                if body is not None:
                    self.origins[j] = body.known_as("body", self.libraries.get(j))
                continue
            body = body_origin(self.origins, j, self.depths)
            if body is not None:
                self.origins[j] = body.known_as("body", self.libraries.get(j))
            elif from_body and own is not None:
                # Its body is no longer one statement's (a pass merged two copies' `if elect:` blocks).
                self.origins[j] = Origin(own.file, own.line, GUESS, own.library, own.columns)

    def _copies_a_branch(self, line: str) -> bool:
        """`line` is an ``if`` the same, up to renaming, as one before the pass."""
        key = copy_key(line)
        if key is None or key[0] != "if":
            return False
        if self._branches is None:
            self._branches = {old_key for old in self.old if (old_key := copy_key(old)) is not None and old_key[0] == "if"}
        return key in self._branches

    def shared_buffers(self) -> None:
        """A statement of a hunk that uses buffers of the hunk's removed statements: the one it
        shares the most with (the same operation first), when no statement of another line shares as
        many. Sharing a buffer is weak evidence: when a removed statement outside the hunk, of another
        line, shares more (or as many, and is the same operation where the hunk's is not), the hunk's
        is only the likelier -- a guess."""
        for (i0, _, i1, _), j in list(self.open_lines()):
            facts = statement(self.new[j])
            if not facts.buffers or facts.op == "alloc":  # a declaration of a parameter is no part of the statement using it
                continue
            ranked: list[tuple[tuple[int, bool], Origin]] = []
            for i in range(i0 + 1, i1):
                score, origin = self._sharing(facts, i, j), self.before[i]
                if score is not None and origin is not None:
                    ranked.append((score, origin))
            if not ranked:
                continue
            top = max(score for score, _ in ranked)
            places = {(o.file, o.line) for score, o in ranked if score == top}
            if len(places) == 1:
                origin = next(o for score, o in ranked if score == top)
                elsewhere = (self._sharing(facts, i, j, places) for i in self.removed if not i0 < i < i1)
                if any(score is not None and score > top for score in elsewhere):
                    self.origins[j] = Origin(origin.file, origin.line, GUESS, self.libraries.get(j))
                    continue
                self.origins[j] = allocation_line(self.new[j], origin, self.source_of) or origin.known_as("operands", self.libraries.get(j))

    def _sharing(self, facts: Statement, i: int, j: int, but: set[tuple[str, int]] | None = None) -> tuple[int, bool] | None:
        """How much removed line i's statement shares with new line j's (`facts`): (buffers in common,
        the same operation); None when nothing, when i cannot be j (see _may_be), or i is from a place in `but`."""
        origin = self.before[i]
        if origin is None or i in self.matched_old or (but is not None and (origin.file, origin.line) in but) or not self._may_be(i, j):
            return None
        theirs = statement(self.old[i])
        shared = len(facts.buffers & theirs.buffers)
        return (shared, theirs.op == facts.op) if shared else None

    # --- guesses ---------------------------------------------------------------------------------

    def inserted_between(self) -> None:
        """A statement a pass inserted, replacing nothing (a barrier, a fence), between two lines
        from one user line: that line's."""
        for (i0, j0, i1, j1), j in list(self.open_lines()):
            if i1 - i0 > 1 or j0 < 0 or j1 >= len(self.new):
                continue
            above, below = self.origins[j0], self.origins[j1]
            if above is not None and below is not None and (above.file, above.line) == (below.file, below.line):
                self.origins[j] = Origin(above.file, above.line, GUESS, self.libraries.get(j))

    def like_removed_lines(self) -> None:
        """The removed line it shares most names with: in its hunk, or anywhere when one there is
        more alike overall (a pass that moves a statement far leaves it in another hunk)."""
        removed_by_text: dict[str, list[int]] = {}
        for i in self.removed:
            removed_by_text.setdefault(self.old[i].strip(), []).append(i)
            head = loop_head(self.old[i])
            if head:
                removed_by_text.setdefault(head, []).append(i)
        everywhere = [(i, name_tokens(self.old[i])) for i in self.removed]
        taken: dict[str, int] = {}
        for (i0, j0, i1, _), j in list(self.open_lines()):
            removed_tokens = [(i, name_tokens(self.old[i])) for i in range(i0 + 1, i1) if self.before[i] is not None]
            near = i0 + (j - j0)  # where in the old text this line would be, had nothing moved
            found, score = descends_from(
                self.new[j], removed_by_text, removed_tokens, self.before, SIMILAR, near, loop_heads=j not in self.libraries, taken=taken,
                old_lines=self.old,
            )  # fmt: skip
            if score[1] < 1.0 and i1 - i0 > 1:  # (a pure insertion is no statement moved from afar)
                far, far_score = descends_from(self.new[j], {}, everywhere, self.before, FAR, near, overall_first=True)
                if far is not None and far_score[1] > score[1]:
                    found = far
            if found is not None:
                guess = Origin(found.file, found.line, GUESS, self.libraries.get(j), found.columns)
                self.origins[j] = allocation_line(self.new[j], found, self.source_of) or guess

    def spans_naming_a_with(self) -> None:
        """A statement spanned to a user's block or loop line that nothing before placed: the body
        line it is like (the lowered text has drifted from the user's), else the one line the
        statements beside it come from (a constant hoisted into a loop's body), else the span's
        line as a guess: a loop or block only contains the statement."""
        for j, own in self.vague.items():
            if self.origins[j] is not None:
                continue
            line = self.new[j]
            self.origins[j] = like_body_line(own, line, self.source_of) or self._body_line(j, own) or contained(own, line)

    def enclosing_or_first(self) -> None:
        """What is left sits in a statement (in a loop of the user's: the body line it computes),
        or replaced the hunk's first line."""
        for (i0, _, i1, _), j in list(self.open_lines()):
            if not (self.new[j].strip() or j in self.libraries):
                continue
            found = enclosing_origin(self.new, self.origins, j, self.depths)
            if found is not None and not not_a_header(found, self.source_of):
                found = self._body_line(j, found) or found
            if found is None:
                found = next((self.before[i] for i in range(i0 + 1, i1) if self.before[i] is not None), None)
            if found is not None:
                self.origins[j] = allocation_line(self.new[j], found, self.source_of) or Origin(found.file, found.line, GUESS, self.libraries.get(j))

    def _body_line(self, j: int, loop: Origin) -> Origin | None:
        """The one line of the user's loop body that the other statements of j's block come from."""
        depth = self.depths[j]
        start = j
        while start > 0 and (self.depths[start - 1] < 0 or self.depths[start - 1] >= depth):
            start -= 1
        end = j
        while end + 1 < len(self.new) and (self.depths[end + 1] < 0 or self.depths[end + 1] >= depth):
            end += 1
        around = [o for o in self.origins[start : end + 1] if o is not None and (o.file, o.line) != (loop.file, loop.line)]
        places = {(o.file, o.line) for o in around if o.certain} or {(o.file, o.line) for o in around}  # facts first
        if len(places) != 1:
            return None
        file, line = places.pop()
        return Origin(file, line, GUESS)


def _outermost_fused(variable: str, loops: dict[str, list[Origin]]) -> str:
    """The variable a loop stands for: its own, or for a loop the pass fused from a nest
    (``i_d_fused`` of ``for i`` and ``for d``), the outermost loop's."""
    if variable in loops or not variable.endswith("_fused"):
        return variable
    return next((name for name in loops if variable.startswith(name + "_")), variable)
