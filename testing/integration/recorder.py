"""An independent recorder of every pass, for ground truth: TVM's own PassInstrument on the
PassContext around ``tilelang.lower`` (no lower-trace involved), on every TileLang version.

Each pass's input and output are kept as they were at that moment -- the module TileLang
handed over (a copy of its parts: passes may update an IRModule in place later) and its
TVMScript -- with the depth the pass ran at, so a test can compare what lower-trace stored
and rebuilt with the real thing.
"""

from dataclasses import dataclass
from typing import Any

from tilelang import tvm


@dataclass
class Pass:
    name: str
    depth: int
    before: Any  # the module as the pass got it
    before_text: str
    after: Any = None  # as it returned it (None: it raised)
    after_text: str = ""


def _frozen(mod):
    """The module's content now: its function map, attrs and global infos are never changed in place."""
    return tvm.IRModule(dict(mod.functions.items()), attrs=mod.attrs, global_infos=dict(mod.global_infos.items()) if mod.global_infos else None)


def record(func, target, config=None, **lower_kwargs):
    """([Pass] in the order they started, the exception the compile raised or None)."""
    import tilelang

    passes, stack = [], []

    @tvm.ir.instrument.pass_instrument
    class Recorder:
        def run_before_pass(self, mod, info):
            passes.append(Pass(str(info.name), len(stack), _frozen(mod), mod.script()))
            stack.append(passes[-1])

        def run_after_pass(self, mod, info):
            done = stack.pop()
            done.after, done.after_text = _frozen(mod), mod.script()

    error = None
    with tvm.transform.PassContext(opt_level=3, config=config or {}, instruments=[Recorder()]), target:
        try:
            tilelang.lower(func, target=target, **lower_kwargs)
        except Exception as exc:  # a failing kernel: its passes up to the failure are kept
            error = exc
    return passes, error


def layouts_in(mod):
    """The TileLang Layout / Fragment objects a module's statements hold in their annotations,
    in a fixed order (functions by name, statements in visiting order, annotation keys sorted)."""
    from tilelang.layout import Layout

    tir = getattr(tvm, "tirx", None) or tvm.tir
    found = []

    def values(value):
        if isinstance(value, Layout):
            found.append(value)
        elif hasattr(value, "items"):
            for key in sorted(value, key=str):
                values(value[key])
        elif type(value).__name__ == "Array":
            for item in value:
                values(item)

    for _gv, func in sorted(mod.functions.items(), key=lambda item: item[0].name_hint):
        if isinstance(func, tir.PrimFunc):
            tir.stmt_functor.post_order_visit(func.body, lambda node: values(node.annotations) if hasattr(node, "annotations") else None)
    return found
