"""Printing a compile's snapshots, reusing the text of functions printed before.

After the host/device split a module holds several functions, and most passes change only
some of them: the others are rebuilt around the very same body, parameters, buffers and
attributes, so they print exactly as before. ``ReusingPrinter`` prints a module in which each
such function is replaced by a tiny stub bound to the same GlobalVar, and puts the text it
printed before in the stub's place. TVMScript prints a module as a head (the imports, the class
line, module attributes) and one block per function, sorted by name, separated by a blank line;
a function's block depends only on the function and on which GlobalVars the module defines
(a call to another function prints as ``Module.<name>``), and the stubs keep every GlobalVar.

Safeguards, each falling back to printing the whole module:

- only PrimFuncs are reused (a stub is a PrimFunc: the head's imports stay the same);
- every print is cut into head and blocks, and the blocks must join back into that very text;
- a block printed in a module with other GlobalVars is reused only if it names none;
- the first pieced texts of each process are compared with the whole print, and one that differs
  switches piecing off for the process (``CHECKS`` of them: the TVM build at hand is checked
  before the printer relies on it).
"""

from __future__ import annotations

import re
from typing import Any

import tvm
import tvm_ffi

from lower_trace.capture.ir_adapter import Identity

_make_module = tvm.ir.module._ffi_api.IRModule
# TVM's structural equality without its Python wrapper's conversions (a third of a small call).
_node_equal = tvm_ffi.get_global_func("node.StructuralEqual", allow_missing=True)


def structural_equal(a: Any, b: Any) -> bool:
    if _node_equal is None:
        return bool(tvm.ir.structural_equal(a, b))
    return bool(_node_equal(a, b, False, False))

_tir = getattr(tvm, "tirx", None) or tvm.tir  # TileLang's TVM names it tirx; Apache TVM tir
_PRIM_FUNC: type = _tir.PrimFunc
_FUNCTION_PARTS = ("body", "params", "buffer_map", "attrs")
_BLOCK_START = "\n    @"  # a function block: its decorator, at the class body's indent
_DEF = re.compile(r"    def ([A-Za-z_][A-Za-z0-9_]*)\(")
_GLOBAL_REFERENCE = ("Module.", "I.GlobalVar")  # how a block names another function


_ITEMS: dict[int, tuple[Any, list[tuple[Any, Any]]]] = {}  # by the map's address: (the map, held; its items)
_ITEMS_KEPT = 32


def function_items(functions: Any) -> list[tuple[Any, Any]]:
    """A module's (GlobalVar, function) pairs. Reading a TVM map costs a few FFI calls per item, and a
    pass's input map is the last pass's output map: each map is read once (the map is held, so its
    address stays its own)."""
    handle = getattr(functions, "__chandle__", None)
    if handle is None:  # an FFI without addresses: read it again
        return list(functions.items())
    key = handle()
    known = _ITEMS.get(key)
    if known is not None:
        return known[1]
    items = list(functions.items())
    if len(_ITEMS) >= _ITEMS_KEPT:
        _ITEMS.clear()  # bounded: what the next passes need is put back at once
    _ITEMS[key] = (functions, items)
    return items


class _Checks:
    """Process-wide: how many pieced texts are still compared with the whole print."""

    left = 2
    enabled = True


CHECKS = _Checks()
_stub: Any = None


def _the_stub() -> Any:
    global _stub
    if _stub is None:
        _stub = _PRIM_FUNC([], _tir.Evaluate(0))
    return _stub


class _Block:
    __slots__ = ("function", "names", "text")

    def __init__(self, function: Any, text: str, names: frozenset[str]) -> None:
        self.function = function  # held: TVM copies on write, so its parts stay as printed
        self.text = text
        self.names = names  # the functions of the module it was printed in


def cut(text: str) -> tuple[str, list[tuple[str, str]]] | None:
    """(head, [(function name, its block)]) when the blocks join back into text, else None (also
    for a text that uses metadata: its references and the note at its end span the module)."""
    start = text.find(_BLOCK_START)
    if start < 0 or "metadata" in text or "Metadata" in text:
        return None
    head, rest = text[: start + 1], text[start + 1 :]
    blocks = rest.split("\n\n" + _BLOCK_START[1:])
    blocks = [blocks[0], *(_BLOCK_START[1:] + block for block in blocks[1:])]
    if head + "\n\n".join(blocks) != text:
        return None
    named = []
    for block in blocks:
        match = _DEF.match(block, block.find("\n") + 1)
        if match is None:
            return None
        named.append((match.group(1), block))
    return head, named


class ReusingPrinter:
    """One per compile (see the module docstring); called in snapshot order, on one thread."""

    def __init__(self, print_ir: Any) -> None:
        self._print_ir = print_ir  # the adapter's own printer: a patched one is used too
        self._blocks: dict[str, _Block] = {}  # by function name: the block printed last
        self.reused = 0  # blocks not printed again (benchmarks and tests count them)

    def __call__(self, identity: Identity) -> str:
        attrs, infos, functions = identity
        whole = lambda: self._print_ir(_make_module(functions, attrs, infos))  # noqa: E731
        if not CHECKS.enabled:
            return whole()
        items = function_items(functions)
        if len(items) < 2 and not self._blocks:
            return whole()  # before the host/device split: nothing printed to reuse, nothing to learn
        names = frozenset(gv.name_hint for gv, _ in items)
        reused: dict[str, str] = {}
        parts: dict[Any, Any] = {}
        for gv, function in items:
            block = self._blocks.get(gv.name_hint)
            if block is not None and _unchanged(block.function, function) and (block.names == names or not _names_others(block.text)):
                reused[gv.name_hint] = block.text
                parts[gv] = _the_stub()
            else:
                parts[gv] = function
        if not reused:
            text = whole()
            if len(items) > 1:  # a module of one function is learnt from the module it came out of
                self._learn(text, items, names, reused)
            return text
        printed = self._print_ir(_make_module(tvm_ffi.Map(parts), attrs, infos))
        cut_up = cut(printed)
        if cut_up is None or sorted(name for name, _ in cut_up[1]) != sorted(names):
            text = whole()
            self._learn(text, items, names, {})
            return text
        head, blocks = cut_up
        text = head + "\n\n".join(reused.get(name, block) for name, block in blocks)
        if CHECKS.left > 0:
            CHECKS.left -= 1
            expected = whole()
            if expected != text:
                CHECKS.enabled = False  # this TVM prints otherwise than assumed: whole prints from now on
                self._blocks.clear()
                return expected
        self.reused += len(reused)
        self._learn_blocks(blocks, items, names, reused)
        return text

    def _learn(self, text: str, items: list[tuple[Any, Any]], names: frozenset[str], reused: dict[str, str]) -> None:
        cut_up = cut(text)
        if cut_up is None:
            self._blocks.clear()
            return
        self._learn_blocks(cut_up[1], items, names, reused)

    def _learn_blocks(self, blocks: list[tuple[str, str]], items: list[tuple[Any, Any]], names: frozenset[str], reused: dict[str, str]) -> None:
        by_name = {gv.name_hint: function for gv, function in items}
        for name, block in blocks:
            function = by_name.get(name)
            if name in reused or not isinstance(function, _PRIM_FUNC):
                continue  # a reused block stays as it was learnt
            self._blocks[name] = _Block(function, block, names)


def _names_others(block: str) -> bool:
    return any(reference in block for reference in _GLOBAL_REFERENCE)


def _unchanged(printed: Any, function: Any) -> bool:
    """The very function printed before, or one rebuilt around the very same parts: it prints the
    same (its name is the GlobalVar's, the same by construction)."""
    return printed.same_as(function) or same_parts(printed, function)


def same_parts(a: Any, b: Any) -> bool:
    """A function rebuilt around the very same body, params, buffers and attrs (a no-op
    pass often returns one): equal without walking the body."""
    try:
        if not all(same_object(getattr(a, part), getattr(b, part)) for part in _FUNCTION_PARTS):
            return False
        # Types are compared structurally: TVM's Type.same_as recurses into itself.
        ours, theirs = getattr(a, "ret_type", None), getattr(b, "ret_type", None)
        return ours is theirs if ours is None or theirs is None else structural_equal(ours, theirs)
    except AttributeError:  # not a PrimFunc: compared structurally
        return False


def same_object(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return a is b or a.same_as(b)
