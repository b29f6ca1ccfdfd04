"""Lines of the generated source that no TIR statement of the user's explains by itself, and what
the rest of the source says they are (run after the line map and the inlined lets).

- ``void* K_shared = ((void*)((char*)buf_dyn_shmem + 8192));``: the merged dynamic shared memory
  carves out the user's buffer: its ``K_shared = T.alloc_shared(...)`` line.
- ``tl::prefetch_tma_descriptor(K_desc);``: the copy whose TMA loads use that descriptor (every
  other line naming it certainly comes from one statement).
- a guessed ``if (tl::tl_shuffle_elect<128>()) {`` (one thread of the group issues a copy's barrier
  and load) whose body lines all certainly come from one statement: that statement.
Each only replaces a guess, never a fact.
"""

from __future__ import annotations

import re

from lower_trace.analysis.origin_rules import GUESS, Origin, Origins, SourceOf, allocation_of

_CARVED = re.compile(r"\s*void\* ([A-Za-z_][A-Za-z0-9_]*) = \(\(void\*\)\(\(char\*\)buf_dyn_shmem\b")
_PREFETCH = re.compile(r"\s*tl::prefetch_tma_descriptor\(([A-Za-z_][A-Za-z0-9_]*)\);")
_ELECT = re.compile(r"\s*if \(tl::tl_shuffle_elect<\d+>\(\)\) \{\s*$")  # one thread of a group: TileLang's, never the user's


def place_generated_lines(lines: list[str], origins: Origins, source_of: SourceOf) -> None:
    """Replace the guesses the rules of the module docstring can tell (in place)."""
    for i, text in enumerate(lines):
        origin = origins[i]
        if origin is None or origin.certain:
            continue
        if carved := _CARVED.match(text):
            origins[i] = allocation_of(carved.group(1), origin, source_of) or origin
        elif prefetch := _PREFETCH.match(text):
            origins[i] = _one_user(lines, origins, prefetch.group(1), i) or origin
    for i in range(len(lines) - 1, -1, -1):  # inner guards first: an outer one's body holds them
        origin = origins[i]
        if origin is not None and not origin.certain and _ELECT.match(lines[i]):
            origins[i] = _body_statement(lines, origins, i) or origin


def _one_user(lines: list[str], origins: Origins, name: str, skip: int) -> Origin | None:
    """The one place every other line naming `name` comes from (a guess when that place is)."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    places = {(o.file, o.line): o for k, text in enumerate(lines) if k != skip and word.search(text) and (o := origins[k]) is not None}
    if len(places) != 1:
        return None
    only = next(iter(places.values()))
    return Origin(only.file, only.line, "call" if only.certain else GUESS)


def _body_statement(lines: list[str], origins: Origins, first: int) -> Origin | None:
    """The one place every line in the braces opened on line `first` comes from (a guess unless
    every one of them is certain)."""
    depth, found, certain = 0, None, True
    for k in range(first, len(lines)):
        depth += lines[k].count("{") - lines[k].count("}")
        if k > first and depth <= 0:
            break
        origin = origins[k] if k > first else None
        if origin is None:
            continue
        if found is not None and (found.file, found.line) != (origin.file, origin.line):
            return None
        found, certain = origin, certain and origin.certain
    return Origin(found.file, found.line, "body" if certain else GUESS) if found is not None else None
