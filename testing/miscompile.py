"""A stand-in for a compiler bug, shared by the bisect and reduce tests and the GPU check's bisect
step: a pass that turns the constant 3.0 into 3.5, slipped into TileLang's pipeline right after a
named pass (the ground truth those checks hold lower-trace to: they put it there)."""

import tilelang.transform
from tilelang import tvm


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tl.BuggyConstantFold")
def buggy(func, mod, ctx):
    def change(node):
        if isinstance(node, tvm.tirx.FloatImm) and node.value == 3.0:
            return tvm.tirx.FloatImm(node.dtype, 3.5)
        return None

    return func.with_body(tvm.tirx.stmt_functor.ir_transform(func.body, None, change))


def inject(name):
    """TileLang's pass `name` runs buggy right after itself (as one Sequential under its own name)."""
    real = getattr(tilelang.transform, name)

    def wrapped(*args, **kwargs):
        return tvm.transform.Sequential([real(*args, **kwargs), buggy], name="tl." + name)

    setattr(tilelang.transform, name, wrapped)


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tl.HarmlessDoubling")
def harmless(func, mod, ctx):
    """x * 2.0 -> x + x: other code, the same numbers bit for bit (a float's double is exact)."""

    def change(node):
        if isinstance(node, tvm.tirx.Mul) and isinstance(node.b, tvm.tirx.FloatImm) and node.b.value == 2.0:
            return tvm.tirx.Add(node.a, node.a)
        return None

    return func.with_body(tvm.tirx.stmt_functor.ir_transform(func.body, None, change))


def inject_both(name, which=("buggy", "harmless")):
    """buggy and harmless (or those of them `which` names), right after TileLang's pass `name`."""
    real = getattr(tilelang.transform, name)
    chosen = [p for p, label in ((buggy, "buggy"), (harmless, "harmless")) if label in which]

    def wrapped(*args, **kwargs):
        return tvm.transform.Sequential([real(*args, **kwargs), *chosen], name="tl." + name)

    setattr(tilelang.transform, name, wrapped)
