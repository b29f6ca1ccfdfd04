"""Running a compile traced, for every integration: the pass instrument, our tracker joined to the
current PassContext (``run_traced``), TVM global functions wrapped and put back, and the
directories whose frames are never the user's (``SKIP_DIRS``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import tvm
import tvm_ffi

from lower_trace.capture.session import CompileSession
from lower_trace.capture.sink import TraceSink
from lower_trace.capture.tracker import GatedTracker, PassTracker

LOWER_TRACE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # lower_trace/ (this is integrations/adapters/)
SKIP_DIRS = (*(os.path.dirname(os.path.abspath(str(module.__file__))) for module in (tvm, tvm_ffi)), LOWER_TRACE_DIR)
TrackerInstrument = tvm.ir.instrument.pass_instrument(PassTracker)
GatedInstrument = tvm.ir.instrument.pass_instrument(GatedTracker)


def instrument_for(session: CompileSession) -> Any:
    """The PassInstrument for a session: with should_run only under lower-trace bisect."""
    return (GatedInstrument if session.run.gate is not None else TrackerInstrument)(session)


def run_traced(
    run: TraceSink,
    session_var: Any,
    new_session: Callable[[], CompileSession],
    call: Callable[[], Any],
    attach: bool = True,
) -> Any:
    """Run call() as a traced compile, for integrations without TileLang's instrumentation API.

    With no session in session_var, a new one is opened and finished here (with the
    error, if call raises). With attach, our tracker joins the instruments of the
    current PassContext for the duration (unless the session already has one there).
    Faults of the tracer fall back to running call() untraced.
    """
    session = session_var.get()
    owner = session is None
    attach = attach and (owner or not session.attached)
    context = previous = None
    try:
        if owner:
            session = new_session()
        if attach:
            context = tvm.transform.PassContext.current()
            previous = list(context.instruments)
            context.override_instruments([*previous, instrument_for(session)])
            session.attached = True
    except Exception as exc:
        run.tracer_fault(exc)
        return call()
    token = session_var.set(session) if owner else None
    error: BaseException | None = None
    try:
        return call()
    except BaseException as exc:
        error = exc
        raise
    finally:
        try:
            if context is not None:
                context.override_instruments(previous)  # closes our tracker: failed passes are known now
                session.attached = False
            if owner:
                session_var.reset(token)
                session.finish(error)
        except Exception as exc:
            run.tracer_fault(exc)


class GlobalFunctions:
    """TVM global functions re-registered with a wrapper; restore() puts back the originals."""

    def __init__(self) -> None:
        self._replaced: list[tuple[str, Any]] = []

    def wrap(self, prefix: str, make_wrapper: Callable[[str, Any], Any]) -> None:
        for name in tvm_ffi.registry.list_global_func_names():
            if name.startswith(prefix):
                original = tvm_ffi.get_global_func(name)
                tvm_ffi.register_global_func(name, make_wrapper(name, original), override=True)
                self._replaced.append((name, original))

    def restore(self) -> None:
        for name, original in reversed(self._replaced):
            tvm_ffi.register_global_func(name, original, override=True)
        self._replaced = []


def tvm_version() -> str:
    return str(getattr(tvm, "__version__", ""))
