"""The IR side of `lower-trace reduce`: a failing pass's input as TVM's JSON, the places it can be
made smaller, and the smaller module a chosen set of those places gives.

A *site* is one thing the reducer may take away, numbered in the pre-order of the module it was
found in: a statement of a sequence (deleted), a loop (replaced by its body at its first
iteration), a buffer a block allocates that nothing names any more (dropped), an annotation of
a block or a loop (dropped), a stored value (made a constant, or one operand of a binary
operation). Every candidate
is built from the same module and its chosen sites, so sites keep their numbers through a
whole round of delta debugging; the next round numbers the sites of the round's result.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

try:
    import tilelang  # noqa: F401  (registers TileLang's IR nodes before a module is loaded)
    from tilelang import tvm
except ImportError:  # plain TVM
    import tvm

from lower_trace.integrations.tilelang_layout_restore import restore_layouts

tir: Any = getattr(tvm, "tirx", None) or tvm.tir  # 0.1.15's TVM calls it tirx
_NOOP = tir.Evaluate(0)
_BINARY = tuple(getattr(tir, name) for name in ("Add", "Sub", "Mul", "Div", "FloorDiv", "FloorMod", "Min", "Max") if hasattr(tir, name))
_BLOCK: Any = getattr(tir, "SBlock", None) or getattr(tir, "Block", None)
_SEQ_KEY = "tirx.SeqStmt" if hasattr(tvm, "tirx") else "tir.SeqStmt"  # the type key ir_transform filters on


@dataclass(frozen=True)
class Site:
    kind: str  # "statement", "loop" or "buffer"
    number: int  # in the module's pre-order (buffers: the block's number)
    label: str  # what it is, for progress lines: "BufferStore", "For i", "buffer frag"


def load(text: str) -> Any:
    """A module from its JSON, TileLang's layouts brought back (as repro.py does)."""
    mod, _ = restore_layouts(tvm.ir.load_json(text), text)
    return mod


def save(mod: Any) -> str:
    return tvm.ir.save_json(mod)


def script(mod: Any) -> str:
    return mod.script()


def well_formed(mod: Any) -> bool:
    """TVM's own verifier; a candidate it rejects is not tried."""
    try:
        return bool(tir.analysis.verify_well_formed(mod, assert_mode=False))
    except Exception:
        return False


def _functions(mod: Any) -> list[tuple[Any, Any]]:
    return [(gv, func) for gv, func in mod.functions.items() if isinstance(func, tir.PrimFunc)]


def _nodes(mod: Any) -> list[Any]:
    """Every statement of every PrimFunc, in pre-order (the numbering of sites)."""
    found: list[Any] = []
    for _, func in _functions(mod):
        tir.stmt_functor.pre_order_visit(func.body, lambda node: (found.append(node) if isinstance(node, tir.Stmt) else None) or True)
    return found


def statement_count(mod: Any) -> int:
    """Statements that do something: sequences, blocks' realizes and no-ops are not counted."""
    skip = (tir.SeqStmt, getattr(tir, "SBlockRealize", getattr(tir, "BlockRealize", tir.SeqStmt)))
    return sum(1 for node in _nodes(mod) if not isinstance(node, skip) and not _is_noop(node))


def _is_noop(node: Any) -> bool:
    return isinstance(node, tir.Evaluate) and isinstance(node.value, tir.IntImm)


def sites(mod: Any, kind: str) -> list[Site]:
    """The places of one kind the module can be made smaller at."""
    nodes = _nodes(mod)
    index = {node: i for i, node in enumerate(nodes)}  # statements hash and compare as objects
    out: list[Site] = []
    if kind == "statement":
        for node in nodes:
            if isinstance(node, tir.SeqStmt):
                out += [Site(kind, index[child], type(child).__name__) for child in node.seq if not _is_noop(child)]
    elif kind == "loop":
        out = [Site(kind, index[node], f"For {node.loop_var.name}") for node in nodes if isinstance(node, tir.For)]
    elif kind == "buffer":
        for node in nodes:
            if _BLOCK is not None and isinstance(node, _BLOCK):
                used = _buffers_named(node.body)
                out += [Site(kind, index[node], f"buffer {b.name}") for b in node.alloc_buffers if b.data not in used]
    elif kind == "value":
        for node in nodes:
            if isinstance(node, tir.BufferStore) and not isinstance(node.value, (tir.IntImm, tir.FloatImm)):
                out.append(Site(kind, index[node], "value 0"))
                if isinstance(node.value, _BINARY):
                    out += [Site(kind, index[node], "value a"), Site(kind, index[node], "value b")]
    elif kind == "annotation":
        for node in nodes:
            if isinstance(node, (tir.For, *((_BLOCK,) if _BLOCK is not None else ()))) and node.annotations:
                out += [Site(kind, index[node], f"annotation {key}") for key in node.annotations]
    return sorted(set(out), key=lambda s: (s.number, s.label))


def _buffers_named(body: Any) -> set[Any]:
    """The data variables of every buffer a body loads, stores or names in a call."""
    named: set[Any] = set()

    def visit(node: Any) -> None:
        buffer = getattr(node, "buffer", None)
        if buffer is not None and hasattr(buffer, "data"):
            named.add(buffer.data)
        if isinstance(node, tir.Var):
            named.add(node)

    tir.stmt_functor.post_order_visit(body, visit)
    return named


def without(mod: Any, chosen: Iterable[Site]) -> Any:
    """The module with the chosen sites taken away (they are of one kind and numbered in mod)."""
    chosen = list(chosen)
    if not chosen:
        return mod
    nodes = _nodes(mod)
    by_node = {nodes[site.number]: site for site in chosen if site.kind in ("statement", "loop")}
    values: dict[Any, set[str]] = {}  # per store, the replacements chosen for its value (the first that applies is made)
    for site in chosen:
        if site.kind == "value":
            values.setdefault(nodes[site.number], set()).add(site.label.split(" ", 1)[1])
    buffers: dict[Any, set[str]] = {}  # per block or loop, the names to drop from it (buffers or annotation keys)
    for site in chosen:
        if site.kind in ("buffer", "annotation"):
            buffers.setdefault(nodes[site.number], set()).add(site.label.split(" ", 1)[1])

    def preorder(node: Any) -> Any:
        picks = values.get(node)
        if picks is not None:
            return tir.BufferStore(node.buffer, _smaller_value(node.value, picks), node.indices, node.predicate)
        site = by_node.get(node)
        if site is None:
            return None
        if site.kind == "statement":
            return _NOOP
        return tir.stmt_functor.substitute(node.body, {node.loop_var: node.min})  # a loop at its first iteration

    def postorder(node: Any) -> Any:
        if isinstance(node, tir.SeqStmt):
            kept = [child for child in node.seq if not _is_noop(child)]
            return _NOOP if not kept else kept[0] if len(kept) == 1 else tir.SeqStmt(kept)
        return None

    out = mod
    for gv, func in _functions(mod):
        body = _drop_names(func.body, buffers) if buffers else tir.stmt_functor.ir_transform(func.body, preorder, None)
        body = tir.stmt_functor.ir_transform(body, None, postorder, [_SEQ_KEY])
        out = tvm.IRModule({g: (func.with_body(body) if g.same_as(gv) else f) for g, f in out.functions.items()}, attrs=out.attrs)
    return out


def _drop_names(body: Any, names_of: dict[Any, set[str]]) -> Any:
    """The body with the named buffers taken out of blocks' allocations and the named keys out of
    blocks' and loops' annotations (the nodes by identity, as found in body)."""

    def preorder(node: Any) -> Any:
        names = names_of.get(node)
        if names is None:
            return None
        inner = tir.stmt_functor.ir_transform(node.body, preorder, None)
        annotations = {key: value for key, value in node.annotations.items() if key not in names}
        if isinstance(node, tir.For):
            return tir.For(node.loop_var, node.min, node.extent, node.kind, inner, node.thread_binding, annotations)
        kept = [b for b in node.alloc_buffers if b.name not in names]
        return node.__class__(node.iter_vars, node.reads, node.writes, node.name_hint, inner, node.init, kept, node.match_buffers, annotations)

    return tir.stmt_functor.ir_transform(body, preorder, None)


def _smaller_value(value: Any, picks: set[str]) -> Any:
    """A constant of the value's type ("0"), else one operand of a binary value ("a", "b")."""
    if "0" in picks:
        return tir.const(0, value.dtype)
    if "a" in picks and isinstance(value, _BINARY):
        return value.a
    if "b" in picks and isinstance(value, _BINARY):
        return value.b
    return value
