"""Pairs TVM's before/after pass callbacks into records.

:class:`PassTracker` speaks TVM's PassInstrument protocol (``enter_pass_ctx``,
``exit_pass_ctx``, ``run_before_pass``, ``run_after_pass``) without importing
TVM; an integration wraps it with ``tvm.ir.instrument.pass_instrument``. Each
callback guards itself: an exception raised inside a callback would abort the
user's compile, so a tracer fault becomes one warning instead.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol

from lower_trace.capture.faults import guarded
from lower_trace.capture.session import OpenPass

# TVM's objects (an IRModule, a PassInfo) are untyped here: typings/tvm types TVM as Any.
IRModule = Any
PassInfo = Any


class PassEvents(Protocol):
    """What the tracker reports each pass to: a compile session (capture/session.py)."""

    def pass_started(self, mod: IRModule, name: str, depth: int, parent: OpenPass | None) -> OpenPass: ...
    def pass_finished(self, open_pass: OpenPass, mod: IRModule) -> None: ...
    def passes_interrupted(self, open_passes: list[OpenPass], error: BaseException | None = None) -> None: ...
    def should_run(self, mod: IRModule, name: str, depth: int, parent: OpenPass | None) -> bool: ...
    def tracer_fault(self, exc: BaseException) -> None: ...


class PassTracker:
    def __init__(self, session: PassEvents) -> None:
        self.session = session
        self._fault = session.tracer_fault  # every callback is guarded(): a fault is one warning, never the compile's exception
        self._stack: list[OpenPass | None] = []  # open passes, outermost first (None: one whose start faulted)

    def enter_pass_ctx(self) -> None:
        self._stack = []

    def exit_pass_ctx(self) -> None:
        # A pass still open when its PassContext closes never returned: it raised.
        if self._stack:
            open_passes, self._stack = self._stack, []
            # The exception on its way out of this PassContext: a caller may swallow it (TileLang's
            # grouped compile keeps it per config and goes on), so finish() may never hear of it.
            error = sys.exc_info()[1]
            guarded(self._fault, self.session.passes_interrupted, [frame for frame in open_passes if frame is not None], error)

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        parent = next((frame for frame in reversed(self._stack) if frame is not None), None)
        frame = guarded(self._fault, self.session.pass_started, mod, info.name, len(self._stack), parent)
        self._stack.append(frame)

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        if not self._stack:
            return
        frame = self._stack.pop()
        if frame is not None:
            guarded(self._fault, self.session.pass_finished, frame, mod)


class GatedTracker(PassTracker):
    """The tracker with TVM's ``should_run``: in a child of lower-trace bisect, the run's gate
    decides which passes run (a separate class, so tracing without bisect pays nothing for it)."""

    def should_run(self, mod: IRModule, info: PassInfo) -> bool:
        parent = next((frame for frame in reversed(self._stack) if frame is not None), None)
        decided = guarded(self._fault, self.session.should_run, mod, info.name, len(self._stack), parent)
        return True if decided is None else bool(decided)  # a tracer fault never skips a pass
