"""TileLang 0.1.15+ through its public instrumentation API.

TileLang opens one instrumentation session per logical compile (``lower``,
``compile``, ``@jit``) and asks every registered tool for a PassInstrument, a
codegen wrapper and a ``finish`` call. We register one tool; the one patch is TileLang's nvcc
call (integrations/nvcc/tilelang_device.py: the instrumentation has no device-compile event).
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from typing import Any

from tilelang import instrumentation as tl_instr

from lower_trace.capture.session import CompileSession
from lower_trace.capture.sink import GetRun, TraceSink
from lower_trace.integrations.adapters.launches import LaunchCapture
from lower_trace.integrations.adapters.source_hooks import SourceHooks
from lower_trace.integrations.adapters.tilelang_common import (
    LIBRARY_DIRS,
    PHASE_OF_FUNCTION,
    bypass_kernel_cache,
    keep_builtin_tracer_off,
    restore_kernel_cache,
    versions,
)
from lower_trace.integrations.adapters.tvm_driver import instrument_for
from lower_trace.integrations.ir_reading.tvm_ir import TVMIR
from lower_trace.integrations.nvcc.tilelang_device import DeviceCapture

TOOL_NAME = "lower-trace"


# TileLang labels each PassContext it asks tools to instrument: "stage=jit-lower, kernel=f,
# backend=cython"; a grouped compile (the autotuner's, several kernels in one compile session)
# "stage=grouped-lower, config=1, kernel=f_gc_1", "stage=grouped-host, config=1, kernel=f_gc_1",
# then "stage=grouped-device, configs=[0,1]" for the merged device module of the unit.
_KERNEL_LABEL = re.compile(r"(?:^|,)\s*kernel=([^,]*)")


def _kernel_key(context: str | None) -> str:
    """Which kernel a PassContext compiles: its `kernel=` label, else the whole label."""
    if not context:
        return ""
    match = _KERNEL_LABEL.search(context)
    return "kernel=" + match.group(1).strip() if match else context


class _Tool(tl_instr.PassInstrumentationTool):
    """One per TileLang compile session, which usually compiles one kernel. A grouped compile
    lowers several kernels in one session, each in PassContexts of its own that TileLang labels
    with the kernel: one CompileSession (one kernel record) per label."""

    def __init__(self, run: TraceSink, launches: LaunchCapture) -> None:
        self._run = run
        self._launches = launches
        self._ir = TVMIR(tl_instr.current_pass_phase, PHASE_OF_FUNCTION, layouts=True, library_dirs=LIBRARY_DIRS)
        self._sessions: dict[str, CompileSession] = {}
        self._active: CompileSession | None = None  # the kernel whose PassContext was made last

    def _session(self, key: str) -> CompileSession:
        session = self._sessions.get(key)
        if session is None:
            compile_session = tl_instr.current_compile_pass_instrumentation()
            entry = str(getattr(compile_session, "name", "") or "")
            session = self._sessions[key] = CompileSession(self._run, self._ir, entry=entry)
        self._active = session
        return session

    def create_pass_instrument(self) -> Any:
        try:
            return instrument_for(self._session(_kernel_key(tl_instr.current_pass_instrument_context())))
        except Exception as exc:
            self._run.tracer_fault(exc)
            return None

    def pipeline_scope(self, base_phase: str) -> Any:
        return nullcontext()

    def run_codegen(self, event: Any, next_call: Any) -> Any:
        # TileLang generates code inside the PassContext it made last: one config's host
        # module, or the merged device module of a grouped unit.
        session = self._active or self._session("")
        return session.codegen(str(event.name), event.mod, event.target, next_call)

    def finish(self, error: BaseException | None) -> None:
        sessions, self._sessions, self._active = list(self._sessions.values()), {}, None
        for session in sessions:
            try:
                session.finish(error)
            except Exception as exc:
                self._run.tracer_fault(exc)
        if len(sessions) == 1 and error is None:
            try:  # the kernel object this compile makes, if one, is this kernel's (a grouped compile's several: no guess)
                self._launches.join(self._run, sessions[0].kernel_id)
            except Exception as exc:
                self._run.tracer_fault(exc)


class TileLangIntegration:
    """Attach to / detach from an imported TileLang 0.1.15+, restoring what was changed."""

    def __init__(self, get_run: GetRun) -> None:
        self._get_run = get_run
        self._cache_was_enabled = False
        self._hooks = SourceHooks()
        self._device = DeviceCapture(get_run)
        self._launches = LaunchCapture(get_run, LIBRARY_DIRS)

    def install(self) -> None:
        run = self._get_run()
        if run is None:  # tracing was switched off before TileLang finished importing
            return
        run.info.versions.update(versions())
        keep_builtin_tracer_off(run)
        tl_instr.register_pass_instrumentation_tool(TOOL_NAME, lambda: _Tool(self._get_run() or run, self._launches))
        self._hooks.install()
        self._device.install()
        self._launches.install()
        self._cache_was_enabled = bypass_kernel_cache(run)

    def uninstall(self) -> None:
        tl_instr.unregister_pass_instrumentation_tool(TOOL_NAME)
        self._hooks.uninstall()
        self._device.uninstall()
        self._launches.uninstall()
        restore_kernel_cache(self._cache_was_enabled)
        self._cache_was_enabled = False
