"""One codegen call of a compile, traced: the TIR it got, the source it produced (or its error),
and which TIR line each source line comes from.

The call runs with :data:`current_codegen` set, so TileLang's source callbacks inside it know
whose source they see (integrations/adapters/source_hooks.py hands it to the edit decision,
source_edits.py; integrations/nvcc/tilelang_device.py records the device stage). The compiler is
called outside the fault guard: a codegen failure reaches the user as it would untraced. The
record is written on the worker, with the line map, once the TIR's snapshot is printed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from lower_trace.capture.failures import error_info
from lower_trace.capture.faults import Guard
from lower_trace.capture.ir_adapter import IRAdapter, Module
from lower_trace.capture.sink import TraceSink
from lower_trace.capture.snapshots import Snapshots
from lower_trace.capture.worker import SnapshotRef, Worker
from lower_trace.device_model import DeviceRecord
from lower_trace.model import CodegenRecord, EditOutcome, ErrorInfo

# What the line map is made from on the worker: (function, module, target, codegen configs).
Mapping = tuple[str, Module, Any, dict[str, Any]]


class CodegenSession(Protocol):
    """What a codegen call, and the hooks that run inside it, use of their compile's session
    (session.CompileSession; a protocol, so that this module does not import it)."""

    run: TraceSink
    ir: IRAdapter
    worker: Worker
    faults: Guard
    snapshots: Snapshots
    kernel_id: str
    target: str
    edits_enabled: bool
    codegen_steps: list[CodegenRecord]
    device_steps: list[DeviceRecord]

    def open_kernel(self, mod: Module) -> None: ...
    def next_seq(self) -> int: ...
    def edit_source(self, active: ActiveCodegen, generated: str) -> str: ...
    def tracer_fault(self, exc: BaseException) -> None: ...


@dataclass
class ActiveCodegen:
    """The codegen call in progress on this thread, for TileLang's source callbacks."""

    session: CodegenSession
    role: str
    language: str
    edit: tuple[EditOutcome, str] | None = None  # (outcome, the fresh codegen)
    seq: int = 0  # the codegen record's: a device compile inside this call belongs to it


# Set while a codegen call runs, so a post-processing callback knows whose source it sees.
current_codegen: ContextVar[ActiveCodegen | None] = ContextVar("lower_trace_codegen", default=None)


def traced_codegen(session: CodegenSession, function: str, mod: Module, target: Any, call: Callable[[], Any], role: str | None = None) -> Any:
    """Run one codegen call, recording the TIR it got and the source it produced.

    With edits on, the source to compile goes through the three-way decision
    (edits/working_copies.py): for CUDA/HIP inside TileLang's post-processing callback,
    which runs before any compiler sees the code; for C, by replacing the source module.
    """
    opened = session.faults.call(_codegen_start, session, function, mod, target)
    if opened is None:  # a tracer fault: the compile runs untraced
        return call()
    tir, seq, guessed_role, language, target_text = opened
    role = role or guessed_role
    if target_text and (role == "device" or not session.target):
        session.target = target_text  # the device's target; a host-only build's own
    active = ActiveCodegen(session, role, language, seq=seq)
    token = current_codegen.set(active)
    started = time.perf_counter()
    try:
        result = call()
    except Exception as exc:
        ms = (time.perf_counter() - started) * 1000.0
        step = dict(seq=seq, role=role, function=function, target=target_text, language=language, ms=ms)
        failure = error_info(exc)  # now: `exc` is unbound once the except block ends
        session.worker.submit(lambda: _write_codegen(session, step, tir, "", active.edit, failure))
        raise
    finally:
        current_codegen.reset(token)
    ms = (time.perf_counter() - started) * 1000.0
    step = dict(seq=seq, role=role, function=function, target=target_text, language=language, ms=ms)
    with session.faults:
        mapping = (function, mod, target, session.ir.codegen_configs())  # the line map's, made on the worker
        source = session.ir.module_source(result)
        if active.edit is None and language == "c" and session.edits_enabled and session.run.edits is not None and source:
            text = session.edit_source(active, source)
            if text != source:
                result = session.ir.source_module(text, language)
        if active.edit is not None:
            source = active.edit[0].compile_text
        session.worker.submit(lambda: _write_codegen(session, step, tir, source, active.edit, None, mapping))
    return result


def _codegen_start(session: CodegenSession, function: str, mod: Module, target: Any) -> tuple[SnapshotRef, int, str, str, str]:
    """The codegen's TIR snapshot, its seq, and (role, language, target) as the adapter reads them."""
    session.open_kernel(mod)
    tir = session.snapshots.of(mod)
    seq = session.next_seq()
    role, language, target_text = session.ir.codegen_info(function, target)
    return tir, seq, role, language, target_text


def _write_codegen(
    session: CodegenSession, step: dict[str, Any], tir: SnapshotRef, source: str, edit: tuple[EditOutcome, str] | None, error: ErrorInfo | None,
    mapping: Mapping | None = None,
) -> None:  # fmt: skip
    """On the worker: the codegen record, into the trace and the kernel's list."""
    extra: dict[str, Any] = {}
    store_text = session.snapshots.store_text
    if edit is not None:
        outcome, generated = edit
        extra = dict(edit_status=outcome.status, edit_path=outcome.path, edit_backup=outcome.backup)
        if generated != outcome.compile_text:
            extra["generated"] = store_text(generated)
    if mapping is not None and source:
        extra["line_map"] = _line_map(session, mapping, source, tir)
    record = CodegenRecord(
        kernel=session.kernel_id,
        tir=tir.digest,
        source=store_text(source) if source else "",
        error=error,
        **{**step, "ms": round(step["ms"], 3)},
        **extra,
    )
    session.codegen_steps.append(record)
    session.run.append_record("codegen", record)


def _line_map(session: CodegenSession, mapping: Mapping, source: str, tir: SnapshotRef) -> str:
    """The stored digest of which TIR line each source line comes from ("" when none can be made)."""
    texts = session.snapshots.texts
    tir_text = texts.get(tir.digest) if texts is not None else None
    if not tir_text:
        return ""
    function, mod, target, configs = mapping
    # A fault: no line map, the source is shown without origins.
    lines = session.faults.call(session.ir.codegen_line_map, function, mod, target, configs, source, tir_text)
    return session.snapshots.store_text(lines) if lines else ""
