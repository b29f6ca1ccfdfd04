"""One compile of one kernel = one :class:`CompileSession`.

The session follows the compiler's events (passes started and finished, codegen, the end of
the compile) and turns them into records and snapshots for its run (sink.TraceSink). It is
put together from small parts: the snapshot decision (snapshots.py), the pass records
(passes.py), what a failure leaves (failures.py); the compiler itself is reached only through
the integration's :class:`~lower_trace.capture.ir_adapter.IRAdapter`. Nothing is diffed or rendered
per pass; everything the session holds is released when the compile ends.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from lower_trace.capture.failures import error_info, interruption
from lower_trace.capture.faults import Guard
from lower_trace.capture.ir_adapter import Identity, IRAdapter, Module
from lower_trace.capture.passes import OpenPass, PassLog
from lower_trace.capture.sink import TraceSink
from lower_trace.capture.snapshots import Snapshots
from lower_trace.capture.worker import SnapshotRef
from lower_trace.device_model import DeviceRecord
from lower_trace.model import CodegenRecord, EditOutcome, ErrorInfo, KernelStatus, KernelTrace, PassBuild, PassStatus, ReproSpec, source_key
from lower_trace.store.layout import digest_of
from lower_trace.text_safety import line_directive

__all__ = ["ActiveCodegen", "CompileSession", "OpenPass", "current_codegen", "error_info"]


@dataclass
class ActiveCodegen:
    """The codegen call in progress on this thread, for TileLang's source callbacks."""

    session: CompileSession
    role: str
    language: str
    edit: tuple[EditOutcome, str] | None = None  # (outcome, the fresh codegen)
    seq: int = 0  # the codegen record's: a device compile inside this call belongs to it


# Set while a codegen call runs, so a post-processing callback knows whose source it sees.
current_codegen: ContextVar[ActiveCodegen | None] = ContextVar("lower_trace_codegen", default=None)


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
        self._initial: SnapshotRef | None = None  # the TIR as handed to lowering (when edits are on)
        self.variant_config = ""  # target and pass configs: with that TIR, which variant this is
        self._edits: list[EditOutcome] = []
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

    def _next_seq(self) -> int:
        seq = self._seq
        self._seq += 1
        return seq

    def _open_kernel(self, mod: Module) -> None:
        if self.kernel_id:
            return
        context = self.ir.compile_context()
        self.kernel_name = self.ir.kernel_name(mod)
        self.signature = self.ir.kernel_signature(mod)
        if self.edits_enabled and self.run.edits is not None:
            # The TIR as handed to lowering tells kernel variants apart (edits need its text at
            # codegen time): its snapshot, printed on the worker like any other (the first pass's
            # input is this very content, so it reuses it). None: a tracer fault, no variant key.
            self._initial = self.faults.call(self.snapshots.of, mod)
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

    def _initial_tir(self) -> str:
        """The text of the TIR as handed to lowering: printed on the worker by codegen time (one
        core: at once; a worker thread behind: it is waited for)."""
        ref = self._initial
        if ref is None:
            return ""
        if not ref.digest:
            self.worker.wait()
        texts = self.snapshots.texts
        return texts.get(ref.digest, "") if texts is not None and ref.digest else ""

    # --- pass events (the compiler's hot path) ---------------------------------------

    def should_run(self, mod: Module, name: Any, depth: int, parent: OpenPass | None) -> bool:
        """Under lower-trace bisect: whether this pass runs; a skipped one is recorded as such."""
        gate = self.run.gate
        if gate is None:
            return True
        self._open_kernel(mod)
        name = str(name)
        runs = gate.should_run(self.kernel_name, name, depth, self.kernel_id)
        self._ordinal = gate.last
        if not runs:
            origin = self.ir.pass_origin(name, depth, parent.phase if parent else "")
            identity = self.ir.identity(mod)
            skipped = OpenPass(
                seq=self._next_seq(), name=origin.better_name or name, depth=depth, parent=parent.seq if parent else None, phase=origin.phase,
                caller=origin.caller, before=self.snapshots.of(mod, identity), identity=identity, started=0.0, ordinal=gate.last,
            )
            self._record(skipped, skipped.before, status=PassStatus.SKIPPED)
        return runs

    def pass_started(self, mod: Module, name: Any, depth: int, parent: OpenPass | None) -> OpenPass:
        entered = time.perf_counter()
        self._open_kernel(mod)
        name = str(name)
        phase, caller, better_name, call = self.ir.pass_origin(name, depth, parent.phase if parent else "")
        identity = self.ir.identity(mod)
        open_pass = OpenPass(
            seq=self._next_seq(),
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

    # --- codegen -------------------------------------------------------------------

    def codegen(self, function: str, mod: Module, target: Any, call: Callable[[], Any], role: str | None = None) -> Any:
        """Run one codegen call, recording the TIR it got and the source it produced.

        With edits on, the source to compile goes through the three-way decision
        (edits/working_copies.py): for CUDA/HIP inside TileLang's post-processing callback,
        which runs before any compiler sees the code; for C, by replacing the source module.
        """
        opened = self.faults.call(self._codegen_start, function, mod, target)
        if opened is None:  # a tracer fault: the compile runs untraced
            return call()
        tir, seq, guessed_role, language, target_text = opened
        role = role or guessed_role
        if target_text and (role == "device" or not self.target):
            self.target = target_text  # the device's target; a host-only build's own
        active = ActiveCodegen(self, role, language, seq=seq)
        token = current_codegen.set(active)
        started = time.perf_counter()
        try:
            result = call()
        except Exception as exc:
            ms = (time.perf_counter() - started) * 1000.0
            step = dict(seq=seq, role=role, function=function, target=target_text, language=language, ms=ms)
            failure = error_info(exc)  # now: `exc` is unbound once the except block ends
            self.worker.submit(lambda: self._write_codegen(step, tir, "", active.edit, failure))
            raise
        finally:
            current_codegen.reset(token)
        ms = (time.perf_counter() - started) * 1000.0
        step = dict(seq=seq, role=role, function=function, target=target_text, language=language, ms=ms)
        with self.faults:
            mapping = (function, mod, target, self.ir.codegen_configs())  # the line map's, made on the worker
            source = self.ir.module_source(result)
            if active.edit is None and language == "c" and self.edits_enabled and self.run.edits is not None and source:
                text = self.edit_source(active, source)
                if text != source:
                    result = self.ir.source_module(text, language)
            if active.edit is not None:
                source = active.edit[0].compile_text
            self.worker.submit(lambda: self._write_codegen(step, tir, source, active.edit, None, mapping))
        return result

    def _codegen_start(self, function: str, mod: Module, target: Any) -> tuple[SnapshotRef, int, str, str, str]:
        """The codegen's TIR snapshot, its seq, and (role, language, target) as the adapter reads them."""
        self._open_kernel(mod)
        tir = self.snapshots.of(mod)
        seq = self._next_seq()
        role, language, target_text = self.ir.codegen_info(function, target)
        return tir, seq, role, language, target_text

    def edit_source(self, active: ActiveCodegen, generated: str) -> str:
        """The source to compile instead of `generated`: the user's edit when PATCHED."""
        edits = self.run.edits
        if edits is None or not self.kernel_name or not self.edits_enabled:
            return generated

        def decide() -> EditOutcome:
            return edits.resolve(
                self.kernel_name, self.signature, active.role, active.language, generated, tir=self._initial_tir(), config=self.variant_config,
            )

        def settle() -> EditOutcome | None:
            try:
                outcome = decide()
                alias = self.run.edit_alias
                if alias is not None:  # enable(codegen_output=PATH): PATH may be this copy too
                    outcome = alias.sync(active.role, outcome, decide)
                    if alias.note:
                        self.run.note(alias.note, once="codegen-output")
            except OSError as exc:  # the working copies' disk: edits are off, not a tracer fault
                self.run.edits_fault(exc)
                return None
            return outcome

        outcome = self.faults.call(settle)
        if outcome is None:
            return generated
        active.edit = (outcome, generated)
        self._edits.append(outcome)
        self.run.edit_resolved(self.kernel_name, outcome)
        if outcome.uses_edit:
            return line_directive(outcome.compile_text, outcome.path, active.language)
        return outcome.compile_text

    def _write_codegen(
        self, step: dict[str, Any], tir: SnapshotRef, source: str, edit: tuple[EditOutcome, str] | None, error: ErrorInfo | None,
        mapping: tuple[str, Module, Any, dict[str, Any]] | None = None,
    ) -> None:  # fmt: skip
        extra: dict[str, Any] = {}
        store_text = self.snapshots.store_text
        if edit is not None:
            outcome, generated = edit
            extra = dict(edit_status=outcome.status, edit_path=outcome.path, edit_backup=outcome.backup)
            if generated != outcome.compile_text:
                extra["generated"] = store_text(generated)
        if mapping is not None and source:
            extra["line_map"] = self._line_map(mapping, source, tir)
        record = CodegenRecord(
            kernel=self.kernel_id,
            tir=tir.digest,
            source=store_text(source) if source else "",
            error=error,
            **{**step, "ms": round(step["ms"], 3)},
            **extra,
        )
        self.codegen_steps.append(record)
        self.run.append_record("codegen", record)

    def _line_map(self, mapping: tuple[str, Module, Any, dict[str, Any]], source: str, tir: SnapshotRef) -> str:
        """The stored digest of which TIR line each source line comes from ("" when none can be made)."""
        texts = self.snapshots.texts
        tir_text = texts.get(tir.digest) if texts is not None else None
        if not tir_text:
            return ""
        function, mod, target, configs = mapping
        # A fault: no line map, the source is shown without origins.
        lines = self.faults.call(self.ir.codegen_line_map, function, mod, target, configs, source, tir_text)
        return self.snapshots.store_text(lines) if lines else ""

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
            for outcome in self._edits:
                if outcome.uses_edit:
                    self.run.note(
                        f"{self.kernel_name}: the compile failed while using your edit of {outcome.path} "
                        "(the compiler's errors name that file and line); the edit is kept: fix it and rerun, "
                        f"or `lower-trace edits --reset {os.path.basename(outcome.path)}` to go back to the generated source"
                    )
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
        """Keep the failing pass's input (TVM JSON) and write its reproducer: the failing pass run
        alone on that input, or, when Python cannot build it (it exists only inside a C++
        Sequential, or its arguments could not be written down), the innermost enclosing pass that
        Python can build, on that pass's input. Returns the reproducer's folder ("" when none
        could be written). Never raises."""
        if not self.run.config.writes_trace:
            return ""  # nowhere to write one (terminal mode without a folder): spend nothing on it
        return self.faults.call(self._write_reproducer, ordered, failure) or ""

    def _write_reproducer(self, ordered: list[OpenPass], failure: ErrorInfo) -> str:
        failing = ordered[-1]
        problem = self.ir.json_problem()
        if problem:
            self.run.note(f"{problem}: failed passes get no reproducer in this run", once="json")
            return ""
        by_seq = {p.seq: p for p in ordered}
        chain = [failing]  # the failing pass and the passes it is nested in, innermost first
        while chain[-1].parent in by_seq and len(chain) <= len(ordered):
            chain.append(by_seq[chain[-1].parent])  # type: ignore[index]
        builds = [(p, self.ir.pass_build(p.name, p.call, by_seq[p.parent].name if p.parent in by_seq else "")) for p in chain]  # type: ignore[index]
        runs, build = next(((p, b) for p, b in builds if isinstance(b, PassBuild)), builds[0])
        why = ""
        if not isinstance(build, PassBuild):
            why = build  # nothing can be built: the script looks the failing pass up by name, and says why
            build = PassBuild(failing.name, f"find_pass({failing.name!r})")
        elif runs is not failing:
            why = f"{builds[0][1]}, so this runs the pass it is nested in, {runs.name}."
        self._keep_json(failing)
        text = self._keep_json(runs)
        spec = ReproSpec(failing.name, (build,), self.kernel_name, dict(self.context), dict(self.run.info.versions), failure, why)
        return self.run.write_reproducer(self.kernel_id, failing.seq, failing.name, spec, text)

    def _keep_json(self, open_pass: OpenPass) -> str:
        """The TVM JSON of a pass's input, stored in the trace (its `input`)."""
        text = self.ir.module_json(open_pass.identity)
        open_pass.input = open_pass.input or digest_of(text)
        self.run.store_ir(open_pass.input, text)
        return text

    def tracer_fault(self, exc: BaseException) -> None:
        self.run.tracer_fault(exc)
