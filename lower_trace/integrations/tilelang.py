"""TileLang 0.1.15+ through its public instrumentation API.

TileLang opens one instrumentation session per logical compile (``lower``,
``compile``, ``@jit``) and asks every registered tool for a PassInstrument, a
codegen wrapper and a ``finish`` call. We register one tool; no global patching.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from tilelang import instrumentation as tl_instr

from ..capture.sink import GetRun, TraceSink
from ..capture.session import CompileSession
from .tilelang_common import PHASE_OF_FUNCTION, bypass_kernel_cache, keep_builtin_tracer_off, restore_kernel_cache, versions
from .tvm_ir import TVMIR, SourceHooks, TrackerInstrument

TOOL_NAME = "lower-trace"


class _Tool(tl_instr.PassInstrumentationTool):
    """One per compile: TileLang creates it when a compile session opens."""

    def __init__(self, run: TraceSink) -> None:
        self._run = run
        self._ir = TVMIR(tl_instr.current_pass_phase, PHASE_OF_FUNCTION)
        self._session: CompileSession | None = None

    def _current(self) -> CompileSession:
        if self._session is None:
            compile_session = tl_instr.current_compile_pass_instrumentation()
            entry = str(getattr(compile_session, "name", "") or "")
            self._session = CompileSession(self._run, self._ir, entry=entry)
        return self._session

    def create_pass_instrument(self) -> Any:
        try:
            return TrackerInstrument(self._current())
        except Exception as exc:
            self._run.tracer_fault(exc)
            return None

    def pipeline_scope(self, base_phase: str) -> Any:
        return nullcontext()

    def run_codegen(self, event: Any, next_call: Any) -> Any:
        return self._current().codegen(str(event.name), event.mod, event.target, next_call)

    def finish(self, error: BaseException | None) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        try:
            session.finish(error)
        except Exception as exc:
            self._run.tracer_fault(exc)


class TileLangIntegration:
    """Attach to / detach from an imported TileLang 0.1.15+, restoring what was changed."""

    def __init__(self, get_run: GetRun) -> None:
        self._get_run = get_run
        self._cache_was_enabled = False
        self._hooks = SourceHooks()

    def install(self) -> None:
        run = self._get_run()
        run.info.versions.update(versions())
        keep_builtin_tracer_off(run)
        tl_instr.register_pass_instrumentation_tool(TOOL_NAME, lambda: _Tool(self._get_run()))
        self._hooks.install()
        self._cache_was_enabled = bypass_kernel_cache(run)

    def uninstall(self) -> None:
        tl_instr.unregister_pass_instrumentation_tool(TOOL_NAME)
        self._hooks.uninstall()
        restore_kernel_cache(self._cache_was_enabled)
        self._cache_was_enabled = False
