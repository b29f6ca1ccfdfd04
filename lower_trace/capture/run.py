"""One traced process run: its trace directory, its kernels, its messages.

A :class:`TraceRun` is created by ``enable()`` and closed by ``disable()``,
``reset()`` or interpreter exit. Compile sessions report to it; it appends to
the trace and renders the terminal view per kernel. The HTML report is written
after each compile by a background thread (coalesced; at most once a second,
and never more than a tenth of the time; off the compile's path) and once more, in the foreground, when the run closes.
Every disk or render fault is one warning and tracing degrades; the user's
compile never notices.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, NamedTuple, TextIO

from ..config import Config
from ..model import KernelStatus, KernelTrace, RunInfo, to_json
from ..paths import script_name
from ..override import EditOutcome, EditStore
from ..store import TraceWriter
from .worker import Worker

REPORT_INTERVAL_S = 1.0
# A rewrite of a big run's report takes a while; wait at least this many times as
# long before the next, so background rewrites stay a small share of the run.
REPORT_BACKOFF = 10.0


class KernelSummary(NamedTuple):
    kernel_id: str
    passes: int
    failed_passes: int
    failed: bool


class Messages:
    """One-line messages to the user on stderr, each kind said once."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._said: set[str] = set()
        self._lock = threading.Lock()

    @property
    def stream(self) -> TextIO:
        return self._stream or sys.stderr

    def say(self, text: str, once: str | None = None) -> None:
        with self._lock:
            if once is not None:
                if once in self._said:
                    return
                self._said.add(once)
        try:
            self.stream.write(f"lower-trace: {text}\n")
            self.stream.flush()
        except Exception:
            pass  # a closed stderr must not break the compile either


def _new_run_id(script_dir: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = f"run-{stamp}-{os.getpid()}"
    candidate, n = base, 1
    while os.path.exists(os.path.join(script_dir, candidate)):
        n += 1
        candidate = f"{base}-{n}"
    return candidate


class TraceRun:
    def __init__(self, config: Config, messages: Messages | None = None) -> None:
        self.config = config
        self.messages = messages or Messages()
        script = script_name()
        self.script_dir = os.path.abspath(os.path.join(config.trace_dir, script))
        run_id = _new_run_id(self.script_dir)
        self.run_dir = os.path.join(self.script_dir, run_id)
        self.info = RunInfo(
            run_id=run_id,
            started=time.time(),
            script=script,
            argv=tuple(sys.argv),
            pid=os.getpid(),
            mode=config.mode or "",
            python=sys.version.split()[0],
            versions={},
        )
        self.writer: TraceWriter | None = TraceWriter(self.run_dir, self.info) if config.writes_trace else None
        self.worker = Worker(self.tracer_fault)
        # Working copies of the generated source live beside the runs (they outlive them).
        self.edits: EditStore | None = EditStore(self.script_dir) if config.writes_trace else None
        self._lock = threading.Lock()
        self._kernel_count = 0
        self._pending_notes: list[str] = []
        self.kernel_summaries: list[KernelSummary] = []  # what the closing line needs; the rest is on disk
        self._last_report = 0.0
        self._last_report_cost = 0.0
        self._report_dirty = False
        self._report_thread: threading.Thread | None = None
        self._closing = threading.Event()
        self.closed = False
        if self.edits is None:
            self._warn_unused_edits()

    def _warn_unused_edits(self) -> None:
        try:
            edited = any(e["state"] == "edited" for e in EditStore(self.script_dir).entries())
        except OSError:
            return
        if edited:
            self.note(
                f"edited working copies in {EditStore(self.script_dir).root} are not used: terminal mode writes "
                "nothing; set TL_LOWER_TRACE_DIR (or use TL_LOWER_TRACE=both) to compile them",
                once="edits-unused",
            )

    # --- messages ------------------------------------------------------------

    def note(self, text: str, once: str | None = None) -> None:
        """Tell the user once and keep the note in the trace."""
        self.messages.say(text, once=once)
        with self._lock:
            if not self._kernel_count:  # the trace starts with the first kernel
                self._pending_notes.append(text)
                return
        self.worker.submit(lambda: self._append("note", {"text": text}))

    def edits_fault(self, exc: OSError) -> None:
        root = self.edits.root if self.edits is not None else self.script_dir
        self.edits = None
        self.messages.say(
            f"cannot use the working copies in {root} ({exc.__class__.__name__}: {exc}); "
            "edit and recompile is off for this run, your compile goes on with the generated source",
            once="edits-disk",
        )

    def edit_resolved(self, kernel: str, outcome: EditOutcome) -> None:
        """Say what happened to a kernel's working copy: each run, once per file."""
        self.messages.say(outcome.message(kernel), once=f"edit:{outcome.path}")

    def tracer_fault(self, exc: BaseException) -> None:
        self.messages.say(
            f"internal error, tracing continues without it ({type(exc).__name__}: {exc}); your compile is not affected",
            once=f"fault:{type(exc).__name__}",
        )

    def _disk_fault(self, exc: BaseException) -> None:
        self.writer = None
        self.edits = None
        self.messages.say(
            f"cannot write the trace under {self.config.trace_dir} ({exc.__class__.__name__}: {exc}); "
            "tracing to disk is off for this run, your compile goes on (set TL_LOWER_TRACE_DIR to a writable folder)",
            once="disk",
        )

    # --- records ---------------------------------------------------------------

    def register_kernel(self, **fields: Any) -> str:
        """A new kernel id now; its record is written by the worker, before the kernel's passes."""
        with self._lock:
            self._kernel_count += 1
            kernel_id = f"k{self._kernel_count}"
            notes, self._pending_notes = self._pending_notes, []

        def write() -> None:
            for text in notes:
                self._append("note", {"text": text})
            self._append("kernel", {"kernel_id": kernel_id, **fields})

        self.worker.submit(write)
        return kernel_id

    def store_snapshot(self, digest: str, text: str) -> None:
        writer = self.writer
        if writer is None:
            return
        try:
            writer.add_snapshot(digest, text)
        except OSError as exc:
            self._disk_fault(exc)

    def append_record(self, kind: str, record: Any) -> None:
        self._append(kind, to_json(record))

    def _append(self, kind: str, data: dict[str, Any]) -> None:
        writer = self.writer
        if writer is None:
            return
        try:
            writer.append(kind, data)
        except OSError as exc:
            self._disk_fault(exc)
        except (TypeError, ValueError) as exc:  # a value JSON cannot hold
            self.tracer_fault(exc)

    def kernel_finished(self, kernel: KernelTrace, texts: dict[str, str]) -> None:
        end = {"kernel_id": kernel.kernel_id, "status": kernel.status.value, "ms": kernel.ms, "target": kernel.target}
        if kernel.error is not None:
            end["error"] = to_json(kernel.error)
        self._append("kernel_end", end)
        with self._lock:
            self.kernel_summaries.append(
                KernelSummary(kernel.kernel_id, len(kernel.passes), kernel.failed_count, kernel.status is KernelStatus.FAILED)
            )
        if self.config.prints_terminal:
            try:
                from ..render.terminal import TerminalRenderer

                TerminalRenderer(self.messages.stream).render_kernel(kernel, texts.get)
            except Exception as exc:
                self.tracer_fault(exc)
        if self.config.writes_report:
            self._schedule_report()

    # --- report and close --------------------------------------------------------

    @property
    def report_path(self) -> str:
        return os.path.join(self.run_dir, "report.html")

    def write_report(self) -> str | None:
        """Render the HTML report from the trace on disk; also refresh {dir}/{script}/report.html."""
        writer = self.writer
        if writer is None or not writer.started:
            return None
        started = time.monotonic()
        try:
            from ..render.html import write_report

            path = write_report(self.run_dir, self.report_path, latest_link=os.path.join(self.script_dir, "report.html"))
        except OSError as exc:
            self._disk_fault(exc)
            return None
        except Exception as exc:
            self.tracer_fault(exc)
            return None
        self._last_report = time.monotonic()
        self._last_report_cost = self._last_report - started
        return path

    def _schedule_report(self) -> None:
        with self._lock:
            self._report_dirty = True
            if self._report_thread is not None or self._closing.is_set():
                return  # the running writer picks the change up
            thread = threading.Thread(target=self._report_loop, name="lower-trace-report", daemon=True)
            self._report_thread = thread
        thread.start()

    def _report_loop(self) -> None:
        while True:
            pause = max(REPORT_INTERVAL_S, REPORT_BACKOFF * self._last_report_cost)
            wait = pause - (time.monotonic() - self._last_report)
            if wait > 0 and self._closing.wait(wait):
                break  # close() writes the final report itself
            with self._lock:
                if not self._report_dirty or self._closing.is_set():
                    break
                self._report_dirty = False
            self.write_report()
        with self._lock:
            self._report_thread = None

    def close(self, quiet_if_empty: bool = False) -> None:
        """Finish the run: final report, one summary line, files closed."""
        if self.closed:
            return
        self.closed = True
        self.worker.close()  # every queued snapshot and record reaches the disk first
        self._closing.set()
        thread = self._report_thread
        if thread is not None:
            thread.join()
        count = len(self.kernel_summaries)
        report = self.write_report() if self.config.writes_report and count else None
        if self.writer is not None:
            try:
                self.writer.close()
            except OSError:
                pass
        if count == 0:
            if not quiet_if_empty:
                self.messages.say("tracing was on, but no TileLang kernel was compiled in this run")
            return
        self.messages.say(self.summary() + (f"; report: file://{report}" if report else f"; trace: {self.run_dir}" if self.writer else ""))

    def summary(self) -> str:
        kernels = len(self.kernel_summaries)
        passes = sum(s.passes for s in self.kernel_summaries)
        failed_kernels = sum(1 for s in self.kernel_summaries if s.failed)
        failed_passes = sum(s.failed_passes for s in self.kernel_summaries)
        text = f"traced {_count(kernels, 'kernel')}, {_count(passes, 'pass', 'passes')}"
        if failed_kernels:
            text += f"; {failed_kernels} failed to compile" + (f" ({_count(failed_passes, 'failed pass', 'failed passes')})" if failed_passes else "")
        return text


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"
