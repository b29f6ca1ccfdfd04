"""What one printed TIR statement says about itself: the operation it performs and the buffers it
names. The source map pairs a statement a pass rewrote with the one it came from by these facts
(the same operation on the same buffers) before it falls back on how alike two lines look.

Names are TVMScript's: a buffer is a name indexed (``A_shared[i]``) or taken the data of
(``A_shared.data``), or the name an allocation defines (``desc_a = T.decl_buffer(...)``). TVM
renames the copies it makes of a buffer ``A_shared_1``; the suffix is dropped, so a buffer keeps
its name through the passes that copy it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_HEADER = re.compile(r"\s*(?:for|while|if|elif|else|with)\b.*:\s*$")
_STORE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\[[^=]*\]\s*(?:[-+*/]?=)(?!=)")
_DEFINES = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?:: [^=]+)? = T\.([A-Za-z_][A-Za-z0-9_.]*)\(")
_CALL = re.compile(r"(?:T\.)?([A-Za-z_][A-Za-z0-9_.]*)\(")
_BINDS = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?:: [^=]+)? = (?!=)")  # a scalar bound (a LetStmt): `block_1: T.int32 = Blocks[k + 1]`
_CONDITION = re.compile(r"\s*(?:if|while) (.*):\s*$")
_STRING = re.compile(r'"[^"]*"')
_CALLED = re.compile(r"\b(?:T\.)?[A-Za-z_][A-Za-z0-9_.]*\(")  # a call's name (its arguments stay)
_IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
_KEYWORDS = frozenset({"and", "or", "not", "True", "False", "None"})
_NAME = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*?)(?:_\d+)+\b")
_EXTERN = re.compile(r'T\.call_(?:extern|intrin|packed|pure_extern)\("[^"]*", "([^"<(]*)')
_BUFFER = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)(?:\[|\.data\b)")
_ACCESS_PTR = re.compile(r"tvm_access_ptr\(T\.type_annotation\([^)]*\), ([A-Za-z_][A-Za-z0-9_]*)[,)]")  # a buffer's data var, once
# MergeSharedMemoryAllocations made it a pointer into the merged buffer
_COPY_SUFFIX = re.compile(r"(?:_local_cast)?(?:_\d+)*$")  # TVM's copies (A_1); TileLang's cast staging (q_local_cast)
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_NOT_BUFFERS = frozenset({"T", "I", "tl"})
# Passes restate an allocation in another form (a block's field becomes an alloc_buffer, a copy of
# it a decl_buffer): one operation for the source map.
_ALLOCATIONS = frozenset({"sblock_alloc_buffer", "alloc_buffer", "decl_buffer", "allocate", "handle_add_byte_offset", "Buffer", "match_buffer"})


@dataclass(frozen=True)
class Statement:
    """A statement's operation and buffers. op "" : no statement a pass rewrites in place (a
    header, a brace, a blank line)."""

    op: str
    buffers: frozenset[str]

    @property
    def key(self) -> tuple[str, frozenset[str]]:
        return self.op, self.buffers


def buffer_name(name: str) -> str:
    """A buffer's name without the suffix TVM gives its copies (``K_tile_1`` -> ``K_tile``) or the
    one tl.DecoupleTypeCast gives the buffer it stages a cast in (``q_local_cast`` -> ``q``)."""
    return _COPY_SUFFIX.sub("", name) or name


@functools.lru_cache(maxsize=1 << 16)
def statement(line: str) -> Statement:
    """The facts of one printed line (cached: consecutive snapshots share most of their lines)."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#") or _HEADER.match(line):
        return Statement("", frozenset())
    names = _BUFFER.findall(line) + _ACCESS_PTR.findall(line)
    buffers = {buffer_name(name) for name in names} - _NOT_BUFFERS
    defines = _DEFINES.match(line)
    if defines is not None:
        buffers.add(buffer_name(defines.group(1)))
        op = "alloc" if defines.group(2) in _ALLOCATIONS else defines.group(2)
    elif _STORE.match(line):
        op = "store"
    elif (binds := _BINDS.match(line)) is not None:
        buffers.add(buffer_name(binds.group(1)))
        op = "bind"
    else:
        call = _CALL.search(stripped)
        if call is None:
            return Statement("", frozenset())
        op = call.group(1)
        if op == "evaluate":  # T.evaluate(T.call_extern(...)): the call inside is the statement
            inner = _CALL.search(stripped, call.end())
            op = inner.group(1) if inner is not None else op
    extern = _EXTERN.search(stripped)
    if extern is not None:
        op = f"{op}:{extern.group(1)}"
    return Statement(op, frozenset(buffers))


@functools.lru_cache(maxsize=1 << 16)
def copy_key(line: str) -> tuple[str, ...] | None:
    """What a copy of this statement has in common with it, whatever a pass renamed (TVM's ``_1``
    suffixes) or shifted (a pipeliner's ``Blocks[k + 1]`` for ``Blocks[k]``): a branch's condition up
    to renaming; a statement's operation, the buffers it names and the scalar it binds. None for
    what names nothing (a barrier, a brace, a loop): alike lines of those are no copies of each other."""
    condition = _CONDITION.match(line)
    if condition is not None:
        # The names the condition tests, up to renaming: a pass that flattens a buffer
        # (`T.Cast("bool", BlockMask_1[by * 16 + bx * 8 + k])` of `BlockMask[by, bx, k]`) or shifts
        # the loop's index (`Blocks[k + 1]`) changes the indices, not the names.
        text = _CALLED.sub(" ", _STRING.sub(" ", condition.group(1)))
        names = sorted({_NAME.sub(r"\1", name) for name in _IDENTIFIER.findall(text)} - _NOT_BUFFERS - _KEYWORDS)
        return ("if", *names) if names else None
    facts = statement(line)
    if not facts.op or not facts.buffers or facts.op == "alloc":
        return None
    return (facts.op, *sorted(facts.buffers))


@functools.lru_cache(maxsize=1 << 16)
def all_tokens(line: str) -> tuple[str, ...]:
    """Every name and number of a line, in order (arguments such as ``1, 0, 64`` included): what
    tells apart two statements with the same operation and buffers."""
    return tuple(_TOKEN.findall(line))


def likeness(a: str, b: str) -> float:
    """How alike two lines are, over all their names and numbers (Jaccard of the multisets)."""
    ta, tb = all_tokens(a), all_tokens(b)
    if not ta or not tb:
        return 0.0
    common: dict[str, int] = {}
    for token in ta:
        common[token] = common.get(token, 0) + 1
    shared = 0
    for token in tb:
        if common.get(token, 0) > 0:
            common[token] -= 1
            shared += 1
    return shared / (len(ta) + len(tb) - shared)
