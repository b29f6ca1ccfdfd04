"""`lower-trace blame` in the terminal: each line of the IR with the pass that made it, or the
history of the lines a regex matches (analysis/blame.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from lower_trace.analysis.blame import BlamedLine, PatternHistory
from lower_trace.model import KernelTrace, PassRecord
from lower_trace.text_safety import plural, printable, printable_line


def who(record: PassRecord | None) -> str:
    return "(input)" if record is None else f"{record.seq} {printable(record.name)}"


def write_lines(out: TextIO, lines: Sequence[BlamedLine]) -> None:
    width = min(36, max((len(who(line.by)) for line in lines), default=8))
    for line in lines:
        out.write(f"{who(line.by)[:width]:<{width}} | {printable_line(line.text)}\n")


def write_history(out: TextIO, kernel: KernelTrace, pattern: str, found: PatternHistory, matches: int) -> None:
    """Which pass introduced the lines pattern matches, which changed them, which removed them
    (matches: how many lines match in the final IR)."""
    out.write(f"kernel {kernel.kernel_id} {printable(kernel.name)}: /{printable(pattern)}/\n")
    if not found.matched:
        out.write("  no line of the IR matches, at any pass\n")
        return
    out.write(f"  introduced by  {who(found.introduced) if found.introduced else '(already in the input)'}\n")
    out.write(f"  changed by     {', '.join(who(p) for p in found.changed) or '-'}\n")
    left = f"- (still there at the end: {plural(matches, 'line')})"
    out.write(f"  removed by     {who(found.removed) if found.removed else left}\n")

