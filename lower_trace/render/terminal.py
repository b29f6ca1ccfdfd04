"""The terminal view: one line per pass, the coloured diff of each changed pass.

Colour follows NO_COLOR / FORCE_COLOR / whether the stream is a terminal, and
is switched on or off as a whole palette.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TextIO

from .. import diff
from ..config import color_wanted
from ..model import CodegenRecord, KernelTrace, PassRecord, PassStatus

Snapshots = Callable[[str], "str | None"]


class Palette:
    _CODES = {
        "bold": "1",
        "dim": "2",
        "red": "31",
        "green": "32",
        "yellow": "33",
        "blue": "34",
        "magenta": "35",
        "cyan": "36",
    }

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, style: str, text: str) -> str:
        if not self.enabled or not text:
            return text
        codes = ";".join(self._CODES[name] for name in style.split())
        return f"\x1b[{codes}m{text}\x1b[0m"


_STATUS_STYLE = {
    PassStatus.CHANGED: ("yellow", "changed"),
    PassStatus.UNCHANGED: ("dim", "no-op"),
    PassStatus.FAILED: ("red bold", "FAILED"),
    PassStatus.INCOMPLETE: ("red", "incomplete"),
    PassStatus.CODEGEN: ("magenta", "codegen"),
}


def status_label(step: PassRecord | CodegenRecord) -> str:
    """The one word every view uses for a step's status."""
    if isinstance(step, CodegenRecord):
        return "FAILED" if step.error else "codegen"
    return _STATUS_STYLE.get(step.status, ("", step.status.value))[1]


# Control characters (ANSI escapes) and bidi overrides that IR text or names could smuggle in.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _printable(text: str) -> str:
    """Show unsafe characters as \\uXXXX instead of letting the terminal obey them."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _ms(record: PassRecord) -> str:
    """A failed pass has no meaningful time: it ends when TVM has built the error."""
    return "" if record.status in (PassStatus.FAILED, PassStatus.INCOMPLETE) else f"{record.ms:.2f} ms"


class TerminalRenderer:
    def __init__(self, stream: TextIO, color: bool | None = None, context: int = 3) -> None:
        self.stream = stream
        if color is None:
            isatty = getattr(stream, "isatty", None)
            color = color_wanted(bool(isatty and isatty()))
        self.c = Palette(color)
        self.context = context

    def _line(self, text: str = "") -> None:
        self.stream.write(text + "\n")

    def render_kernel(
        self,
        kernel: KernelTrace,
        snapshot: Snapshots,
        show_diffs: bool = True,
        only: Iterable[int] | None = None,
        changed_only: bool = False,
        show_source: bool = True,
    ) -> None:
        """The per-pass table of one kernel, with diffs and the generated source."""
        c = self.c
        wanted = set(only) if only is not None else None
        count = len(kernel.passes)
        summary = f"{count} {'pass' if count == 1 else 'passes'}, {kernel.changed_count} changed, {kernel.failed_count} failed, {kernel.ms:.0f} ms"
        self._line(c("bold", f"== lower-trace: kernel {kernel.kernel_id} {_printable(kernel.name)}") + c("dim", f"  [{kernel.target or '?'}]  {summary}"))
        for step in kernel.steps:
            if wanted is not None and step.seq not in wanted:
                continue
            if isinstance(step, CodegenRecord):
                self._codegen(step, snapshot, show_source)
                continue
            if changed_only and step.status is PassStatus.UNCHANGED:
                continue
            self._pass(step, snapshot, show_diffs)
        if kernel.error is not None and kernel.failed_count == 0:
            self._line(c("red bold", f"   compile failed: {kernel.error.type}: {_printable(kernel.error.message)}"))
        self.stream.flush()

    def _pass(self, record: PassRecord, snapshot: Snapshots, show_diffs: bool) -> None:
        c = self.c
        style, label = _STATUS_STYLE.get(record.status, ("", record.status.value))
        before = snapshot(record.before) or "" if record.before else ""
        after = snapshot(record.after) or "" if record.after else ""
        counts = ""
        if record.status is PassStatus.CHANGED:
            stats = diff.stats(before, after)
            counts = c("green", f"+{stats.added}") + " " + c("red", f"-{stats.removed}")
        indent = "  " * record.depth
        name = _printable(record.name)
        self._line(
            f"{record.seq:>4} {c('cyan', f'{record.phase:<20}')} {indent}{c(style, name) if record.status is not PassStatus.CHANGED else c('bold', name)}"
            f"  {c(style, label)}  {counts}  {c('dim', _ms(record))}".rstrip()
        )
        if record.error is not None:
            self._line(c("red", f"       {record.error.type}: {_printable(record.error.message)}"))
            if record.status is PassStatus.FAILED and record.error.traceback:
                for line in record.error.traceback.rstrip().splitlines()[-12:]:
                    self._line(c("dim", f"       {_printable(line)}"))
        if record.status is PassStatus.FAILED and before:
            self._line(c("red", "       the IR this pass received:"))
            for line in before.splitlines():
                self._line(f"       {_printable(line)}")
        if show_diffs and record.status is PassStatus.CHANGED:
            self._diff(before, after)

    def _diff(self, before: str, after: str) -> None:
        c = self.c
        for hunk in diff.hunks(before, after, self.context):
            self._line(c("cyan", f"       {hunk.header}"))
            for line in hunk.lines:
                text = _printable(line.text)
                if line.tag == "+":
                    self._line(c("green", f"       +{text}"))
                elif line.tag == "-":
                    self._line(c("red", f"       -{text}"))
                else:
                    self._line(c("dim", f"        {text}"))

    def _codegen(self, record: CodegenRecord, snapshot: Snapshots, show_source: bool) -> None:
        c = self.c
        source = snapshot(record.source) or "" if record.source else ""
        status = c("red bold", "FAILED") if record.error else c("magenta", "codegen")
        where = f"{record.role} codegen"
        self._line(
            f"{record.seq:>4} {c('cyan', f'{where:<20}')} {c('bold', record.function)}  {status}"
            f"  {c('dim', f'{record.language} [{record.target}] {len(source.splitlines())} lines  {record.ms:.2f} ms')}"
        )
        if record.edit_status:
            self._line(c("yellow" if record.edit_status != "SYNCED" else "dim", f"       edit: {record.edit_status} {_printable(record.edit_path)}"))
        if record.error is not None:
            self._line(c("red", f"       {record.error.type}: {_printable(record.error.message)}"))
        if show_source and source:
            for line in source.splitlines():
                self._line(f"       {_printable(line)}")

    def render_snapshot(self, text: str) -> None:
        for line in text.splitlines():
            self._line(_printable(line))
