"""One compile of one kernel = one :class:`CompileSession`.

The session follows the compiler's events (passes started and finished, codegen, the end of
the compile) and turns them into records and snapshots for its run (sink.TraceSink). It is
itself the compile's lifecycle (the kernel opened, its passes, its end), put together from small
parts: the snapshot decision (snapshots.py), the pass records (passes.py), a codegen call
(codegen_step.py) and the edit decision inside it (source_edits.py), what a failure leaves
(failures.py) and a failed pass's reproducer (reproducer.py). The compiler is reached only through
the integration's :class:`~lower_trace.capture.ir_adapter.IRAdapter`. Nothing is diffed or rendered
per pass; everything the session holds is released when the compile ends.
"""

from __future__ import annotations

import time
from typing import Any

from lower_trace.capture import codegen_step, source_edits
from lower_trace.capture.failures import error_info, interruption
from lower_trace.capture.faults import Guard
from lower_trace.capture.ir_adapter import Identity, IRAdapter, Module
from lower_trace.capture.passes import OpenPass, PassLog
from lower_trace.capture.reproducer import write_reproducer
from lower_trace.capture.sink import TraceSink
from lower_trace.capture.snapshots import Snapshots
from lower_trace.capture.worker import SnapshotRef
from lower_trace.device_model import DeviceRecord
from lower_trace.model import CodegenRecord, EditOutcome, ErrorInfo, KernelStatus, KernelTrace, PassStatus, source_key
from lower_trace.store.layout import digest_of

__all__ = ["CompileSession", "OpenPass", "error_info"]


class CompileSession:
    def __init__(self, run: TraceSink, ir: IRAdapter, entry: str = "", edits: bool = True) -> None:
        self.run = run
        self.faults = Guard(self.tracer_fault)  # a fault in the tracer's own work: one warning, the compile goes on
        self.edits_enabled = edits  # working copies for this compile's generated source
        self.attached = False  # an integration's tracker is on the current PassContext
        self.ir = ir
        self.worker = run.worker
        self.entry = entry
        self.kernel_id = ""
        self.kernel_name = ""
        self.signature = ""
        self.target = ""
        self.initial: SnapshotRef | None = None  # the TIR as handed to lowering (when edits are on)
        self.variant_config = ""  # target and pass configs: with that TIR, which variant this is
        self.edits_used: list[EditOutcome] = []  # this compile's edit decisions (source_edits.py)
        self.started = time.time()
        self._t0 = time.perf_counter()
        self._seq = 0
        # Time the tracer spent inside open passes (snapshots of nested passes): taken out of
        # the enclosing pass's time, so an outer pass's time is the compiler's, not ours.
        self._tracer_ms = 0.0
        self.snapshots = Snapshots(ir, run.worker, run.store_snapshot)
        self.pass_log = PassLog(run, ir)
        # No time is recorded for these: TVM can spend a long while building the
        # error before the context closes, which would be no measure of the pass.
        self._interrupted: list[OpenPass] = []
        self._pass_error: BaseException | None = None  # what a PassContext of this kernel closed with
        # Every pass's input kept as TVM JSON, on disk before the pass runs (TL_LOWER_TRACE_REPLAY=1).
        self.replay = bool(run.config.replay and run.config.writes_trace)
        self.context: dict[str, Any] = {}  # target and typed pass configs: what a rerun needs
        self._ordinal = 0  # the gate's number for the pass about to start (lower-trace bisect)
        self._finished = False
        self.codegen_steps: list[CodegenRecord] = []  # filled by the worker
        self.device_steps: list[DeviceRecord] = []  # likewise (integrations/nvcc/tilelang_device.py)
        self.stack: tuple[tuple[str, int, str], ...] = ()  # the user's frames that started the compile

    def next_seq(self) -> int:
        """The next record's number: passes and codegen calls share one count."""
        seq = self._seq
        self._seq += 1
        return seq

    def open_kernel(self, mod: Module) -> None:
        """At the compile's first event: the kernel's name, variant and context, registered with the run."""
        if self.kernel_id:
            return
        context = self.ir.compile_context()
        self.kernel_name = self.ir.kernel_name(mod)
        self.signature = self.ir.kernel_signature(mod)
        if self.edits_enabled and self.run.edits is not None:
            # The TIR as handed to lowering tells kernel variants apart (edits need its text at
            # codegen time): its snapshot, printed on the worker like any other (the first pass's
            # input is this very content, so it reuses it). None: a tracer fault, no variant key.
            self.initial = self.faults.call(self.snapshots.of, mod)
        self.target = context.target
        with self.faults:
            self.context = self.ir.replay_context()
        # With the TIR, the target and pass configs make the variant: they change the code too.
        configs = context.pass_configs
        self.variant_config = "; ".join([f"target={self.target}", *(f"{k}={configs[k]}" for k in sorted(configs, key=str))])
        with self.faults:
            self.stack = self.ir.user_stack()
        problem = self.ir.spans_problem()
        if problem:
            self.run.note(
                f"{problem}: no line of the IR or the generated source is traced to your program's lines (lower-trace where, the report's source pane)",
                once="spans",
            )
        self.kernel_id = self.pass_log.kernel_id = self.run.register_kernel(
            name=self.kernel_name,
            started=self.started,
            target=self.target,
            entry=self.entry,
            pass_configs=configs,
            context=self.context,
            now=self.replay,
            stack=self.stack,
        )

    # --- pass events (the compiler's hot path) ---------------------------------------

    def should_run(self, mod: Module, name: Any, depth: int, parent: OpenPass | None) -> bool:
        """Under lower-trace bisect: whether this pass runs; a skipped one is recorded as such."""
        gate = self.run.gate
        if gate is None:
            return True
        self.open_kernel(mod)
        name = str(name)
        runs = gate.should_run(self.kernel_name, name, depth, self.kernel_id)
        self._ordinal = gate.last
        if not runs:
            origin = self.ir.pass_origin(name, depth, parent.phase if parent else "")
            identity = self.ir.identity(mod)
            skipped = OpenPass(
                seq=self.next_seq(), name=origin.better_name or name, depth=depth, parent=parent.seq if parent else None, phase=origin.phase,
                caller=origin.caller, before=self.snapshots.of(mod, identity), identity=identity, started=0.0, ordinal=gate.last,
            )
            self._record(skipped, skipped.before, status=PassStatus.SKIPPED)
        return runs

    def pass_started(self, mod: Module, name: Any, depth: int, parent: OpenPass | None) -> OpenPass:
        entered = time.perf_counter()
        self.open_kernel(mod)
        name = str(name)
        phase, caller, better_name, call = self.ir.pass_origin(name, depth, parent.phase if parent else "")
        identity = self.ir.identity(mod)
        open_pass = OpenPass(
            seq=self.next_seq(),
            name=better_name or name,
            depth=depth,
            parent=parent.seq if parent else None,
            phase=phase,
            caller=caller,
            before=self.snapshots.of(mod, identity),
            identity=identity,
            started=0.0,
            ordinal=self._ordinal,
            call=call,
        )
        self._ordinal = 0
        if self.replay:
            self._keep_input(open_pass)
        if parent is not None:
            if not parent.announced:
                self._announce(parent, entered)
            else:
                self.worker.kick()  # its earlier nested passes' records reach the disk while this one runs
        open_pass.started = time.perf_counter()  # the pass's own time, without the tracer's
        if parent is not None:
            self._tracer_ms += (open_pass.started - entered) * 1000.0
        open_pass.tracer_ms = self._tracer_ms
        return open_pass

    def _keep_input(self, open_pass: OpenPass) -> None:
        """The input as TVM JSON and a pass_start record, in the OS's hands before the pass runs:
        a pass that kills the process still leaves what it received and that it was running."""
        ref = open_pass.before
        problem = self.ir.json_problem()
        if problem:
            self.replay = False
            self.run.note(f"{problem}: TL_LOWER_TRACE_REPLAY=1 keeps no pass inputs in this run, and failed passes get no reproducer", once="json")
            return
        if not ref.ir:
            text = self.ir.module_json(open_pass.identity)
            ref.ir = digest_of(text)
            self.run.store_ir(ref.ir, text, now=True)
        open_pass.input = ref.ir
        self.run.append_record_now("pass_start", self.pass_log.record(open_pass, 0.0, PassStatus.INCOMPLETE))

    def _announce(self, parent: OpenPass, now: float) -> None:
        """The first pass nested in `parent` is starting: a pass_open record says `parent` runs, with its
        time so far, so a process killed inside it leaves it in the trace (incomplete, around its nested
        passes). Once per pass that has nested passes (three per GEMM), urgent: the record is written
        while the nested pass runs, not when the batch is full."""
        parent.announced = True
        if parent.input or not self.run.config.writes_trace:
            return  # replay: its pass_start is on disk already; terminal mode: no trace to write
        so_far = max(0.0, (now - parent.started) * 1000.0 - (self._tracer_ms - parent.tracer_ms))
        self.worker.submit(lambda: self.run.append_record("pass_open", self.pass_log.record(parent, so_far, PassStatus.INCOMPLETE)), urgent=True)

    def pass_finished(self, open_pass: OpenPass, mod: Module) -> None:
        finished = time.perf_counter()
        elapsed = (finished - open_pass.started) * 1000.0 - (self._tracer_ms - open_pass.tracer_ms)
        identity = self.ir.identity(mod)
        if self.ir.same(open_pass.identity, identity):
            after = open_pass.before
        elif self.ir.equivalent(open_pass.identity, identity):
            # Rebuilt but structurally equal content prints the same: skip the printer.
            after = open_pass.before
            self.snapshots.remember(identity, after)
        else:
            after = self.snapshots.of(mod, identity)
        self._record(open_pass, after, ms=max(0.0, elapsed), identity=identity if after is not open_pass.before else None)
        if open_pass.parent is not None:
            self._tracer_ms += (time.perf_counter() - finished) * 1000.0

    def _record(
        self, open_pass: OpenPass, after: SnapshotRef | None, ms: float = 0.0, status: PassStatus | None = None, error: ErrorInfo | None = None,
        identity: Identity | None = None, repro: str = "",
    ) -> None:  # fmt: skip
        """The pass's record, written by the worker once its snapshots are printed."""
        log, snapshots = self.pass_log, self.snapshots
        self.worker.submit(lambda: log.write(open_pass, after, ms, status, error, snapshots.texts, repro, identity))

    def passes_interrupted(self, open_passes: list[OpenPass], error: BaseException | None = None) -> None:
        """Passes that never returned, and the exception their PassContext closed with (the
        caller may swallow it: finish() then gets None, and this error stands)."""
        self._interrupted.extend(open_passes)
        if error is not None and self._pass_error is None:
            self._pass_error = error

    # --- codegen (codegen_step.py) and the edit decision inside it (source_edits.py) ---------
    # Methods of the session because the integrations call them on it; the functions
    # themselves, bound here rather than wrapped: a codegen call costs no extra call.
    codegen = codegen_step.traced_codegen
    edit_source = source_edits.edit_source

    # --- end of compile ----------------------------------------------------------------

    def finish(self, error: BaseException | None) -> None:
        """Close the kernel: record passes that failed, hand the result to the run, free memory."""
        if self._finished:
            return
        self._finished = True
        error = error if error is not None else self._pass_error
        self._pass_error = None
        self.snapshots.forget()
        if not self.kernel_id:
            return  # no pass ran: nothing to show
        ms = round((time.perf_counter() - self._t0) * 1000.0, 3)  # the compile's time, not the reproducer's
        self._record_failures(error)
        problem = self.ir.spans_problem()  # spans switched off during this compile (a marked print differed): said, not silent
        if problem:
            said = "no line of the IR or the generated source is traced to your program's lines (lower-trace where, the report's source pane)"
            self.run.note(f"{problem}: {said}", once="spans")
        if error is not None:
            source_edits.note_failed_edits(self.run, self.kernel_name, self.edits_used)
        failure = error_info(error) if error is not None else None
        if self.run.config.prints_terminal:
            # The terminal view comes out in order with the user's own output.
            self.worker.wait()
            self._hand_over(ms, failure)
        else:
            self.worker.submit(lambda: self._hand_over(ms, failure), urgent=True)
        # A compile that has returned is whole on disk: a process that dies next (a kernel that
        # crashes at launch) must not leave a trace that reads as a shorter compile.
        self.run.settle()

    def _hand_over(self, ms: float, failure: ErrorInfo | None) -> None:
        kernel = KernelTrace(
            kernel_id=self.kernel_id,
            name=self.kernel_name,
            started=self.started,
            target=self.target,
            entry=self.entry,
            status=KernelStatus.FAILED if failure is not None else KernelStatus.OK,
            ms=ms,
            passes=self.pass_log.hand_over(),
            codegen=tuple(self.codegen_steps),
            error=failure,
            stack=self.stack,
            device=tuple(self.device_steps),
        )
        self._store_sources()
        # Release everything the compile held: texts, records, module references.
        texts = self.snapshots.hand_over()
        self.codegen_steps, self.device_steps, self._interrupted = [], [], []
        self.run.kernel_finished(kernel, texts)

    def _store_sources(self) -> None:
        """The user's files this kernel's spans name, as they are now (once per run). Without spans,
        the call site's file: most often the kernel's own. The stack's other files (drivers, test
        runners) are not kept: nothing shows them but their frames."""
        paths = self.faults.call(lambda: self.snapshots.user_files() or [file for file, _, _ in self.stack[-1:]])
        if paths is None:
            return
        for path in paths:
            text = self.run.read_source(path)
            if text is not None:
                self.snapshots.store_text(text, source_key(path))

    def _record_failures(self, error: BaseException | None) -> None:
        if not self._interrupted:
            return
        ordered, failed, incomplete = interruption(self._interrupted, error)
        for open_pass, note in incomplete:
            self._record(open_pass, None, status=PassStatus.INCOMPLETE, error=note)
        if failed is not None and error is not None:
            failure = error_info(error)
            self._record(failed, None, status=PassStatus.FAILED, error=failure, repro=self._reproduce(ordered, failure))

    def _reproduce(self, ordered: list[OpenPass], failure: ErrorInfo) -> str:
        """The failing pass's reproducer (reproducer.py): its folder, "" when none could be
        written. Never raises."""
        if not self.run.config.writes_trace:
            return ""  # nowhere to write one (terminal mode without a folder): spend nothing on it
        return self.faults.call(write_reproducer, self.run, self.ir, self.kernel_id, self.kernel_name, self.context, ordered, failure) or ""

    def tracer_fault(self, exc: BaseException) -> None:
        self.run.tracer_fault(exc)
