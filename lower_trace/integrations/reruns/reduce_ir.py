"""The IR side of `lower-trace reduce`: a failing pass's input as TVM's JSON, the places it can be
made smaller, and the smaller module a chosen set of those places gives.

A *site* is one thing the reducer may take away or make smaller: a function of the module
(dropped), a statement of a sequence (deleted), a loop (replaced by its body at its first
iteration), a branch (an `if` replaced by its then or its else case), a buffer a block allocates
that nothing names any more (dropped), a parameter nothing uses (dropped, with its buffer), an
annotation of a block or a loop or one entry of a block's layout_map (dropped), a stored value (made a constant, or one operand of a
binary operation), a loop's constant extent or a buffer's constant shape (made 1, or halved).
Statement-level sites are numbered in the pre-order of the module they were found in; functions,
parameters and shapes by the function's place in the module. Every candidate is built from
the same module and its chosen sites, so sites keep their numbers through a whole round of delta
debugging; the next round numbers the sites of the round's result.
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

from lower_trace.integrations.reruns.tilelang_layout_restore import restore_layouts

tir: Any = getattr(tvm, "tirx", None) or tvm.tir  # 0.1.15's TVM calls it tirx
if not hasattr(tir, "stmt_functor"):  # apache-tvm 0.27's Python API has no TIR visitors or mutators
    raise ImportError(f"this TVM ({tvm.__version__}) has no Python IR mutators ({tir.__name__}.stmt_functor), which the reducer needs; TileLang's TVM has them")
_NOOP = tir.Evaluate(0)
_BINARY = tuple(getattr(tir, name) for name in ("Add", "Sub", "Mul", "Div", "FloorDiv", "FloorMod", "Min", "Max") if hasattr(tir, name))
_BLOCK: Any = getattr(tir, "SBlock", None) or getattr(tir, "Block", None)
_REGION_OPS = ("tl.region", "tl.tileop.region")  # TileLang's T.region: 0.1.15's name, 0.1.13's
_SEQ_KEY = "tirx.SeqStmt" if hasattr(tvm, "tirx") else "tir.SeqStmt"  # the type key ir_transform filters on


@dataclass(frozen=True)
class Site:
    kind: str  # one of reduction.KINDS
    number: int  # the node's in the module's pre-order (buffers, annotations: the block's or loop's;
    #              functions, parameters, shapes: the function's place in the module)
    label: str  # what it is and what without() does: "BufferStore", "For i", "buffer frag",
    #             "parameter D", "branch else", "extent half i", "shape 1 frag"


def load(text: str) -> Any:
    """A module from its JSON, TileLang's layouts brought back (as repro.py does)."""
    mod, _ = restore_layouts(tvm.ir.load_json(text), text)
    return mod


def save(mod: Any) -> str:
    return tvm.ir.save_json(mod)


def script(mod: Any) -> str:
    """TVMScript, and the layouts blocks annotate, which it prints only as metadata references."""
    layouts: list[str] = []

    def visit(node: Any) -> None:
        if _BLOCK is not None and isinstance(node, _BLOCK) and "layout_map" in node.annotations:
            layouts.extend(f"#   {getattr(key, 'name', key)}: {layout}" for key, layout in node.annotations["layout_map"].items())

    for _, func in _functions(mod):
        tir.stmt_functor.post_order_visit(func.body, visit)
    text = mod.script().rstrip()
    return text + ("\n\n# The layouts annotated above (layout_map's metadata):\n" + "\n".join(layouts) if layouts else "") + "\n"


def well_formed(mod: Any) -> bool:
    """TVM's own verifier; a candidate it rejects is not tried."""
    try:
        return bool(tir.analysis.verify_well_formed(mod, assert_mode=False))
    except Exception:
        return False


def out_of_bounds(mod: Any) -> int:
    """How many buffer accesses (loads, stores, TileLang's regions) surely reach past a constant
    dimension, given the loops' and threads' ranges: a smaller shape must not make any more of
    them, or the reduced module would fail for a reason of its own."""
    analyzer = tvm.arith.Analyzer()
    accesses: list[tuple[Any, list[Any], list[Any]]] = []  # (buffer, first indices, extents)

    def visit(node: Any) -> None:
        if isinstance(node, tir.For):
            analyzer.bind(node.loop_var, tvm.ir.Range.from_min_extent(node.min, node.extent))
        elif isinstance(node, tir.AttrStmt) and node.attr_key == "thread_extent" and isinstance(node.node, tir.IterVar):
            analyzer.bind(node.node.var, tvm.ir.Range.from_min_extent(0, node.value))
        elif isinstance(node, (tir.BufferLoad, tir.BufferStore)):
            accesses.append((node.buffer, list(node.indices), [1] * len(node.indices)))
        elif isinstance(node, tir.Call) and getattr(node.op, "name", "") in _REGION_OPS and node.args and isinstance(node.args[0], tir.BufferLoad):
            load = node.args[0]
            accesses.append((load.buffer, list(load.indices), list(node.args[2:])))

    for _, func in _functions(mod):
        tir.stmt_functor.post_order_visit(func.body, visit)
    count = _views_past_their_data(mod)
    for buffer, indices, extents in accesses:
        widths = [*extents, *[1] * len(indices)][: len(indices)]
        for dim, index, width in zip(buffer.shape, indices, widths, strict=False):  # flattened accesses have fewer
            constant = isinstance(dim, tir.IntImm) and isinstance(width, (int, tir.IntImm))
            if constant and analyzer.const_int_bound(index).max_value + int(width) > dim.value:
                count += 1
                break
    return count


def _views_past_their_data(mod: Any) -> int:
    """Buffers in a body that view a parameter's data (same data variable) with more elements than
    the parameter's buffer has: a smaller parameter must take its views down with it."""
    count = 0
    for _, func in _functions(mod):
        sizes = {b.data: size for b in func.buffer_map.values() if (size := _elements(b)) is not None}
        for buffer in {b for b in _body_buffers(func.body) if b.data in sizes}:
            count += int((_elements(buffer) or 0) > sizes[buffer.data])
    return count


def _elements(buffer: Any) -> int | None:
    total = 1
    for dim in buffer.shape:
        if not isinstance(dim, tir.IntImm):
            return None
        total *= dim.value
    return total


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
    if kind in _STATEMENT_SITES:
        out = [Site(kind, index[node], label) for node in nodes for label in _STATEMENT_SITES[kind](node)]
    elif kind == "statement":
        out = [Site(kind, index[child], type(child).__name__) for child in _sequenced(nodes)]
    elif kind in ("function", "parameter", "shape"):
        out = _function_sites(mod, kind, nodes, index)
    return sorted(set(out), key=lambda s: (s.number, s.label))


def _sequenced(nodes: list[Any]) -> list[Any]:
    """Every statement of a sequence that does something (a statement site: deleted)."""
    return [child for node in nodes if isinstance(node, tir.SeqStmt) for child in node.seq if not _is_noop(child)]


# Per kind of statement-level site, the sites' labels at one statement (none: no site there).


def _loop_labels(node: Any) -> list[str]:
    return [f"For {node.loop_var.name}"] if isinstance(node, tir.For) else []


def _is_block(node: Any) -> bool:
    return _BLOCK is not None and isinstance(node, _BLOCK)


def _buffer_labels(node: Any) -> list[str]:
    """A buffer a block allocates that nothing in it names any more."""
    if not _is_block(node):
        return []
    used = _buffers_named(node.body)
    return [f"buffer {b.name}" for b in node.alloc_buffers if b.data not in used]


def _value_labels(node: Any) -> list[str]:
    """A stored value that is no constant: made 0, or (a binary operation) one of its operands."""
    if not isinstance(node, tir.BufferStore) or isinstance(node.value, (tir.IntImm, tir.FloatImm)):
        return []
    return ["value 0", "value a", "value b"] if isinstance(node.value, _BINARY) else ["value 0"]


def _annotation_labels(node: Any) -> list[str]:
    if (isinstance(node, tir.For) or _is_block(node)) and node.annotations:
        return [f"annotation {key}" for key in node.annotations]
    return []


def _attribute_labels(node: Any) -> list[str]:
    """An attribute statement replaced by its body (thread launches stay)."""
    return [f"attribute {node.attr_key}"] if isinstance(node, tir.AttrStmt) and node.attr_key != "thread_extent" else []


def _layout_labels(node: Any) -> list[str]:
    """One entry of a block's layout_map (TileLang infers what is not given)."""
    if _is_block(node) and "layout_map" in node.annotations:
        return [f"layout {_key_name(key)}" for key in node.annotations["layout_map"]]
    return []


def _branch_labels(node: Any) -> list[str]:
    return ["branch then", "branch else"] if isinstance(node, tir.IfThenElse) else []


def _extent_labels(node: Any) -> list[str]:
    """A loop's extent to 1 at once, else halved (both chosen: to 1)."""
    return [f"extent 1 {node.loop_var.name}", f"extent half {node.loop_var.name}"] if _halvable_loop(node) else []


_STATEMENT_SITES = {
    "loop": _loop_labels,
    "buffer": _buffer_labels,
    "value": _value_labels,
    "annotation": _annotation_labels,
    "attribute": _attribute_labels,
    "layout": _layout_labels,
    "branch": _branch_labels,
    "extent": _extent_labels,
}


def _key_name(key: Any) -> str:
    """A layout_map key's name: a buffer's, or its data variable's."""
    return str(getattr(key, "name", None) or getattr(key, "name_hint", key))


def _halvable_loop(node: Any) -> bool:
    """A loop of a constant extent of 2 or more that no thread is bound to."""
    return isinstance(node, tir.For) and isinstance(node.extent, tir.IntImm) and node.extent.value >= 2 and node.thread_binding is None


def _halvable_shape(buffer: Any) -> bool:
    return all(isinstance(d, tir.IntImm) for d in buffer.shape) and any(d.value >= 2 for d in buffer.shape)


def _function_sites(mod: Any, kind: str, nodes: list[Any], index: dict[Any, int]) -> list[Site]:
    """Sites of functions, their parameters and buffers' shapes (parameters' and blocks')."""
    out: list[Site] = []
    called = _called_names(mod)
    for number, (gv, func) in enumerate(mod.functions.items()):
        if kind == "function" and len(mod.functions) > 1:
            out.append(Site(kind, number, f"function {gv.name_hint}"))
        if not isinstance(func, tir.PrimFunc):
            continue
        symbol = str(func.attrs.get("global_symbol", gv.name_hint)) if func.attrs else gv.name_hint
        if kind == "parameter" and not {gv.name_hint, symbol} & called:  # a callee's parameters stay: its calls pass them
            used = _vars_used(_without_regions(func.body, None))  # a block's reads and writes only describe it
            for param in func.params:
                buffer = func.buffer_map.get(param)
                declares = [] if buffer is None else [buffer.data, *_buffer_vars(buffer)]
                if param not in used and not any(v in used for v in declares):
                    out.append(Site(kind, number, f"parameter {param.name}"))
        elif kind == "shape":
            out += [Site(kind, number, f"shape {how} {b.name}") for b in func.buffer_map.values() if _halvable_shape(b) for how in ("1", "half")]
    if kind == "shape":
        for number, (_, func) in enumerate(_functions(mod)):
            named = {b.name for b in _body_buffers(func.body)}
            out += [Site(kind, number, f"shape {how} {name}") for name in sorted(named) for how in ("1", "half")]
    return out


def _body_buffers(body: Any) -> list[Any]:
    """The buffers a body allocates, declares or accesses (views of a parameter's data included),
    of a constant shape that can be made smaller."""
    found: list[Any] = []

    def visit(node: Any) -> None:
        if _BLOCK is not None and isinstance(node, _BLOCK):
            found.extend(node.alloc_buffers)
        elif isinstance(node, (tir.DeclBuffer, tir.BufferLoad, tir.BufferStore)):
            found.append(node.buffer)

    tir.stmt_functor.post_order_visit(body, visit)
    return [b for b in found if _halvable_shape(b)]


def _called_names(mod: Any) -> set[str]:
    """Names of the functions another function calls (by GlobalVar or by name, as packed calls do)."""
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, tir.Call) and isinstance(node.op, tvm.ir.GlobalVar):
            names.add(node.op.name_hint)
        elif isinstance(node, tir.StringImm):
            names.add(node.value)

    for _, func in _functions(mod):
        tir.stmt_functor.post_order_visit(func.body, visit)
    return names


def _vars_used(body: Any) -> set[Any]:
    used: set[Any] = set()

    def visit(node: Any) -> None:
        if isinstance(node, tir.Var):
            used.add(node)
        buffer = getattr(node, "buffer", None)
        if buffer is not None and hasattr(buffer, "data"):
            used.add(buffer.data)

    tir.stmt_functor.post_order_visit(body, visit)
    return used


def _buffer_vars(buffer: Any) -> list[Any]:
    """The variables a parameter's buffer declares (symbolic shapes and strides)."""
    return [d for d in (*buffer.shape, *buffer.strides) if isinstance(d, tir.Var)]


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
    kinds = {site.kind for site in chosen}
    if kinds & {"function", "parameter", "shape"}:
        return _without_function_sites(mod, chosen)
    nodes = _nodes(mod)
    by_node: dict[Any, Site] = {}
    for site in sorted(chosen, key=lambda s: s.label):  # a branch's "else" before its "then": the first applies
        if site.kind in ("statement", "loop", "branch", "extent", "attribute"):
            by_node.setdefault(nodes[site.number], site)
    values: dict[Any, set[str]] = {}  # per store, the replacements chosen for its value (the first that applies is made)
    for site in chosen:
        if site.kind == "value":
            values.setdefault(nodes[site.number], set()).add(site.label.split(" ", 1)[1])
    buffers: dict[Any, set[str]] = {}  # per block or loop, the names to drop from it (buffers or annotation keys)
    layouts: dict[Any, set[str]] = {}  # per block, the layout_map entries to drop
    for site in chosen:
        if site.kind in ("buffer", "annotation"):
            buffers.setdefault(nodes[site.number], set()).add(site.label.split(" ", 1)[1])
        elif site.kind == "layout":
            layouts.setdefault(nodes[site.number], set()).add(site.label.split(" ", 1)[1])

    def preorder(node: Any) -> Any:
        picks = values.get(node)
        if picks is not None:
            return tir.BufferStore(node.buffer, _smaller_value(node.value, picks), node.indices, node.predicate)
        site = by_node.get(node)
        if site is None:
            return None
        if site.kind == "statement":
            return _NOOP
        if site.kind == "attribute":
            return tir.stmt_functor.ir_transform(node.body, preorder, None)
        if site.kind == "branch":
            case = node.else_case if site.label.endswith("else") else node.then_case
            return _NOOP if case is None else tir.stmt_functor.ir_transform(case, preorder, None)
        if site.kind == "extent":
            inner = tir.stmt_functor.ir_transform(node.body, preorder, None)
            ones = any(s.label.startswith("extent 1 ") for s in chosen if s.number == site.number)
            half = tir.IntImm(node.extent.dtype, 1 if ones else node.extent.value // 2)
            return tir.For(node.loop_var, node.min, half, node.kind, inner, node.thread_binding, node.annotations)
        inner = tir.stmt_functor.ir_transform(node.body, preorder, None)
        return tir.stmt_functor.substitute(inner, {node.loop_var: node.min})  # a loop at its first iteration

    def postorder(node: Any) -> Any:
        if isinstance(node, tir.SeqStmt):
            kept = [child for child in node.seq if not _is_noop(child)]
            return _NOOP if not kept else kept[0] if len(kept) == 1 else tir.SeqStmt(kept)
        return None

    out = mod
    for gv, func in _functions(mod):
        if layouts:
            body = _drop_layouts(func.body, layouts)
        else:
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
        dropped = {b.data for b in node.alloc_buffers if b.name in names}
        if dropped:  # a dropped buffer's layout goes with it
            annotations = _with_layouts(annotations, lambda key: getattr(key, "data", key) not in dropped)
        return _block_with(node, body=inner, alloc_buffers=kept, annotations=annotations)

    return tir.stmt_functor.ir_transform(body, preorder, None)


def _drop_layouts(body: Any, names_of: dict[Any, set[str]]) -> Any:
    """The body with the named entries taken out of the given blocks' layout_map (none left: the
    annotation goes)."""

    def preorder(node: Any) -> Any:
        names = names_of.get(node)
        if names is None:
            return None
        inner = tir.stmt_functor.ir_transform(node.body, preorder, None)
        annotations = _with_layouts(dict(node.annotations.items()), lambda key: _key_name(key) not in names)
        return _block_with(node, body=inner, annotations=annotations)

    return tir.stmt_functor.ir_transform(body, preorder, None)


def _with_layouts(annotations: dict[str, Any], keep: Any) -> dict[str, Any]:
    """The annotations with only the layout_map entries whose key keep() accepts (none: no layout_map)."""
    layouts = annotations.get("layout_map")
    if layouts is None:
        return annotations
    left = {key: layout for key, layout in layouts.items() if keep(key)}
    return {k: v for k, v in annotations.items() if k != "layout_map"} | ({"layout_map": tvm.runtime.convert(left)} if left else {})


def _block_with(node: Any, **changes: Any) -> Any:
    """A copy of a block with the given fields changed (TVM's blocks have no copy-with)."""
    fields = ("iter_vars", "reads", "writes", "name_hint", "body", "init", "alloc_buffers", "match_buffers", "annotations")
    return node.__class__(*(changes[f] if f in changes else getattr(node, f) for f in fields))


def _smaller_value(value: Any, picks: set[str]) -> Any:
    """A constant of the value's type ("0"), else one operand of a binary value ("a", "b")."""
    if "0" in picks:
        return tir.const(0, value.dtype)
    if "a" in picks and isinstance(value, _BINARY):
        return value.a
    if "b" in picks and isinstance(value, _BINARY):
        return value.b
    return value


def _without_function_sites(mod: Any, chosen: list[Site]) -> Any:
    """The module without the chosen functions or parameters, or with the chosen buffers' shapes halved."""
    names = {site.label.rsplit(" ", 1)[1] for site in chosen}
    kind = chosen[0].kind
    ones = {site.label.rsplit(" ", 1)[1] for site in chosen if site.label.startswith("shape 1 ")}
    if kind == "function":
        kept = {gv: func for gv, func in mod.functions.items() if gv.name_hint not in names}
        return tvm.IRModule(kept, attrs=mod.attrs)
    functions = {}
    for gv, func in mod.functions.items():
        if isinstance(func, tir.PrimFunc):
            func = _without_parameters(func, names) if kind == "parameter" else _with_smaller_shapes(func, names, ones)
        functions[gv] = func
    return tvm.IRModule(functions, attrs=mod.attrs)


def _without_parameters(func: Any, names: set[str]) -> Any:
    params = [p for p in func.params if p.name not in names]
    buffer_map = {p: b for p, b in func.buffer_map.items() if p.name not in names}
    dropped = {b.data for p, b in func.buffer_map.items() if p.name in names}
    return tir.PrimFunc(params, _without_regions(func.body, dropped), func.ret_type, buffer_map, func.attrs)


def _without_regions(body: Any, data: set[Any] | None) -> Any:
    """The body with the blocks' read and write regions of the buffers whose data variables are
    given taken away (None: all of them)."""
    if _BLOCK is None:
        return body

    def postorder(node: Any) -> Any:
        if not isinstance(node, _BLOCK):
            return None
        regions = [[r for r in group if data is not None and r.buffer.data not in data] for group in (node.reads, node.writes)]
        return _block_with(node, reads=regions[0], writes=regions[1])

    return tir.stmt_functor.ir_transform(body, None, postorder)


def _smaller(buffer: Any, to_one: bool) -> Any:
    """The buffer with every dimension of 2 or more halved (or made 1); its data variable is the same."""
    shape = [tir.IntImm(d.dtype, 1 if to_one else max(1, d.value // 2)) for d in buffer.shape]
    return tir.decl_buffer(shape, buffer.dtype, buffer.name, data=buffer.data, scope=buffer.scope(), axis_separators=buffer.axis_separators)


def _with_smaller_shapes(func: Any, names: set[str], ones: set[str]) -> Any:
    """The function with the named buffers (parameters' or blocks') made half as large (those in
    ones: of shape 1), wherever named."""
    swap: dict[Any, Any] = {}
    for buffer in func.buffer_map.values():
        if buffer.name in names and _halvable_shape(buffer):
            swap[buffer] = _smaller(buffer, buffer.name in ones)

    for buffer in _body_buffers(func.body):
        if buffer.name in names and buffer not in swap:
            swap[buffer] = _smaller(buffer, buffer.name in ones)
    if not swap:
        return func

    def new(buffer: Any) -> Any:
        return swap.get(buffer, buffer)

    def postorder(node: Any) -> Any:
        if isinstance(node, tir.BufferStore) and node.buffer in swap:
            return tir.BufferStore(new(node.buffer), node.value, node.indices, node.predicate)
        if isinstance(node, tir.BufferLoad) and node.buffer in swap:
            return tir.BufferLoad(new(node.buffer), node.indices, node.predicate)
        if isinstance(node, tir.DeclBuffer) and node.buffer in swap:
            return tir.DeclBuffer(new(node.buffer), node.body)
        if _BLOCK is not None and isinstance(node, _BLOCK):
            regions = [[tir.BufferRegion(new(r.buffer), r.region) for r in regions] for regions in (node.reads, node.writes)]
            matched = [tir.MatchBufferRegion(m.buffer, tir.BufferRegion(new(m.source.buffer), m.source.region)) for m in node.match_buffers]
            allocs = [new(b) for b in node.alloc_buffers]
            return _block_with(node, reads=regions[0], writes=regions[1], alloc_buffers=allocs, match_buffers=matched)
        return None

    body = tir.stmt_functor.ir_transform(func.body, None, postorder)
    buffer_map = {p: new(b) for p, b in func.buffer_map.items()}
    return tir.PrimFunc(func.params, body, func.ret_type, buffer_map, func.attrs)
