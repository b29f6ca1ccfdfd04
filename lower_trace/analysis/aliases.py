"""Equivalent objects under two names: what TileLang's own run-to-run variation looks like.

TileLang 0.1.15's tl.MergeSharedMemoryAllocations binds each merged buffer to an offset of one
shared pool; two workspaces at the same offset are two names for one address
(``void* workspace = ((void*)((char*)buf_dyn_shmem + 24576)); void* workspace_1 = ...same...``),
and which of the two each use gets follows a pointer-keyed hash map's order, so it differs from
one process to the next. A program that uses ``workspace_1`` where another uses ``workspace`` is
then the same program.

An **alias group** is the names a text binds, each exactly once and never assigned again, to the
same value of the same type, where the value cannot make a new object each time it is evaluated
(no call but address arithmetic and casts). Two texts are equivalent when they are the same after
each group's names are written as its first one. Facts only: what was equated is said (the names
and the value they share), and nothing else is ever equated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lower_trace.analysis.renaming import correspondence

# CUDA/C: `TYPE NAME = VALUE;` on a line of its own (TYPE ends in a word, `*` or `&`).
_C_BINDING = re.compile(r"^\s*(?P<type>(?:const\s+)?[A-Za-z_][\w:<>,]*(?:\s*\*+|\s+)\s*)(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<value>[^;=][^;]*);\s*$")
# TVMScript: `NAME: T.handle(...) = VALUE` (a LetStmt / binding printed with its type).
_TIR_BINDING = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*):\s*(?P<type>T\.[^=]+?)\s*=\s*(?P<value>\S.*?)\s*$")
# Calls whose value is an address computed from their arguments: nothing new is made.
_PURE_CALLS = frozenset({"T.handle_add_byte_offset", "T.address_of", "T.reinterpret", "T.Cast", "T.tvm_access_ptr", "T.type_annotation"})
_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\(")
_WORD = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class AliasGroup:
    """Names a text binds to one value."""

    value: str
    names: tuple[str, ...]  # in the order they are bound; the first is the one the others are written as

    def describe(self) -> str:
        return f"{' = '.join(self.names)} (all `{self.value}`)"


def _pure(value: str) -> bool:
    calls = _CALL.findall(value)
    # A cast `(void*)(x)` has no name before its parenthesis; a C call or a TVMScript call does.
    return all(name in _PURE_CALLS for name in calls)


def alias_groups(text: str) -> tuple[AliasGroup, ...]:
    """The alias groups of a text (only groups of two or more names)."""
    bound: dict[str, list[tuple[str, str]]] = {}
    for line in text.splitlines():
        match = _C_BINDING.match(line) or _TIR_BINDING.match(line)
        if match is None:
            continue
        bound.setdefault(match.group("name"), []).append((" ".join(match.group("type").split()), " ".join(match.group("value").split())))
    by_value: dict[tuple[str, str], list[str]] = {}
    for name, bindings in bound.items():
        if len(bindings) != 1 or not _pure(bindings[0][1]) or _reassigned(text, name):
            continue
        type_, value = bindings[0]
        if name in _WORD.findall(value):
            continue
        by_value.setdefault((type_, value), []).append(name)
    return tuple(AliasGroup(value, tuple(names)) for (_, value), names in by_value.items() if len(names) > 1)


def _reassigned(text: str, name: str) -> bool:
    """Whether a name is written to anywhere but its binding (x = ..., x += ..., ++x, x++)."""
    writes = re.findall(rf"(?<![\w.]){re.escape(name)}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+\s*{re.escape(name)}\b|\b{re.escape(name)}\s*\+\+", text)
    return len(writes) > 1


def canonical(text: str, groups: tuple[AliasGroup, ...]) -> str:
    """The text with each group's names written as the group's first."""
    renames = {name: group.names[0] for group in groups for name in group.names[1:]}
    if not renames:
        return text
    return re.sub(r"[A-Za-z_]\w*", lambda m: renames.get(m.group(0), m.group(0)), text)


def equated(a: str, b: str) -> tuple[AliasGroup, ...] | None:
    """The alias groups that make a and b the same text, or None when they are not the same so
    (also when no group is needed: a and b are then the same without equating anything)."""
    if a == b:
        return None
    groups_a, groups_b = alias_groups(a), alias_groups(b)
    if not groups_a and not groups_b:
        return None
    ca, cb = canonical(a, groups_a), canonical(b, groups_b)
    if ca != cb and correspondence(ca, cb) is None:
        return None
    # Said: the groups of names that the differing lines use (not every alias the texts have).
    lines_a, lines_b = set(a.splitlines()), set(b.splitlines())
    differing = {word for line in lines_a ^ lines_b for word in _WORD.findall(line)}
    used = {group.names: group for group in (*groups_a, *groups_b) if differing & set(group.names)}
    return tuple(_narrowed(group, differing) for group in used.values()) or None


def _narrowed(group: AliasGroup, differing: set[str]) -> AliasGroup:
    names = tuple(name for name in group.names if name in differing)
    return AliasGroup(group.value, names if len(names) > 1 else group.names)
