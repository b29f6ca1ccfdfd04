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
from lower_trace.text_safety import plural

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


# At most this long at exit for the run's source maps; the kernels left out say in the page how to
# add theirs (`lower-trace report`). About 170 GEMM-sized kernels, 500 small ones (docs/performance.md).
SOURCE_MAP_BUDGET_S = 5.0


class ReportListener:
    inline = False  # compressing and writing a kernel's block is no work for the compile's thread

    def __init__(self, path: str, run: RunInfo, latest_link: str | None = None, run_dir: str = "", budget_s: float | None = SOURCE_MAP_BUDGET_S) -> None:
        from lower_trace.render.report.writer import ReportWriter

        self.writer = ReportWriter(path, run, latest_link=latest_link)
        self.run_dir = run_dir  # the trace the source maps are read from at close ("": none are added)
        self.budget_s = budget_s
        self.left_out = 0  # kernels whose source map the budget left out

    def kernel_finished(self, kernel: KernelTrace, text_of: TextOf) -> None:
        self.writer.add_kernel(kernel, text_of)  # without its source map: derived data, added at close

    def note(self, text: str) -> None:
        self.writer.add_note(text)

    def close(self) -> str | None:
        if not self.writer.kernels:
            return None
        try:
            self._add_source_maps()
        finally:
            path = self.writer.close()  # the end marker, whatever became of the source maps
        return path

    def _add_source_maps(self) -> None:
        """The run's source maps, once, from the trace on disk (the run's worker has flushed it):
        nothing of them is worked out while the program compiles, and nothing is kept meanwhile.
        Device stages recorded after their kernel's block (deferred to the close on one core) are
        added first."""
        if not self.run_dir:
            return
        import time
        import warnings

        from lower_trace.render.report.writer import add_source_maps
        from lower_trace.store.layout import TraceNotFound
        from lower_trace.store.reader import TraceDamaged, load_trace

        started = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TraceDamaged)  # a kernel it cannot read keeps the page's hint
                trace = load_trace(self.run_dir)
        except TraceNotFound:
            return
        for kernel in trace.kernels:  # device stages that came after their kernel's block (one core); launches always do
            self.writer.add_device(kernel, trace.snapshot)
            self.writer.add_launches(kernel, self.run_dir)
        budget = None if self.budget_s is None else max(0.0, self.budget_s - (time.perf_counter() - started))
        self.left_out = add_source_maps(self.writer, trace.kernels, trace.snapshot, budget)
        if self.left_out:
            self.writer.add_note(
                f"the source map of {plural(self.left_out, 'kernel')} was left out to end the run in time: `lower-trace report {self.run_dir}` adds it"
            )
