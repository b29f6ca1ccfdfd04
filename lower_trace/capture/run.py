"""One traced process run: the sink compile sessions report to.

A :class:`TraceRun` is created by ``enable()`` and closed by ``disable()``,
``reset()`` or interpreter exit. It owns the run's trace writer (store/writer.py), its
worker thread, kernel ids, the working copies and the user's messages. Each
finished kernel is handed to the run's listeners (the terminal view, the HTML
report: see ``sink.KernelListener``; api.py wires them, capture imports no
renderer); the working copies and the reproducer writer come in as ports
(ports.py), also from api.py. Every disk or listener fault is one warning and
tracing degrades; the user's compile never notices.
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from lower_trace.capture.faults import Guard
from lower_trace.capture.gate import PassGate
from lower_trace.capture.messages import Messages
from lower_trace.capture.ports import CodegenAlias, Ports, WorkingCopies
from lower_trace.capture.sink import KernelListener
from lower_trace.capture.worker import Worker
from lower_trace.config import Config
from lower_trace.model import EditOutcome, EditStatus, KernelEnd, KernelRebuild, KernelStart, KernelStatus, KernelTrace, LaunchRecord, Note, ReproSpec, RunInfo
from lower_trace.model_json import to_json
from lower_trace.store.layout import REPORT, REPRO, TRACER_FAULTS, launch_dir, new_run_dir, script_dir_of
from lower_trace.store.paths import script_name
from lower_trace.store.writer import TraceWriter
from lower_trace.text_safety import plural, short_path

_MAX_SOURCE_BYTES = 2_000_000  # a file bigger than this is no kernel source worth keeping

def spare_core() -> bool:
    """Whether this process may run on more than one core: then printing on a worker thread
    shortens the run (wall) though it costs some CPU; on one core it could only cost."""
    try:
        return len(os.sched_getaffinity(0)) > 1
    except (AttributeError, OSError):
        return (os.cpu_count() or 1) > 1


def _cached_source(path: str) -> str | None:
    """A file that is not on disk but in linecache: a notebook cell's code (IPython registers each
    cell there under a made-up file name), so that the source map works for kernels defined in cells."""
    entry = linecache.cache.get(path)
    lines = entry[2] if entry is not None and len(entry) > 2 else None
    return "".join(lines) if lines else None


class KernelSummary(NamedTuple):
    kernel_id: str
    passes: int
    failed_passes: int
    failed: bool


class TraceRun:
    def __init__(self, config: Config, messages: Messages | None = None, ports: Ports | None = None) -> None:
        self.config = config
        self.messages = messages or Messages()
        self.ports = ports or Ports()
        script = config.script or script_name()
        self.script_dir = script_dir_of(config.trace_dir, script)
        self.run_dir = new_run_dir(self.script_dir)
        self.info = RunInfo(
            run_id=os.path.basename(self.run_dir),
            started=time.time(),
            script=script,
            title=config.title,
            argv=tuple(sys.argv),
            pid=os.getpid(),
            mode=config.mode or "",
            python=sys.version.split()[0],
            versions={},
        )
        self.writer: TraceWriter | None = TraceWriter(self.run_dir, self.info) if config.writes_trace else None
        self.faults = Guard(self.tracer_fault)
        self.worker = Worker(self.tracer_fault, on_idle=self._flush, threaded=spare_core())
        # Working copies of the generated source live beside the runs (they outlive them).
        copies, alias = self.ports.working_copies, self.ports.codegen_alias
        wanted = config.writes_trace and config.codegen_output is not None
        self.edits: WorkingCopies | None = copies(self.script_dir) if copies is not None and wanted else None
        self.edit_alias: CodegenAlias | None = None
        if alias is not None and self.edits is not None and config.codegen_output:
            self.edit_alias = alias(config.codegen_output, self.edits.root)
        self.listeners: list[KernelListener] = []
        self.gate: PassGate | None = PassGate(config.bisect) if config.bisect is not None else None
        self._lock = threading.Lock()
        self._register_lock = threading.Lock()
        self._sources: dict[str, str | None] = {}  # the user's files read so far (read_source)
        self._kernel_count = 0
        self._pending_notes: list[str] = []
        self.kernel_summaries: list[KernelSummary] = []  # what the closing line needs; the rest is on disk
        self.closed = False
        self.quiet_close = False  # no closing line: the caller tells the user itself
        if self.edits is None:
            self._warn_unused_edits()
        if config.filter_error and config.prints_terminal:  # the filter is for the live view only
            self.messages.say(config.filter_error, once="filter")
        if config.replay_error:
            self.messages.say(config.replay_error, once="replay")
        if config.device_error:
            self.messages.say(config.device_error, once="device-setting")
        if config.launches_error:
            self.messages.say(config.launches_error, once="launches-setting")

    @property
    def report_path(self) -> str:
        return os.path.join(self.run_dir, REPORT)

    def add_listener(self, listener: KernelListener) -> None:
        self.listeners.append(listener)

    def _warn_unused_edits(self) -> None:
        edited_copies = self.ports.edited_copies
        try:
            root = edited_copies(self.script_dir) if edited_copies is not None else None
        except OSError:
            return
        if root is not None:
            self.note(
                f"edited working copies in {root} are not used: terminal mode writes "
                f"nothing; set {self.config.dir_setting} (or use {self.config.mode_setting} both) to compile them",
                once="edits-unused",
            )

    # --- messages ------------------------------------------------------------

    def note(self, text: str, once: str | None = None) -> None:
        """Tell the user once and keep the note in the trace (and the report)."""
        self.messages.say(text, once=once)
        with self._lock:
            if not self._kernel_count:  # the trace starts with the first kernel
                self._pending_notes.append(text)
                return
        self.worker.submit(lambda: self._write_note(text))

    def _write_note(self, text: str) -> None:
        self.append_record("note", Note(text))
        for listener in list(self.listeners):  # a failing one leaves the list
            self._call(listener, "note", text)

    def edits_fault(self, exc: OSError) -> None:
        root = self.edits.root if self.edits is not None else self.script_dir
        self.edits = None
        self.messages.say(
            f"cannot use the working copies in {root} ({exc.__class__.__name__}: {exc}); "
            "edit and recompile is off for this run, your compile goes on with the generated source",
            once="edits-disk",
        )

    def edit_resolved(self, kernel: str, outcome: EditOutcome) -> None:
        """Say what happened to a kernel's working copy: once per file; at scale, a few and a count."""
        kind = "created" if outcome.created else outcome.status.value
        if outcome.created:
            more = f"{{n:more working copy/more working copies}} ({{by}}) saved in {short_path(os.path.dirname(outcome.path))}; `lower-trace edits` lists them"
        else:
            more = f"{{n:more working copy/more working copies}} ({{by}}) {outcome.status.value}; `lower-trace edits` lists them"
        self.messages.say(outcome.message(kernel), once=f"edit:{outcome.path}", group=f"edit:{kind}", more=more, label=kernel)

    def tracer_fault(self, exc: BaseException) -> None:
        kept = self._keep_traceback(exc)
        where = f"; its traceback is in {kept}: please report it" if kept else ""
        self.messages.say(
            f"internal error, tracing continues without it ({type(exc).__name__}: {exc}){where}; your compile is not affected",
            once=f"fault:{type(exc).__name__}",
        )

    def _keep_traceback(self, exc: BaseException) -> str:
        """Append the fault's traceback to the run's tracer-faults.txt: a fault said once on stderr
        still leaves every occurrence, with where it happened, to report. "" when it cannot be written."""
        import traceback

        if self.writer is None:
            return ""
        path = os.path.join(self.run_dir, TRACER_FAULTS)
        try:
            os.makedirs(self.run_dir, exist_ok=True)  # a fault may come before the first record made it
            with open(path, "a", encoding="utf-8") as out:
                out.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
                out.writelines(traceback.format_exception(type(exc), exc, exc.__traceback__))
        except OSError:
            return ""
        return path

    def _disk_fault(self, exc: BaseException) -> None:
        self.writer = None
        self.edits = None
        self.messages.say(
            f"cannot write the trace under {self.config.trace_dir} ({exc.__class__.__name__}: {exc}); "
            f"tracing to disk is off for this run, your compile goes on (set {self.config.dir_setting} to a writable folder)",
            once="disk",
        )

    def listener_fault(self, listener: Any, exc: BaseException) -> None:
        """A view that failed is dropped. The report failing to write is the run's disk
        fault (the same folder, the same one warning); anything else is a tracer fault."""
        if listener in self.listeners:
            self.listeners.remove(listener)
        if isinstance(exc, OSError):
            self._disk_fault(exc)
        else:
            self.tracer_fault(exc)

    # --- records ---------------------------------------------------------------

    def register_kernel(
        self, name: str, started: float, target: str, entry: str, pass_configs: dict[str, str], context: dict[str, Any] | None = None, now: bool = False,
        stack: tuple[tuple[str, int, str], ...] = (),
    ) -> str:  # fmt: skip
        """A new kernel id now; its record is written by the worker, before the kernel's passes
        (now: on the calling thread, in the OS's hands on return, for replay's crash safety)."""
        # One lock for the id and the queueing, so records come out in id order when kernels
        # start on several threads at once; no worker job ever takes it.
        with self._register_lock:
            with self._lock:
                self._kernel_count += 1
                kernel_id = f"k{self._kernel_count}"
                notes, self._pending_notes = self._pending_notes, []
            start = KernelStart(kernel_id, name, started, target, entry, pass_configs, context or {}, stack)

            def write() -> None:
                for text in notes:
                    self._write_note(text)
                if now:
                    self.append_record_now("kernel", start)
                else:
                    self.append_record("kernel", start)

            if now:
                self.worker.wait()  # what is queued (notes, earlier records) goes first
                write()
            else:
                self.worker.submit(write)
        return kernel_id

    def record_launch(self, record: LaunchRecord) -> None:
        """A launch of a traced kernel, written by the worker after what is queued."""
        self.worker.submit(lambda: self.append_record("launch", record))

    def record_rebuild(self, record: KernelRebuild) -> None:
        """How a traced kernel object can be built again (lower-trace repro --launch), written by the worker."""
        self.worker.submit(lambda: self.append_record("rebuild", record))

    def launch_folder(self, kernel_id: str, n: int) -> str:
        return launch_dir(self.run_dir, kernel_id, n) if self.writer is not None else ""

    def read_source(self, path: str) -> str | None:
        """A file of the user's program, read the first time a kernel names it (the trace keeps it
        as it was then); None when it cannot be read or is too big to be a kernel's source."""
        if path not in self._sources:
            text = None
            try:
                if os.path.getsize(path) <= _MAX_SOURCE_BYTES:
                    with open(path, encoding="utf-8", errors="surrogateescape") as file:
                        text = file.read()
            except (OSError, ValueError):
                text = _cached_source(path)
            self._sources[path] = text
        return self._sources[path]

    def _to_disk(self, write: Callable[[TraceWriter], object]) -> bool:
        """write(the trace writer), unless this run writes nothing (any more). A disk error is
        the run's one disk warning and turns the disk off; the caller goes on. Whether it wrote."""
        writer = self.writer
        if writer is None:
            return False
        try:
            write(writer)
        except OSError as exc:
            self._disk_fault(exc)
            return False
        return True

    def store_ir(self, digest: str, text: str, now: bool = False) -> None:
        """A module's TVM JSON (a pass input, for reproducers and replay)."""
        self._to_disk(lambda writer: writer.add_ir(digest, text, now=now))

    def append_record_now(self, kind: str, record: Any) -> None:
        self._to_disk(lambda writer: writer.append_now(kind, to_json(record)))

    def write_reproducer(self, kernel_id: str, seq: int, name: str, spec: ReproSpec, ir_json: str) -> str:
        """The reproducer of a failed pass, in the run's folder; its folder, or "" when this run
        writes nothing to disk. Says how to run it, a few times per run."""
        repro = self.ports.reproducers
        if repro is None:
            return ""
        folder = repro.folder(self.run_dir, kernel_id, seq, name)
        if not self._to_disk(lambda writer: repro.write(folder, spec, ir_json)):
            return ""
        self.messages.say(
            f"{spec.kernel}: {spec.failed} failed; reproduce it without your program: {repro.command(folder)}",
            group="repro", more="{n:more reproducer/more reproducers} ({by}) written under " + short_path(os.path.join(self.run_dir, REPRO)), label=spec.kernel,
        )
        return folder

    def store_snapshot(self, digest: str, text: str) -> None:
        self._to_disk(lambda writer: writer.add_snapshot(digest, text))

    def append_record(self, kind: str, record: Any) -> None:
        try:
            self._to_disk(lambda writer: writer.append(kind, to_json(record)))
        except (TypeError, ValueError) as exc:  # a value JSON cannot hold
            self.tracer_fault(exc)

    def _flush(self) -> None:
        self._to_disk(TraceWriter.flush)

    def settle(self) -> None:
        """Return once every record and snapshot handed over so far is written to the OS (flushed,
        not fsynced: what a crashed process wrote survives it). The report's blocks may still follow."""
        self.worker.submit(self._flush, urgent=True)
        self.worker.wait()

    def kernel_finished(self, kernel: KernelTrace, texts: dict[str, str]) -> None:
        self.append_record("kernel_end", KernelEnd(kernel.kernel_id, kernel.status, kernel.ms, kernel.target, kernel.error))
        self._edits_compiled(kernel, texts)
        with self._lock:
            self.kernel_summaries.append(
                KernelSummary(kernel.kernel_id, len(kernel.passes), kernel.failed_count, kernel.status is KernelStatus.FAILED)
            )
        text_of = texts.get
        for listener in list(self.listeners):
            if listener.inline:
                self._call(listener, "kernel_finished", kernel, text_of)
            else:  # queued after this kernel's records (also when this runs on the worker itself)
                self.worker.submit(lambda listener=listener: self._call(listener, "kernel_finished", kernel, text_of))

    def _edits_compiled(self, kernel: KernelTrace, texts: dict[str, str]) -> None:
        """Tell the working copies whether a compile that used an edit failed: `lower-trace edits`
        marks such an edit stale until it changes or compiles."""
        edits = self.edits
        if edits is None:
            return
        failed = kernel.status is KernelStatus.FAILED
        for step in kernel.codegen:
            if step.edit_status is EditStatus.PATCHED and step.edit_path:
                with self.faults:
                    try:
                        edits.compiled(step.edit_path, failed, texts.get(step.source) if step.source else None)
                    except OSError as exc:  # the working copies' disk: edits are off, not a tracer fault
                        self.edits_fault(exc)
                        return

    def _call(self, listener: KernelListener, method: str, *args: Any) -> Any:
        try:
            return getattr(listener, method)(*args)
        except Exception as exc:
            self.listener_fault(listener, exc)
            return None

    # --- close -------------------------------------------------------------------

    def close(self, quiet_if_empty: bool = False) -> None:
        """Finish the run: the worker drains, listeners close (the report's end), one summary line."""
        if self.closed:
            return
        self.closed = True
        self.worker.close()  # every queued snapshot, record and report block reaches the disk first
        count = len(self.kernel_summaries)
        report = None
        for listener in list(self.listeners):
            named = self._call(listener, "close")
            report = report or named
        if self.writer is not None:
            try:
                self.writer.close()
            except OSError:
                pass
        self.messages.flush_groups()
        if self.quiet_close:  # whoever started the run says where its report is (the pytest plugin)
            return
        if count == 0:
            if not quiet_if_empty:
                self.messages.say("tracing was on, but no kernel was compiled in this run")
            return
        self.messages.say(self.summary() + (f"; report: file://{report}" if report else f"; trace: {self.run_dir}" if self.writer else ""))

    def summary(self) -> str:
        kernels = len(self.kernel_summaries)
        passes = sum(s.passes for s in self.kernel_summaries)
        failed_kernels = sum(1 for s in self.kernel_summaries if s.failed)
        failed_passes = sum(s.failed_passes for s in self.kernel_summaries)
        text = f"traced {plural(kernels, 'kernel')}, {plural(passes, 'pass', 'passes')}"
        if failed_kernels:
            text += f"; {failed_kernels} failed to compile" + (f" ({plural(failed_passes, 'failed pass', 'failed passes')})" if failed_passes else "")
        return text
