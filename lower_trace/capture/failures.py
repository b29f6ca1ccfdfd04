"""What a compile that failed leaves: the exception as the trace keeps it, and which of the passes
still open when it ended failed (the deepest) and which only did not finish."""

from __future__ import annotations

import subprocess
import traceback
from typing import NamedTuple

from lower_trace.capture.passes import OpenPass
from lower_trace.model import ErrorInfo


def error_info(error: BaseException, with_traceback: bool = True) -> ErrorInfo:
    """The exception as the trace keeps it: type, the whole message as text (a compiler's output
    keeps its line breaks), traceback. A failed subprocess (CalledProcessError, TimeoutExpired)
    keeps the compiler's output apart from str(): it is added to the message. Never raises."""
    try:
        message = str(error)
    except Exception:  # an exception whose __str__ raises
        message = f"<{type(error).__name__}: the message could not be read>"
    if isinstance(error, subprocess.SubprocessError):
        for output in dict.fromkeys((getattr(error, "stderr", None), getattr(error, "output", None))):
            if isinstance(output, bytes):
                output = output.decode("utf-8", "replace")
            if isinstance(output, str) and output.strip() and output.strip() not in message:
                message = f"{message}\n{output.rstrip()}"
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__)) if with_traceback else ""
    return ErrorInfo(type=type(error).__name__, message=message, traceback=text)


class Interruption(NamedTuple):
    ordered: list[OpenPass]  # the passes that never returned, outermost first
    failed: OpenPass | None  # the one that raised (None: no error, or Ctrl-C)
    incomplete: list[tuple[OpenPass, ErrorInfo | None]]  # the others, each with why it did not finish


def interruption(open_passes: list[OpenPass], error: BaseException | None) -> Interruption:
    """Which open pass failed: the deepest one raised; the ones around it did not finish. Ctrl-C
    stops a pass, it does not fail it."""
    ordered = sorted(open_passes, key=lambda p: (p.depth, p.seq))
    if not ordered:
        return Interruption(ordered, None, [])
    failing = ordered[-1]
    interrupted = isinstance(error, KeyboardInterrupt)
    failed = failing if error is not None and not interrupted else None
    incomplete: list[tuple[OpenPass, ErrorInfo | None]] = []
    for open_pass in ordered:
        if open_pass is failed:
            continue
        if interrupted:
            note: ErrorInfo | None = ErrorInfo("KeyboardInterrupt", "interrupted (Ctrl-C) while this pass ran")
        else:
            note = ErrorInfo("Interrupted", f"did not finish: nested pass {failing.name} failed") if error else None
        incomplete.append((open_pass, note))
    return Interruption(ordered, failed, incomplete)
