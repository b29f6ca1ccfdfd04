"""TileLang facts shared by the modern and the legacy adapter (no instrumentation API needed)."""

from __future__ import annotations

import importlib.util
import os
import sys

import tilelang

from lower_trace.capture.sink import TraceSink
from lower_trace.config import mode_variable_is_set
from lower_trace.integrations.adapters import builtin_tracer
from lower_trace.integrations.adapters.tvm_driver import tvm_version

# TileLang's own Python: its pipelines' pass arguments are evaluated again to be written down (ir_reading/pass_calls.py).
LIBRARY_DIRS = (os.path.dirname(os.path.abspath(str(tilelang.__file__))),)

# Passes TileLang runs outside a named pipeline, placed by the function that ran them.
PHASE_OF_FUNCTION = (
    ("PreLowerSemanticCheck", "semantic_check"),
    ("_prepare_device_codegen_mod", "device_codegen_prep"),
    ("device_codegen_without_compile", "device_codegen_prep"),
    ("device_codegen", "device_codegen_prep"),
    ("host_codegen", "host_codegen_prep"),
    ("lower_to_host_device_ir", "host_device_split"),
)


def versions() -> dict[str, str]:
    return {"tilelang": str(getattr(tilelang, "__version__", "")), "tvm": tvm_version()}


def keep_builtin_tracer_off(run: TraceSink) -> None:
    """One tracer at a time. If TileLang's built-in started (TileLang was imported with
    TL_LOWER_TRACE set before lower-trace was enabled), stop it through its public
    disable(); either way, say once that ours is the only one writing."""
    builtin = sys.modules.get("tilelang.tools.lower_trace")
    own_disable = builtin_tracer.builtin(builtin, "disable") if builtin is not None else None
    if own_disable is not None:
        own_disable()  # TileLang's own, also where seed_shims drives the module
    exists = builtin is not None or importlib.util.find_spec("tilelang.tools.lower_trace") is not None
    taken_over = builtin is not None and builtin_tracer.taken_over(builtin)  # seed_shims said so already
    if exists and not taken_over and (mode_variable_is_set() or builtin is not None):
        run.note("TileLang's built-in lower_trace is off; lower-trace is the only tracer writing", once="builtin")


def bypass_kernel_cache(run: TraceSink) -> bool:
    """A kernel served from TileLang's cache runs no pass and would leave an empty trace:
    while tracing, every kernel is compiled afresh. Returns whether the cache was on."""
    is_enabled = getattr(tilelang, "is_cache_enabled", None)
    if is_enabled is None or not is_enabled():
        return False
    tilelang.disable_cache()
    run.note("TileLang's kernel cache is bypassed while tracing, so every kernel is compiled and traced", once="cache")
    return True


def restore_kernel_cache(was_enabled: bool) -> None:
    if was_enabled:
        tilelang.enable_cache()
