"""The terminal view: one line per pass, the coloured diff of each changed pass.

Colour follows NO_COLOR / FORCE_COLOR / whether the stream is a terminal, and
is switched on or off as a whole palette.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import ClassVar, TextIO

from lower_trace.analysis import text_diff
from lower_trace.analysis.origins import Origins, error_points_at, kernel_origins
from lower_trace.config import color_wanted
from lower_trace.model import CodegenRecord, EditStatus, ErrorInfo, KernelState, KernelStatus, KernelTrace, PassCall, PassRecord, PassStatus, spans_key
from lower_trace.render.origins_view import origin_text
from lower_trace.text_safety import UNSAFE_RANGES, plural, printable, printable_line, printable_lines  # noqa: F401  (re-exported)

Snapshots = Callable[[str], "str | None"]


class Palette:
    _CODES: ClassVar[dict[str, str]] = {
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
    PassStatus.SKIPPED: ("dim", "skipped"),
}


def status_label(step: PassRecord | CodegenRecord) -> str:
    """The one word every view uses for a step's status."""
    if isinstance(step, CodegenRecord):
        return "FAILED" if step.error else "codegen"
    return _STATUS_STYLE.get(step.status, ("", step.status.value))[1]


def call_arguments(call: PassCall, limit: int = 32) -> str:
    """ "('shared.dyn')": the arguments a pass was built with, to tell two runs of one pass apart;
    "(…)" when they are longer than that (a target: `show --json` and the report have them whole)."""
    text = printable(", ".join([*call.args, *(f"{key}={value}" for key, value in call.kwargs)]))
    return f"({text})" if len(text) <= limit else "(…)"


def kernel_state(kernel: KernelTrace) -> KernelState:
    """What became of a compile (model.KernelState): ok, failed, compile failed, did not finish."""
    return KernelState.of(kernel)


def _ms(record: PassRecord) -> str:
    """A failed pass has no meaningful time: it ends when TVM has built the error. A pass a killed
    run left open has the time it had run (store.load_trace computes it): "so far"."""
    if record.status is PassStatus.INCOMPLETE and record.ms > 0:
        return f"{record.ms:.2f} ms so far"
    return "" if record.status in (PassStatus.FAILED, PassStatus.INCOMPLETE) else f"{record.ms:.2f} ms"


def _summary(kernel: KernelTrace) -> str:
    """The header's counts: a failed compile names what failed, a killed one that it did not finish."""
    count = len(kernel.passes)
    parts = [plural(count, "pass", "passes"), f"{kernel.changed_count} changed"]
    state = kernel_state(kernel)
    if kernel.failed_count or state is KernelState.OK:
        parts.append(f"{kernel.failed_count} failed")
    if state in (KernelState.COMPILE_FAILED, KernelState.DID_NOT_FINISH):
        parts.append(state.value)
    if kernel.status is not KernelStatus.RUNNING:
        parts.append(f"{kernel.ms:.0f} ms")
    return ", ".join(parts)


class TerminalRenderer:
    def __init__(self, stream: TextIO, color: bool | None = None, context: int = 3) -> None:
        self.stream = stream
        if color is None:
            isatty = getattr(stream, "isatty", None)
            color = color_wanted(bool(isatty and isatty()))
        self.c = Palette(color)
        self.context = context
        self.trace_path = ""  # the run folder being shown, for commands the view suggests

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
        target = printable(kernel.target or "?")
        self._line(c("bold", f"== lower-trace: kernel {kernel.kernel_id} {printable(kernel.name)}") + c("dim", f"  [{target}]  {_summary(kernel)}"))
        shown_errors = []
        for step in kernel.steps:
            if wanted is not None and step.seq not in wanted:
                continue
            if isinstance(step, CodegenRecord):
                self._codegen(step, snapshot, show_source)
                if step.error is not None:
                    shown_errors.append((step.error.type, step.error.message))
                continue
            if changed_only and step.status is PassStatus.UNCHANGED:
                continue
            self._pass(step, snapshot, show_diffs, kernel)
        if kernel.error is not None and kernel.failed_count == 0:
            if (kernel.error.type, kernel.error.message) in shown_errors:  # the codegen step above showed it
                self._line(c("red bold", "   compile failed (the error above)"))
            else:
                self._error(kernel.error, "   compile failed: ", "red bold")
        self.stream.flush()

    def _error(self, error: ErrorInfo, lead: str, style: str = "red") -> None:
        """The exception type and its whole message, line by line (a compiler's output keeps its layout)."""
        lines = printable_lines(error.message.rstrip("\n"))
        self._line(self.c(style, f"{lead}{printable(error.type)}: {lines[0]}"))
        for line in lines[1:]:
            self._line(self.c(style, f"       {line}") if line.strip() else "")

    def _pass(self, record: PassRecord, snapshot: Snapshots, show_diffs: bool, kernel: KernelTrace | None = None) -> None:
        c = self.c
        style, label = _STATUS_STYLE.get(record.status, ("", record.status.value))
        before = snapshot(record.before) or "" if record.before else ""
        after = snapshot(record.after) or "" if record.after else ""
        counts = ""
        if record.status is PassStatus.CHANGED:
            stats = text_diff.stats(before, after)
            counts = c("green", f"+{stats.added}") + " " + c("red", f"-{stats.removed}")
        indent = "  " * record.depth
        shown = printable(record.name) + (call_arguments(record.call) if record.call is not None else "")
        name = c(style, shown) if record.status is not PassStatus.CHANGED else c("bold", shown)
        phase = c("cyan", f"{printable(record.phase):<20}")
        self._line(f"{record.seq:>4} {phase} {indent}{name}  {c(style, label)}  {counts}  {c('dim', _ms(record))}".rstrip())
        if record.error is not None:
            self._error(record.error, "       ")
            if record.status is PassStatus.FAILED and record.error.traceback:
                for line in printable_lines(record.error.traceback.rstrip())[-12:]:
                    self._line(c("dim", f"       {line}"))
        if record.repro:
            self._line(c("bold", f"       reproduce it without your program: python {printable(os.path.join(record.repro, 'repro.py'))}"))
        elif record.input and record.crashed:
            where = printable(self.trace_path) if self.trace_path else "TRACE"
            command = f"lower-trace repro {where} -k {printable(record.kernel)} -p {record.seq} -o FOLDER"
            self._line(c("bold", f"       its input was kept: `{command}` writes a reproducer"))
        if record.status is PassStatus.FAILED and before:
            origins, problem = _failure_origins(kernel, before, snapshot)
            if problem:  # said, not hidden: the IR still shows, without its lines' origins
                self._line(c("dim", f"       (the source map of this IR could not be worked out: {printable(problem)}; please report it)"))
            self._failing_ir(record, before, origins)
        if show_diffs and record.status is PassStatus.CHANGED:
            self._diff(before, after)

    def _failing_ir(self, record: PassRecord, before: str, origins: Origins | None) -> None:
        """The IR a failed pass received; with spans, each line's origin before it and the user's
        lines the error quotes first."""
        c = self.c
        lines = _text_lines(before)
        if not origins or not any(origins):
            self._line(c("red", "       the IR this pass received:"))
            for line in lines:
                self._line(f"       {line}")
            return
        error = record.error
        quoted = error_points_at(before, origins, f"{error.message}\n{error.traceback}") if error is not None else []
        if quoted:
            named = ", ".join(printable(origin_text(o)) for o in quoted)
            self._line(c("red bold", f"       the error points at your line{'s' if len(quoted) > 1 else ''}: ") + named)
        self._line(c("red", "       the IR this pass received, each line after the line of your program it comes from:"))
        width = max(len(origin_text(o)) for o in origins)
        for i, line in enumerate(lines):
            origin = origins[i] if i < len(origins) else None
            self._line(f"       {c('dim', printable(origin_text(origin, width)))} | {line}")

    def render_diff(self, before: str, after: str) -> None:
        """A unified diff of two texts, coloured like the pass diffs."""
        self._diff(before, after)
        self.stream.flush()

    def _diff(self, before: str, after: str) -> None:
        c = self.c
        for hunk in text_diff.hunks(before, after, self.context):
            self._line(c("cyan", f"       {hunk.header}"))
            for line in hunk.lines:
                text = printable_line(line.text)
                if line.tag == "+":
                    self._line(c("green", f"       +{text}"))
                elif line.tag == "-":
                    self._line(c("red", f"       -{text}"))
                else:
                    self._line(c("dim", f"        {text}"))

    def _codegen(self, record: CodegenRecord, snapshot: Snapshots, show_source: bool) -> None:
        c = self.c
        source = snapshot(record.source) or "" if record.source else ""
        lines = _text_lines(source)
        status = c("red bold", "FAILED") if record.error else c("magenta", "codegen")
        where = f"{record.role} codegen"
        self._line(
            f"{record.seq:>4} {c('cyan', f'{printable(where):<20}')} {c('bold', printable(record.function))}  {status}"
            f"  {c('dim', printable(f'{record.language} [{record.target}] {len(lines)} lines  {record.ms:.2f} ms'))}"
        )
        edit = record.edit_status
        if edit is not None:
            self._line(c("yellow" if edit is not EditStatus.SYNCED else "dim", f"       edit: {edit.value} {printable(record.edit_path)}"))
        if record.error is not None:
            self._error(record.error, "       ")
        if show_source:
            for line in lines:
                self._line(f"       {line}")

    def render_snapshot(self, text: str) -> None:
        for line in _text_lines(text):
            self._line(line)


def _failure_origins(kernel: KernelTrace | None, text: str, snapshot: Snapshots) -> tuple[Origins | None, str]:
    """The origins of a failed pass's input (None without spans), and what went wrong working
    them out ("" when nothing did). Computed only for a failure; a damaged trace shows the IR
    without them, and says why."""
    if kernel is None:
        return None, ""

    def spans_of(digest: str) -> str:
        try:
            return snapshot(spans_key(digest)) or ""
        except LookupError:
            return ""

    try:
        result = kernel_origins(kernel, lambda digest: snapshot(digest) or "", spans_of)
    except Exception as exc:  # a view helper: the IR still shows without origins
        return None, f"{type(exc).__name__}: {exc}"
    return (result.texts.get(text) if result.has_spans else None), ""


def _text_lines(text: str) -> list[str]:
    """IR or source text as printable lines ("" is no line; a final line break adds none)."""
    if not text:
        return []
    return printable_lines(text[:-1] if text.endswith("\n") else text)
