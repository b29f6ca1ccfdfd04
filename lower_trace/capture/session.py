"""One compile of one kernel = one :class:`CompileSession`.

The hot path (``pass_started`` / ``pass_finished``) only takes snapshots: an
unchanged module is detected by identity and never printed twice, nothing is
diffed and nothing is rendered. Records are appended to the run's trace as they
happen; everything the session holds is released in ``finish``.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Any, Protocol

from ..model import CodegenRecord, ErrorInfo, KernelStatus, KernelTrace, PassRecord, PassStatus
from ..store import digest_of

_RECENT = 8  # modules remembered for identity checks; covers nested passes and host/device splits


class IRAdapter(Protocol):
    """What capture needs from a compiler integration (which owns every tvm import).

    ``identity(mod)`` is a cheap handle on the module's *content* at this moment
    (a module object can be mutated in place by a pass, so the object itself is
    no such handle); ``same`` compares two by identity, ``equivalent`` structurally.
    """

    def print_ir(self, mod: Any) -> str: ...
    def identity(self, mod: Any) -> Any: ...
    def same(self, a: Any, b: Any) -> bool: ...
    def equivalent(self, a: Any, b: Any) -> bool: ...
    def kernel_name(self, mod: Any) -> str: ...
    def compile_context(self) -> dict[str, Any]: ...
    def pass_origin(self, name: str, depth: int, parent_phase: str) -> tuple[str, str, str]: ...
    def module_source(self, runtime_mod: Any) -> str: ...
    def codegen_info(self, function: str, target: Any) -> tuple[str, str, str]: ...


@dataclass
class OpenPass:
    seq: int
    name: str
    depth: int
    parent: int | None
    phase: str
    caller: str
    before: str
    identity: Any
    started: float


def error_info(error: BaseException, with_traceback: bool = True) -> ErrorInfo:
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__)) if with_traceback else ""
    return ErrorInfo(type=type(error).__name__, message=str(error), traceback=text)


class CompileSession:
    def __init__(self, run: Any, ir: IRAdapter, entry: str = "") -> None:
        self.run = run
        self.ir = ir
        self.entry = entry
        self.kernel_id = ""
        self.kernel_name = ""
        self.target = ""
        self.started = time.time()
        self._t0 = time.perf_counter()
        self._seq = 0
        self._recent: list[tuple[Any, str]] = []
        # Texts are kept in memory only when the terminal renders them at the end.
        self.texts: dict[str, str] | None = {} if run.config.prints_terminal else None
        self.passes: list[PassRecord] = []
        self.codegen_steps: list[CodegenRecord] = []
        self._interrupted: list[OpenPass] = []
        self._finished = False

    # --- snapshots -----------------------------------------------------------

    def snapshot(self, mod: Any, identity: Any = None) -> str:
        """Digest of mod's text; content seen recently (by identity) is not printed again."""
        if identity is None:
            identity = self.ir.identity(mod)
        for seen, digest in self._recent:
            if self.ir.same(seen, identity):
                return digest
        digest = self._store_text(self.ir.print_ir(mod))
        self._remember(identity, digest)
        return digest

    def _remember(self, identity: Any, digest: str) -> None:
        self._recent.insert(0, (identity, digest))
        del self._recent[_RECENT:]

    def _store_text(self, text: str) -> str:
        digest = digest_of(text)
        if self.texts is not None:
            self.texts[digest] = text
        self.run.store_snapshot(digest, text)
        return digest

    def _next_seq(self) -> int:
        seq = self._seq
        self._seq += 1
        return seq

    def _open_kernel(self, mod: Any) -> None:
        if self.kernel_id:
            return
        context = self.ir.compile_context()
        self.kernel_name = self.ir.kernel_name(mod)
        self.target = str(context.get("target", ""))
        self.kernel_id = self.run.register_kernel(
            name=self.kernel_name,
            started=self.started,
            target=self.target,
            entry=self.entry,
            pass_configs=context.get("pass_configs", {}),
        )

    # --- pass events (hot path) ------------------------------------------------

    def pass_started(self, mod: Any, name: Any, depth: int, parent: OpenPass | None) -> OpenPass:
        self._open_kernel(mod)
        name = str(name)
        phase, caller, better_name = self.ir.pass_origin(name, depth, parent.phase if parent else "")
        identity = self.ir.identity(mod)
        before = self.snapshot(mod, identity)
        return OpenPass(
            seq=self._next_seq(),
            name=better_name or name,
            depth=depth,
            parent=parent.seq if parent else None,
            phase=phase,
            caller=caller,
            before=before,
            identity=identity,
            started=time.perf_counter(),
        )

    def pass_finished(self, open_pass: OpenPass, mod: Any) -> None:
        elapsed = (time.perf_counter() - open_pass.started) * 1000.0
        identity = self.ir.identity(mod)
        if self.ir.same(open_pass.identity, identity):
            after = open_pass.before
        elif self.ir.equivalent(open_pass.identity, identity):
            # Rebuilt but structurally equal content prints the same: skip the printer.
            after = open_pass.before
            self._remember(identity, after)
        else:
            after = self.snapshot(mod, identity)
        status = PassStatus.CHANGED if after != open_pass.before else PassStatus.UNCHANGED
        self._record(open_pass, status, after=after, ms=elapsed)

    def _record(self, open_pass: OpenPass, status: PassStatus, after: str = "", ms: float = 0.0, error: ErrorInfo | None = None) -> None:
        record = PassRecord(
            kernel=self.kernel_id,
            seq=open_pass.seq,
            name=open_pass.name,
            status=status,
            depth=open_pass.depth,
            parent=open_pass.parent,
            phase=open_pass.phase,
            caller=open_pass.caller,
            before=open_pass.before,
            after=after,
            ms=round(ms, 3),
            error=error,
        )
        self.passes.append(record)
        self.run.append_record("pass", record)

    def passes_interrupted(self, open_passes: list[OpenPass]) -> None:
        """Passes that never returned; the error arrives later, in finish()."""
        self._interrupted.extend(open_passes)

    # --- codegen -------------------------------------------------------------

    def codegen(self, function: str, mod: Any, target: Any, call: Any) -> Any:
        """Run one codegen call, recording the TIR it got and the source it produced."""
        try:
            self._open_kernel(mod)
            tir = self.snapshot(mod)
            seq = self._next_seq()
            role, language, target_text = self.ir.codegen_info(function, target)
        except Exception as exc:
            self.tracer_fault(exc)
            return call()
        started = time.perf_counter()
        try:
            result = call()
        except Exception as exc:
            ms = (time.perf_counter() - started) * 1000.0
            self._record_codegen(seq, role, function, target_text, language, tir, "", ms, error_info(exc))
            raise
        ms = (time.perf_counter() - started) * 1000.0
        try:
            source = self.ir.module_source(result)
            source_digest = self._store_text(source) if source else ""
            self._record_codegen(seq, role, function, target_text, language, tir, source_digest, ms, None)
        except Exception as exc:
            self.tracer_fault(exc)
        return result

    def _record_codegen(self, seq, role, function, target, language, tir, source, ms, error) -> None:
        record = CodegenRecord(
            kernel=self.kernel_id,
            seq=seq,
            role=role,
            function=function,
            target=target,
            language=language,
            tir=tir,
            source=source,
            ms=round(ms, 3),
            error=error,
        )
        if role == "device" and target:
            self.target = target
        self.codegen_steps.append(record)
        self.run.append_record("codegen", record)

    # --- end of compile --------------------------------------------------------

    def finish(self, error: BaseException | None) -> KernelTrace | None:
        """Close the kernel: record passes that failed, hand the result to the run, free memory."""
        if self._finished:
            return None
        self._finished = True
        try:
            if not self.kernel_id:
                return None  # no pass ran (nothing to show)
            self._record_failures(error)
            kernel = KernelTrace(
                kernel_id=self.kernel_id,
                name=self.kernel_name,
                started=self.started,
                target=self.target,
                entry=self.entry,
                status=KernelStatus.FAILED if error is not None else KernelStatus.OK,
                ms=round((time.perf_counter() - self._t0) * 1000.0, 3),
                passes=tuple(sorted(self.passes, key=lambda p: p.seq)),
                codegen=tuple(self.codegen_steps),
                error=error_info(error) if error is not None else None,
            )
            self.run.kernel_finished(kernel, self.texts or {})
            return kernel
        finally:
            # Release everything: module references, texts, records.
            self._recent.clear()
            self._interrupted.clear()
            self.texts = None
            self.passes = []
            self.codegen_steps = []

    def _record_failures(self, error: BaseException | None) -> None:
        if not self._interrupted:
            return
        # Outermost first: the deepest open pass is the one that raised.
        ordered = sorted(self._interrupted, key=lambda p: (p.depth, p.seq))
        failing = ordered[-1]
        for open_pass in ordered:
            if open_pass is failing and error is not None:
                self._record(open_pass, PassStatus.FAILED, error=error_info(error))
            else:
                note = ErrorInfo("Interrupted", f"did not finish: nested pass {failing.name} failed") if error else None
                self._record(open_pass, PassStatus.INCOMPLETE, error=note)

    def tracer_fault(self, exc: BaseException) -> None:
        self.run.tracer_fault(exc)
