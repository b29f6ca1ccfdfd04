"""The pass bookkeeping of one compile: a pass while it runs, and its record once it ended."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lower_trace.capture.ir_adapter import Identity, IRAdapter
from lower_trace.capture.sink import TraceSink
from lower_trace.capture.worker import SnapshotRef
from lower_trace.model import ErrorInfo, FragmentLayout, PassCall, PassRecord, PassStatus


@dataclass
class OpenPass:
    seq: int
    name: str
    depth: int
    parent: int | None
    phase: str
    caller: str
    before: SnapshotRef
    identity: Identity
    started: float
    tracer_ms: float = 0.0  # the session's tracer time when the pass started (see pass_finished)
    input: str = ""  # digest of the input's TVM JSON, when kept (replay)
    ordinal: int = 0  # its number among the passes lower-trace bisect counts
    call: PassCall | None = None  # the arguments Python built it with, when its factory takes some
    announced: bool = False  # a pass_open record says it is running (see CompileSession._announce)


class PassLog:
    """Turns finished passes into records (on the worker: their snapshots are printed by then)
    and keeps them for the kernel's hand-over; reads fragment layouts where a pass set them."""

    def __init__(self, run: TraceSink, ir: IRAdapter) -> None:
        self.run = run
        self.ir = ir
        self.kernel_id = ""
        self.records: list[PassRecord] = []
        self._layouts_ok = True  # until reading layouts fails once
        self._last_layouts: set[FragmentLayout] = set()  # the layouts the last pass that set any set

    def record(self, open_pass: OpenPass, ms: float, status: PassStatus, error: ErrorInfo | None = None, after: str = "", repro: str = "") -> PassRecord:
        return PassRecord(
            kernel=self.kernel_id,
            seq=open_pass.seq,
            name=open_pass.name,
            status=status,
            depth=open_pass.depth,
            parent=open_pass.parent,
            phase=open_pass.phase,
            caller=open_pass.caller,
            before=open_pass.before.digest,
            after=after,
            ms=round(ms, 3),
            error=error,
            input=open_pass.input,
            repro=repro,
            ordinal=open_pass.ordinal,
            call=open_pass.call,
        )

    def write(
        self, open_pass: OpenPass, after: SnapshotRef | None, ms: float, status: PassStatus | None, error: ErrorInfo | None,
        texts: dict[str, str] | None, repro: str = "", identity: Identity | None = None,
    ) -> None:  # fmt: skip
        """On the worker: the pass's record, into the trace and the kernel's list."""
        after_digest = after.digest if after is not None else ""
        if status is None:  # decided by text: two different modules can print the same
            status = PassStatus.CHANGED if after_digest != open_pass.before.digest else PassStatus.UNCHANGED
        record = self.record(open_pass, ms, status, error, after_digest, repro)
        if identity is not None and status is PassStatus.CHANGED and self._layouts_ok:
            found = self._layouts(texts or {}, open_pass.before.digest, after_digest, identity)
            if found:
                record = dataclasses.replace(record, layouts=found)
        self.records.append(record)
        self.run.append_record("pass", record)

    def _layouts(self, texts: dict[str, str], before: str, after: str, identity: Identity) -> tuple[FragmentLayout, ...]:
        """Layouts are read off the (immutable) module on the worker, not on the compile's path."""
        try:
            found = self.ir.read_layouts(texts.get(before, ""), texts.get(after, ""), identity)
            # The same layouts annotated again -- tl.LowerTileOp rewrites the map for the lowered
            # buffers (scope local.fragment -> local) -- are nothing new to show.
            seen = {dataclasses.replace(layout, scope="") for layout in found}
            if not found or seen == self._last_layouts:
                return ()
            self._last_layouts = seen
            return found
        except Exception as exc:  # a TileLang whose layout API differs: no pictures, the trace goes on
            self._layouts_ok = False
            self.run.note(f"fragment layouts could not be read ({type(exc).__name__}: {exc}); the report shows no layout pictures", once="layouts")
            return ()

    def hand_over(self) -> tuple[PassRecord, ...]:
        records, self.records = self.records, []
        return tuple(sorted(records, key=lambda p: p.seq))
