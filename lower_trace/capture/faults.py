"""The one guard around the tracer's own work: a fault in it is reported (one warning, its
traceback kept: TraceRun.tracer_fault) and the compile goes on without that piece.

Only ``Exception`` is caught: KeyboardInterrupt and SystemExit pass, and the compiler's own
exceptions are never run inside a guard (codegen_step.py calls the compiler outside it), so a
pass or codegen failure always reaches the user as it would untraced.

Three forms of the one rule. The per-pass and per-job paths call the plain functions: CPython
calls those as cheaply as the method with a try/except they replaced, while a bound method kept
on an object (or a star-call with no arguments) costs 20-30 ns a call more (measured, 3.11).
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")
Report = Callable[[BaseException], None]


def guarded(report: Report, func: Callable[..., T], *args: Any) -> T | None:
    """func(*args), or None after a fault (reported): for callers that fall back."""
    try:
        return func(*args)
    except Exception as exc:
        report(exc)
        return None


def guarded_job(report: Report, job: Callable[[], object]) -> None:
    """guarded() for the worker's jobs, which take no arguments and whose results are ignored."""
    try:
        job()
    except Exception as exc:
        report(exc)


class Guard:
    """``with guard:`` leaves the block at a fault; ``guard.call(f, *args)`` is guarded() with
    the guard's report. One object per owner, made once."""

    __slots__ = ("report",)

    def __init__(self, report: Report) -> None:
        self.report = report

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> bool:
        if isinstance(exc, Exception):
            self.report(exc)
            return True
        return False

    def call(self, func: Callable[..., T], *args: Any) -> T | None:
        return guarded(self.report, func, *args)
