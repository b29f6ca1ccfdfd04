"""What `lower-trace replay` and `repro` say: a rerun pass compared with what the trace recorded,
a reproducer written."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import TextIO

from lower_trace.model import KernelTrace, PassRecord, PassStatus
from lower_trace.render.terminal import TerminalRenderer
from lower_trace.text_safety import headline, plural, printable


def write_repro(out: TextIO, kernel: KernelTrace, record: PassRecord, command: str, why: str) -> None:
    """A reproducer written: for which pass, the command that runs it, why it runs other passes."""
    out.write(f"{kernel.kernel_id} {kernel.name}: {record.seq} {record.name}: {command}" + (f"\n  ({why})" if why else "") + "\n")


def write_replay_error(out: TextIO, what: str, last: PassRecord, exc: BaseException, note: str) -> bool:
    """The rerun raised exc: True when the last pass failed so when traced; else how it differs,
    with the end of the rerun's traceback."""
    now_error = f"{type(exc).__name__}: {headline(str(exc))}"
    if last.status is PassStatus.FAILED and last.error is not None:
        recorded_error = f"{last.error.type}: {headline(last.error.message)}"
        if recorded_error == now_error:
            out.write(f"{what}: fails as recorded: {printable(now_error)}\n")
            return True
        out.write(f"{what}: fails differently now: {printable(now_error)}\n  recorded: {printable(recorded_error)}\n")
    else:
        out.write(f"{what}: fails now ({printable(now_error)}); recorded: {'crashed' if last.crashed else last.status.value}\n")
    _traceback(out, exc)
    _note(out, note)
    return False


def write_replay_output(
    out: TextIO, what: str, last: PassRecord, now: str, text_of: Callable[[str], str], note: str, color: bool | None = None, context: int = 3
) -> bool:
    """The rerun made now: True when it is what the last pass made when traced; else the IR it
    makes now (the pass failed when traced) or the diff recorded -> now."""
    if last.status is PassStatus.FAILED or last.crashed:
        recorded = "the process crashed in it" if last.crashed else f"failed ({printable(last.error.type if last.error else '')})"
        out.write(f"{what}: runs without an error now; recorded: {recorded}. The IR it makes now:\n")
        out.write(now if now.endswith("\n") else now + "\n")
        return False
    recorded = text_of(last.after or last.before)
    if now == recorded:
        out.write(f"{what}: identical to the recorded output ({plural(len(now.splitlines()), 'line')})\n")
        return True
    out.write(f"{what}: differs from the recorded output (recorded -> now):\n")
    TerminalRenderer(out, color=color, context=context).render_diff(recorded, now)
    _note(out, note)
    return False


def _traceback(out: TextIO, exc: BaseException, lines: int = 14) -> None:
    """The end of the rerun's traceback: where the patched pass failed."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip().splitlines()
    for line in text[-lines:]:
        out.write(f"    {printable(line)}\n")


def _note(out: TextIO, note: str) -> None:
    """What loading the recorded input said (a layout that could not be brought back ...)."""
    if note:
        out.write(f"  note: {note}\n")
