"""`lower-trace edits` in the terminal: the working copies of each script, one row each, and what
their stale marks mean."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TextIO

from lower_trace.model import StaleReason, WorkingCopy
from lower_trace.text_safety import printable


def write_listing(out: TextIO, listed: Sequence[tuple[str, list[WorkingCopy]]]) -> None:
    """listed: (a script's edits/ folder, its working copies as EditStore.entries() gives them)."""
    stale: set[StaleReason] = set()
    for root, entries in listed:
        out.write(printable(root) + "\n")
        width = max([len(e.file) for e in entries] + [12])
        kernel_width = max([len(printable(e.kernel)) for e in entries] + [6])
        marks = {e.file: f"stale: {e.stale.value}" if e.stale else "" for e in entries}
        mark_width = max(len(m) for m in marks.values()) if entries else 0
        for entry in entries:
            # What tells the copy apart: its literals (constants, tiles), its code or its buffers.
            mark = f"{marks[entry.file]:<{mark_width}}  " if mark_width else ""
            kernel, variant = printable(entry.kernel), printable(entry.variant)
            out.write(f"  {entry.file:<{width}}  {kernel:<{kernel_width}}  {entry.role:<6}  {entry.state.value:<12}  {mark}{variant}\n")
        stale.update(e.stale for e in entries if e.stale)
    failed, moved_on = StaleReason.FAILED.value, StaleReason.CODE_CHANGED.value
    if StaleReason.FAILED in stale:
        out.write(f"{failed}: the last compile with this edit, as the file is now, failed; fix it, or `lower-trace edits --reset FILE`\n")
    if StaleReason.CODE_CHANGED in stale:
        out.write(f"{moved_on}: the kernel's code changed and this variant was not compiled since; compiled with the new code, it takes this copy over\n")


def write_reset(out: TextIO, done: Iterable[tuple[str, str]]) -> None:
    """done: (a working copy returned to the generated source, where the edit was kept or "")."""
    for path, backup in done:
        out.write(f"{path}: back to the generated source" + (f" (your edit is saved in {backup})" if backup else "") + "\n")
