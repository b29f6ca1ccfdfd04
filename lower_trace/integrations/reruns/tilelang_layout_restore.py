"""TileLang layouts brought back exactly from TVM's JSON.

A TileLang ``Layout`` / ``Fragment`` is written in TileLang's *placeholder* variables
(``_i``, ``_j``, ... for the input dimensions, ``_rep`` for replication): one C++ object
each, shared by every layout of the process, which TileLang's passes compare by identity
and bind in their analyzers. TVM's JSON keeps every field of a layout, but a loaded module
gets new variables that merely have those names: a pass that reads layouts then fails
(``Layout for shared buffer S has symbolic output extent _i // 8 + 1``) or makes other code.

:func:`restore_layouts` puts TileLang's own placeholders back, everywhere a loaded layout
uses one, and touches nothing else: only the objects on the way from the module to those
variables are rebuilt (through TVM's reflection, every field copied, spans too), shared
objects stay shared, and the result serialises to exactly the JSON it was loaded from
(checked; when it would not, the module is returned as loaded, with a note). The
placeholders are TileLang's, obtained from its own layout constructors.

This file is self-contained (it imports only TVM, tvm_ffi and TileLang): ``lower-trace``
copies it into every ``repro.py`` it writes, which needs no lower-trace to run.
"""

from typing import Any


def restore_layouts(mod: Any, original_json: str = "") -> tuple[Any, str]:
    """(mod with TileLang's placeholder variables in its layouts, a note -- "" unless something
    could not be restored). original_json: the JSON mod was loaded from, to check the result."""
    try:
        from tilelang.layout import Fragment, Layout
    except ImportError:
        return mod, ""  # no TileLang here, so no layouts
    import tvm_ffi

    object_type = tvm_ffi.core.Object
    layouts = [obj for obj in _reachable(mod, object_type) if isinstance(obj, Layout)]
    if not layouts:
        return mod, ""
    real = _placeholders(Layout, Fragment, max(len(layout.input_size) for layout in layouts))
    swap: dict[int, Any] = {}
    for layout in layouts:
        exprs = list(layout.forward_index) + ([layout.forward_thread] if isinstance(layout, Fragment) else [])
        for var in _vars(exprs):
            own = real.get(var.name)
            if own is not None and not var.same_as(own):
                swap[var.__chandle__()] = own
    note = _unreflected_note(Fragment, layouts)
    if not swap:
        return mod, note
    restored = _Rewriter(swap, object_type).rewrite(mod)
    if original_json:
        import tvm

        if tvm.ir.save_json(restored) != original_json:
            return mod, "the layouts of this input could not be brought back exactly (TileLang's placeholder variables are not restored)"
    return restored, note


_LEAVES = ("ffi.String", "ffi.Bytes", "ffi.Shape", "ffi.Function", "ffi.Module", "ffi.Tensor", "ir.Op")


def _type_key(obj: Any) -> str:
    return type(obj).__tvm_ffi_type_info__.type_key


_FIELDS: dict[str, list[tuple[str, Any]]] = {}


def _fields(obj: Any) -> list[tuple[str, Any]]:
    """(name, getter) of every reflected field of obj's type, its ancestors' first."""
    info = type(obj).__tvm_ffi_type_info__
    found = _FIELDS.get(info.type_key)
    if found is None:
        chain = []
        while info is not None:
            chain.append(info)
            info = info.parent_type_info
        found = _FIELDS[chain[0].type_key] = [(f.name, f.getter) for i in reversed(chain) for f in i.fields]
    return found


def _children(obj: Any) -> list[Any]:
    kind = type(obj).__name__
    if kind == "Array":
        return list(obj)
    if kind == "Map":
        return [item for pair in obj.items() for item in pair]
    return [getter(obj) for _, getter in _fields(obj)]


def _reachable(root: Any, object_type: type) -> list[Any]:
    """Every object reachable from root, each once."""
    seen: set[int] = set()
    found = []
    stack = [root]
    while stack:
        obj = stack.pop()
        if not isinstance(obj, object_type):
            continue
        handle = obj.__chandle__()
        if handle in seen:
            continue
        seen.add(handle)
        found.append(obj)
        if _type_key(obj) not in _LEAVES:
            stack.extend(_children(obj))
    return found


def _vars(exprs: list[Any]) -> list[Any]:
    import tvm

    tir = getattr(tvm, "tirx", None) or tvm.tir
    found: list[Any] = []
    for expr in exprs:
        tir.stmt_functor.post_order_visit(expr, lambda node: found.append(node) if isinstance(node, tir.Var) else None)
    return found


def _placeholders(layout_type: Any, fragment_type: Any, dims: int) -> dict[str, Any]:
    """TileLang's placeholder variables by name, from its own constructors: a layout's forward
    variables are its input placeholders, a replicated fragment's thread its replication one."""
    dims = max(dims, 1)
    names = layout_type([2] * dims, lambda *index: list(index)).get_forward_vars()
    rep = fragment_type([2], forward_thread_fn=lambda i, r: r, replicate=2, forward_index_fn=lambda i: i).forward_thread
    found = {var.name: var for var in names}
    found[rep.name] = rep
    return found


def _unreflected_note(fragment_type: Any, layouts: list[Any]) -> str:
    """TileLang up to 0.1.9 does not reflect a fragment's thread range: TVM's JSON drops it, and
    nothing in Python can set it."""
    fragments = [layout for layout in layouts if isinstance(layout, fragment_type)]
    if not fragments or any(name == "thread_range" for name, _ in _fields(fragments[0])):
        return ""
    import tilelang

    return (
        f"TileLang {getattr(tilelang, '__version__', '')} does not keep a fragment's thread range in TVM's JSON, and Python cannot set one: "
        f"the {len(fragments)} fragment layout{'s' if len(fragments) != 1 else ''} of this input load without it, "
        "so a pass that reads it (tl.LowerTileOp) may make other code"
    )


class _Rewriter:
    """Rebuilds the objects that reach a swapped variable, memoised: shared objects stay shared."""

    def __init__(self, swap: dict[int, Any], object_type: type) -> None:
        import tvm_ffi

        self.swap = swap
        self.object_type = object_type
        self.memo: dict[int, Any] = {}
        self.make = tvm_ffi.get_global_func("ffi.MakeObjectFromPackedArgs")
        self.array = tvm_ffi.get_global_func("ffi.Array")
        self.map = tvm_ffi.get_global_func("ffi.Map")

    def rewrite(self, obj: Any) -> Any:
        if not isinstance(obj, self.object_type):
            return obj
        handle = obj.__chandle__()
        if handle in self.memo:
            return self.memo[handle]
        if handle in self.swap:
            out = self.swap[handle]
        elif _type_key(obj) in _LEAVES:
            out = obj
        else:
            out = self._rebuilt(obj)
        self.memo[handle] = out
        return out

    def _rebuilt(self, obj: Any) -> Any:
        kind = type(obj).__name__
        old = _children(obj)
        new = [self.rewrite(child) for child in old]
        if not any(isinstance(a, self.object_type) and a.__chandle__() != b.__chandle__() for a, b in zip(old, new, strict=False)):
            return obj
        if kind == "Array":
            return self.array(*new)
        if kind == "Map":
            return self.map(*new)
        args: list[Any] = [_type_key(obj)]
        for (name, _), value in zip(_fields(obj), new, strict=False):
            args += [name, value]
        return self.make(*args)
