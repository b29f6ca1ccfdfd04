"""Plain Apache TVM (no TileLang): ``tvm.compile``, ``tvm.tirx.build``, ``tvm.relax.build``.

Edit-and-recompile is TileLang's (its backends compile the source we hand them);
here the generated source is captured, not replaced.

While tracing, each outermost call of those is one traced compile: our PassTracker
joins the instruments of the current PassContext for its duration, and the
``target.build.*`` codegen functions are wrapped to capture the generated source.
:func:`session_instrument` is the other way in: a PassInstrument any PassContext
can carry, one traced compile per PassContext. Everything is undone exactly.
"""

from __future__ import annotations

import os
import sys
from contextvars import ContextVar, Token
from typing import Any

import tvm
import tvm_ffi

from lower_trace.capture.session import CompileSession
from lower_trace.capture.sink import GetRun
from lower_trace.capture.tracker import PassTracker
from lower_trace.integrations.adapters.patching import Patches
from lower_trace.integrations.adapters.tvm_driver import LOWER_TRACE_DIR, GlobalFunctions, run_traced, tvm_version
from lower_trace.integrations.ir_reading.stack_walk import CallSite
from lower_trace.integrations.ir_reading.tvm_ir import TVMIR

_session: ContextVar[CompileSession | None] = ContextVar("lower_trace_tvm_session", default=None)
# Only Pass.__call__'s own folder and ours are skipped when looking for who ran a pass:
# here the callers worth naming (the pipelines) are TVM's own functions.
_SKIP = (*(os.path.dirname(os.path.abspath(str(m.__file__))) for m in (tvm.ir, tvm_ffi)), LOWER_TRACE_DIR)
# (file ending, function) of the TVM Python function that ran a top-level pass -> phase.
_PHASES = (
    ("relax/vm_build.py", "build", "relax_pipeline"),
    ("tirx/build.py", "split_host_device_mods", "host_device_split"),
    ("tirx/build.py", "build", "tir_pipeline"),
)
_DEVICE_KINDS = ("cuda", "rocm", "metal", "opencl", "vulkan", "webgpu", "nvptx", "hexagon", "trn")
_ENTRY_POINTS = (("tvm", "compile"), ("tvm.tirx", "build"), ("tvm.relax", "build"))


def _phase_of(sites: list[CallSite]) -> str:
    for site in sites:
        for ending, function, phase in _PHASES:
            if site.filename.endswith(ending) and site.function.rsplit(".", 1)[-1] == function:
                return phase
    return ""


def _ir() -> TVMIR:
    return TVMIR(skip_dirs=_SKIP, phase_of_sites=_phase_of, spans="plain TVM keeps no source spans lower-trace can read")


def versions() -> dict[str, str]:
    return {"tvm": tvm_version()}


class TVMIntegration:
    def __init__(self, get_run: GetRun) -> None:
        self._get_run = get_run
        self._ir = _ir()
        self._patches = Patches()
        self._codegen = GlobalFunctions()

    def install(self) -> None:
        run = self._get_run()
        if run is not None:
            run.info.versions.update(versions())
        for module_name, name in _ENTRY_POINTS:
            module = sys.modules.get(module_name)
            original = getattr(module, name, None)
            if original is not None:
                self._patches.replace_everywhere(original, self._traced_entry(f"{module_name}.{name}", original), package="tvm")
        self._codegen.wrap("target.build.", _traced_codegen)

    def uninstall(self) -> None:
        self._patches.undo()
        self._codegen.restore()

    def _traced_entry(self, entry: str, original: Any) -> Any:
        def compile_traced(*args: Any, **kwargs: Any) -> Any:
            run = self._get_run()
            if run is None or _session.get() is not None:
                return original(*args, **kwargs)  # off, or inside a compile already traced
            new_session = lambda: CompileSession(run, self._ir, entry=entry, edits=False)  # noqa: E731
            return run_traced(run, _session, new_session, lambda: original(*args, **kwargs))

        compile_traced.__wrapped__ = original  # type: ignore[attr-defined]
        return compile_traced


def _traced_codegen(name: str, original: Any) -> Any:
    def build(mod: Any, target: Any) -> Any:
        session = _session.get()
        if session is None:
            return original(mod, target)
        kind = str(getattr(getattr(target, "kind", None), "name", ""))
        role = "device" if kind in _DEVICE_KINDS else "host"
        return session.codegen(name, mod, target, lambda: original(mod, target), role=role)

    return build


class _SessionTracker:
    """One traced compile per PassContext that carries this instrument: a PassTracker of its own
    session while the context is open, nothing while tracing is off."""

    def __init__(self, get_run: GetRun) -> None:
        self._get_run = get_run
        self._tracker: PassTracker | None = None
        self._session: CompileSession | None = None
        self._token: Token[CompileSession | None] | None = None

    def enter_pass_ctx(self) -> None:
        self._tracker = self._session = None
        run = self._get_run()
        if run is None or _session.get() is not None:
            return  # tracing is off, or a traced tvm.compile owns this compile
        try:
            self._session = session = CompileSession(run, _ir(), entry="PassContext", edits=False)
            self._tracker = PassTracker(session)
            self._token = _session.set(session)
        except Exception as exc:
            run.tracer_fault(exc)
            self._tracker = self._session = None

    def exit_pass_ctx(self) -> None:
        tracker, session = self._tracker, self._session
        if tracker is None or session is None:
            return
        tracker.exit_pass_ctx()
        if self._token is not None:
            _session.reset(self._token)
            self._token = None
        self._tracker = self._session = None
        # Leaving the PassContext because of an exception: that is the compile's error.
        _finish(session, sys.exc_info()[1])

    def run_before_pass(self, mod: Any, info: Any) -> None:
        if self._tracker is not None:
            self._tracker.run_before_pass(mod, info)

    def run_after_pass(self, mod: Any, info: Any) -> None:
        if self._tracker is not None:
            self._tracker.run_after_pass(mod, info)


def _finish(session: CompileSession, error: BaseException | None) -> None:
    try:
        session.finish(error)
    except Exception as exc:
        session.tracer_fault(exc)


_SessionInstrument = tvm.ir.instrument.pass_instrument(_SessionTracker)


def session_instrument(get_run: GetRun) -> Any:
    return _SessionInstrument(get_run)
