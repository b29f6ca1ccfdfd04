"""TileLang releases without ``tilelang.instrumentation`` (0.1.9 to 0.1.14): the seed's hook points.

- **Compile sessions**: TileLang's one entry, ``tilelang.engine.lower.lower`` (what
  ``tilelang.lower``, ``tilelang.compile`` and ``@jit`` run), wrapped wherever
  TileLang's modules hold it; for ``compile``/``@jit`` the session spans
  ``JITKernel._compile_and_create_adapter``, so the backend's own compile (gcc,
  nvcc) belongs to it. Each outermost call is one traced compile.
- **Passes**: our PassTracker joins the instruments of the PassContext current
  while ``lower`` runs (the one the JIT builds, or the default), so passes run
  inside C++ ``Sequential``s are seen too — patching ``Pass.__call__`` would
  miss them, and alongside the instrument it would count every pass twice.
- **Phases**: ``PassPipeline.lower`` (0.1.13: ``pipeline_<name>``) or the phase
  functions ``LowerAndLegalize`` / ``OptimizeForTarget`` (0.1.9).
- **Codegen**: the ``target.build.tilelang_*`` global functions, re-registered
  with a wrapper (names differ by version: ``tilelang_cpp`` up to 0.1.9).
- **Device stage**: TileLang's nvcc call, ``tilelang.contrib.nvcc.compile_cuda``, as on 0.1.15
  (integrations/nvcc/tilelang_device.py).
- **Launches**: ``JITKernel.__call__``, as on 0.1.15 (launches.py); a kernel object is joined to its
  compile where the wrapped ``_compile_and_create_adapter`` returns.

``uninstall()`` puts back every original object exactly.
"""

from __future__ import annotations

import sys
from contextvars import ContextVar
from typing import Any

import tilelang

from lower_trace.capture.session import CompileSession
from lower_trace.capture.sink import GetRun
from lower_trace.integrations.adapters.launches import LaunchCapture
from lower_trace.integrations.adapters.patching import Patches
from lower_trace.integrations.adapters.source_hooks import SourceHooks
from lower_trace.integrations.adapters.tilelang_common import (
    LIBRARY_DIRS,
    PHASE_OF_FUNCTION,
    bypass_kernel_cache,
    keep_builtin_tracer_off,
    restore_kernel_cache,
    versions,
)
from lower_trace.integrations.adapters.tvm_driver import SKIP_DIRS, GlobalFunctions, run_traced
from lower_trace.integrations.ir_reading.stack_walk import call_sites
from lower_trace.integrations.ir_reading.tvm_ir import TVMIR
from lower_trace.integrations.nvcc.tilelang_device import DeviceCapture

# Before 0.1.15 TileLang's frontend puts no spans on the statements it builds.
NO_SPANS = f"TileLang {getattr(tilelang, '__version__', '')} keeps no source spans on its IR (0.1.15 does)"

_phase: ContextVar[str | None] = ContextVar("lower_trace_legacy_phase", default=None)
_session: ContextVar[CompileSession | None] = ContextVar("lower_trace_legacy_session", default=None)
# 0.1.9 filters host and device functions inside lower() itself.
_PHASE_RULES = (*PHASE_OF_FUNCTION, ("lower", "host_device_split"))
_PHASE_FUNCTIONS = ("LowerAndLegalize", "OptimizeForTarget")


def supported() -> bool:
    return "tilelang.engine.lower" in sys.modules and hasattr(sys.modules["tilelang.engine.lower"], "lower")


class LegacyTileLangIntegration:
    def __init__(self, get_run: GetRun) -> None:
        self._get_run = get_run
        self._ir = TVMIR(_phase.get, _PHASE_RULES, layouts=True, library_dirs=LIBRARY_DIRS, spans=NO_SPANS)
        self._patches = Patches()
        self._codegen = GlobalFunctions()
        self._hooks = SourceHooks()
        self._device = DeviceCapture(get_run)
        self._launches = LaunchCapture(get_run, LIBRARY_DIRS)
        self._cache_was_enabled = False

    def install(self) -> None:
        run = self._get_run()
        if run is None:  # tracing was switched off before TileLang finished importing
            return
        run.info.versions.update(versions())
        keep_builtin_tracer_off(run)
        lower_module = sys.modules["tilelang.engine.lower"]
        original_lower = lower_module.lower
        self._patches.replace_everywhere(original_lower, self._traced_lower(original_lower))
        kernel_class = getattr(sys.modules.get("tilelang.jit.kernel"), "JITKernel", None)
        if kernel_class is not None and "_compile_and_create_adapter" in kernel_class.__dict__:
            original_jit = kernel_class.__dict__["_compile_and_create_adapter"]
            self._patches.replace(kernel_class, "_compile_and_create_adapter", self._traced_jit(original_jit))
        self._patch_phases()
        self._codegen.wrap("target.build.tilelang_", _traced_codegen)
        self._hooks.install()
        self._device.install()
        self._launches.install()
        self._cache_was_enabled = bypass_kernel_cache(run)

    def uninstall(self) -> None:
        self._patches.undo()
        self._codegen.restore()
        self._hooks.uninstall()
        self._device.uninstall()
        self._launches.uninstall()
        restore_kernel_cache(self._cache_was_enabled)
        self._cache_was_enabled = False

    # --- compile sessions ------------------------------------------------------------

    def _traced_lower(self, original: Any) -> Any:
        """lower() under a traced compile: our tracker joins the current PassContext."""

        def lower(*args: Any, **kwargs: Any) -> Any:
            run = self._get_run()
            if run is None:
                return original(*args, **kwargs)
            return run_traced(run, _session, lambda: CompileSession(run, self._ir, entry="lower"), lambda: original(*args, **kwargs))

        lower.__wrapped__ = original  # type: ignore[attr-defined]
        return lower

    def _traced_jit(self, original: Any) -> Any:
        """JITKernel's compile-and-build step: the session spans the backend's own compile
        too (gcc/nvcc run after lower() returns), so a failing edit is reported."""

        def compile_and_create_adapter(kernel: Any, *args: Any, **kwargs: Any) -> Any:
            run = self._get_run()
            if run is None or _session.get() is not None:
                return original(kernel, *args, **kwargs)
            made: list[CompileSession] = []

            def new_session() -> CompileSession:
                made.append(CompileSession(run, self._ir, entry="jit"))
                return made[-1]

            adapter = run_traced(run, _session, new_session, lambda: original(kernel, *args, **kwargs), attach=False)
            if made:  # compiled (a failure raised above): the kernel object is this compile's
                self._launches.join_kernel(run, made[0].kernel_id, kernel, sys._getframe())
            return adapter

        compile_and_create_adapter.__wrapped__ = original  # type: ignore[attr-defined]
        return compile_and_create_adapter

    # --- phases ----------------------------------------------------------------------

    def _patch_phases(self) -> None:
        pipeline_module = sys.modules.get("tilelang.backend.pass_pipeline.pipeline")
        pipeline_class = getattr(pipeline_module, "PassPipeline", None)
        if pipeline_class is not None and "lower" in pipeline_class.__dict__:
            self._patches.replace(pipeline_class, "lower", _pipeline_in_phase(pipeline_class.__dict__["lower"]))
        phase_module = sys.modules.get("tilelang.engine.phase")
        for name in _PHASE_FUNCTIONS:
            function = getattr(phase_module, name, None)
            if function is not None:
                self._patches.replace_everywhere(function, _in_phase(name, function))

def _pipeline_in_phase(original: Any) -> Any:
    def lower(pipeline: Any, mod: Any, target: Any) -> Any:
        token = _phase.set(f"pipeline_{pipeline.name}")
        try:
            return original(pipeline, mod, target)
        finally:
            _phase.reset(token)

    lower.__wrapped__ = original  # type: ignore[attr-defined]
    return lower


def _in_phase(phase: str, original: Any) -> Any:
    def run_phase(*args: Any, **kwargs: Any) -> Any:
        token = _phase.set(phase)
        try:
            return original(*args, **kwargs)
        finally:
            _phase.reset(token)

    run_phase.__wrapped__ = original  # type: ignore[attr-defined]
    return run_phase


def _traced_codegen(name: str, original: Any) -> Any:
    def build(mod: Any, target: Any) -> Any:
        session = _session.get()
        if session is None:
            return original(mod, target)
        # 0.1.9 builds host C with target.build.tilelang_c: the caller tells host from device.
        sites, _ = call_sites(SKIP_DIRS, limit=4)
        role = "host" if any(site.function.endswith("host_codegen") for site in sites) else None
        return session.codegen(name, mod, target, lambda: original(mod, target), role=role)

    return build
