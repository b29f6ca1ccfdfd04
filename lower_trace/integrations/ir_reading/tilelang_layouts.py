"""TileLang's fragment layouts, read off an IRModule for the report's layout pictures.

After ``tl.LayoutInference`` every block of a kernel carries a ``layout_map`` annotation
(buffer -> ``tilelang.layout.Fragment`` for fragments, a plain ``Layout`` for shared
memory). A Fragment maps an element's indices to a thread and a local index through two
expressions; what is kept is those expressions as TVM prints them (+ * // % on the
element's variables) with the shape, thread range and replication -- about half a
millisecond for a kernel. The grid (16k elements for a 128x128 accumulator) is evaluated
by the page, not here: through the FFI it would cost 20-250 ms per fragment.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from lower_trace.model import FragmentLayout

# The annotation as the IR's text shows it: a pass whose output's text has other ones than its
# input's changed the layouts (this is what decides, cheaply, whether layouts are read at all).
_LAYOUT_MAP_TEXT = re.compile(r'"layout_map": \{[^}]*\}')


@functools.lru_cache(maxsize=8)  # a pass's input is the last pass's output: each text is read once
def layout_text(text: str) -> frozenset[str]:
    return frozenset(_LAYOUT_MAP_TEXT.findall(text)) if '"layout_map"' in text else frozenset()


def changes_layouts(before: str, after: str) -> bool:
    found = layout_text(after)
    return bool(found) and found != layout_text(before)


def fragment_layouts(mod: Any) -> tuple[FragmentLayout, ...]:
    """Every fragment layout in mod's layout_map annotations, each buffer once. Raises on an API
    this TileLang does not have (the caller says so once and stops asking)."""
    import importlib

    import tvm
    from tilelang.layout import Fragment

    tir = importlib.import_module("tvm.tirx" if hasattr(tvm, "tirx") else "tvm.tir")  # renamed in TileLang 0.1.13
    post_order_visit = importlib.import_module(f"{tir.__name__}.stmt_functor").post_order_visit
    block_types = tuple(t for t in (getattr(tir, "Block", None), getattr(tir, "SBlock", None)) if t is not None)
    found: dict[tuple[str, str], FragmentLayout] = {}
    for global_var, func in mod.functions.items():
        if not isinstance(func, tir.PrimFunc):
            continue
        maps: list[Any] = []

        def visit(node: Any, maps: list[Any] = maps) -> None:  # called right here, once per node
            if isinstance(node, block_types) and "layout_map" in node.annotations:
                maps.append(node.annotations["layout_map"])

        post_order_visit(func.body, visit)
        seen_maps: list[Any] = []
        for layout_map in maps:
            if any(layout_map.same_as(other) for other in seen_maps):
                continue  # the same map is attached to every block of the kernel
            seen_maps.append(layout_map)
            for buffer, layout in layout_map.items():
                key = (global_var.name_hint, str(buffer.name))
                if key in found or not isinstance(layout, Fragment):
                    continue
                found[key] = _fragment(layout, buffer, global_var.name_hint)
    return tuple(found.values())


def _text(expr: Any) -> str:
    """An expression as TVMScript prints it (str() of one is its repr in TileLang 0.1.9)."""
    script = getattr(expr, "script", None)
    return str(script()) if callable(script) else str(expr)


def _fragment(layout: Any, buffer: Any, function: str) -> FragmentLayout:
    thread_range = getattr(layout, "thread_range", None)  # not in TileLang 0.1.9
    return FragmentLayout(
        buffer=str(buffer.name),
        shape=tuple(int(x) for x in layout.input_size),
        vars=tuple(str(getattr(v, "name", v)) for v in layout.get_forward_vars()),
        thread=_text(layout.forward_thread),
        index=tuple(_text(e) for e in layout.forward_index),
        replicate=int(layout.replicate_size),
        thread_min=int(thread_range.min) if thread_range is not None else 0,
        threads=int(layout.get_thread_size()),
        function=function,
        scope=str(buffer.scope()),
        dtype=str(buffer.dtype),
    )
