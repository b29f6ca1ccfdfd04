"""Where Python builds TVM and TileLang passes from: the modules that hold pass factories, and
the names TVM gives passes made from plain functions. Names only (importing this imports no
TVM): replay and pass_calls look factories up here, and the reproducer's script
(rerun/repro.py) carries the same lists."""

from __future__ import annotations

# Where Python builds passes from, most specific first (a module missing is skipped).
FACTORY_MODULES = (
    "tilelang.transform", "tilelang.cuda.transform", "tilelang.rocm.transform", "tilelang.analysis",
    "tvm.tirx.transform", "tvm.tir.transform", "tvm.s_tir.transform", "tvm.relax.transform", "tvm.transform",
)

# What TVM calls passes made from plain functions (the trace names them after their factory).
ANONYMOUS = ("pass_fn", "sequential", "_pipeline")
