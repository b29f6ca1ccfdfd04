"""The renderers a traced run feeds as kernels finish (``capture.sink.KernelListener``).

``TerminalListener`` prints each kernel's pass table and diffs on stderr (filtered
by TL_LOWER_TRACE_FILTER); ``ReportListener`` appends each kernel to the run's
HTML report. api.py attaches them to the run; capture never imports this module.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TextIO

from lower_trace.config import LiveFilter
from lower_trace.model import CodegenRecord, KernelTrace, PassStatus, RunInfo
from lower_trace.render.terminal import TerminalRenderer

TextOf = Callable[[str], str]


class TerminalListener:
    inline = True  # in order with the program's own output

    def __init__(self, stream_of: Callable[[], TextIO], live_filter: LiveFilter | None = None) -> None:
        self.stream_of = stream_of  # looked up per kernel: stderr may be redirected meanwhile
        self.filter = live_filter or LiveFilter()
        self._kernel = re.compile(self.filter.kernel) if self.filter.kernel else None
        self._pass = re.compile(self.filter.pass_) if self.filter.pass_ else None
        self._phase = re.compile(self.filter.phase) if self.filter.phase else None

    def kernel_finished(self, kernel: KernelTrace, text_of: TextOf) -> None:
        if self._kernel is not None and not self._kernel.search(kernel.name):
            return
        TerminalRenderer(self.stream_of()).render_kernel(kernel, text_of, only=self._selected(kernel), changed_only=self.filter.changed_only)

    def _selected(self, kernel: KernelTrace) -> set[int] | None:
        if self._pass is None and self._phase is None:
            return None
        chosen = set()
        for step in kernel.steps:
            if isinstance(step, CodegenRecord):
                # Codegen is no pass: shown unless a pass filter asks for something else.
                if self._pass is None or self._pass.search(step.function):
                    chosen.add(step.seq)
                continue
            if step.status in (PassStatus.FAILED, PassStatus.INCOMPLETE):
                chosen.add(step.seq)  # a failure is always shown
            elif (self._pass is None or self._pass.search(step.name)) and (self._phase is None or self._phase.search(step.phase)):
                chosen.add(step.seq)
        return chosen

    def note(self, text: str) -> None:
        pass  # notes are said on stderr by the run already

    def close(self) -> str | None:
        return None


class ReportListener:
    inline = False  # compressing and writing a kernel's block is no work for the compile's thread

    def __init__(self, path: str, run: RunInfo, latest_link: str | None = None) -> None:
        from lower_trace.render.report.writer import ReportWriter

        self.writer = ReportWriter(path, run, latest_link=latest_link)

    def kernel_finished(self, kernel: KernelTrace, text_of: TextOf) -> None:
        self.writer.add_kernel(kernel, text_of)

    def note(self, text: str) -> None:
        self.writer.add_note(text)

    def close(self) -> str | None:
        if not self.writer.kernels:
            return None
        return self.writer.close()
