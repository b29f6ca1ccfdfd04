"""The two small protocols that connect capture to the rest.

``TraceSink`` is what compile sessions and integrations report to (the run);
``KernelListener`` is what the run hands each finished kernel to (the terminal
view, the HTML report: wired by api.py, so capture never imports render).
What the run itself reaches outside capture (edits/, rerun/) is in ports.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from lower_trace.capture.gate import PassGate
from lower_trace.capture.ports import CodegenAlias, WorkingCopies
from lower_trace.capture.worker import Worker
from lower_trace.config import Config
from lower_trace.model import EditOutcome, KernelRebuild, KernelTrace, LaunchRecord, ReproSpec, RunInfo

TextOf = Callable[[str], str]


class KernelListener(Protocol):
    # True: called on the thread that finished the kernel (the terminal view, in order with
    # the program's own output); False: called on the run's worker thread.
    inline: bool

    def kernel_finished(self, kernel: KernelTrace, text_of: TextOf) -> None: ...
    def note(self, text: str) -> None: ...
    def close(self) -> str | None: ...  # what the closing line names (the report), or None


class TraceSink(Protocol):
    config: Config
    info: RunInfo
    worker: Worker
    edits: WorkingCopies | None
    edit_alias: CodegenAlias | None  # enable(codegen_output=PATH)
    gate: PassGate | None  # which passes run, under lower-trace bisect

    def register_kernel(
        self, name: str, started: float, target: str, entry: str, pass_configs: dict[str, str], context: dict[str, Any] | None = None, now: bool = False,
        stack: tuple[tuple[str, int, str], ...] = (),
    ) -> str: ...  # fmt: skip
    def record_launch(self, record: LaunchRecord) -> None: ...
    def record_rebuild(self, record: KernelRebuild) -> None: ...
    def launch_folder(self, kernel_id: str, n: int) -> str: ...  # where a launch's tensors go; "" when the run writes no trace
    def read_source(self, path: str) -> str | None: ...  # a file of the user's program (read once per run)
    def store_snapshot(self, digest: str, text: str) -> None: ...
    def store_ir(self, digest: str, text: str, now: bool = False) -> None: ...
    def append_record(self, kind: str, record: Any) -> None: ...
    def append_record_now(self, kind: str, record: Any) -> None: ...
    def write_reproducer(self, kernel_id: str, seq: int, name: str, spec: ReproSpec, ir_json: str) -> str: ...
    def kernel_finished(self, kernel: KernelTrace, texts: dict[str, str]) -> None: ...
    def settle(self) -> None: ...  # everything handed over so far is on disk when it returns
    def note(self, text: str, once: str | None = None) -> None: ...
    def tracer_fault(self, exc: BaseException) -> None: ...
    def edits_fault(self, exc: OSError) -> None: ...
    def edit_resolved(self, kernel: str, outcome: EditOutcome) -> None: ...


GetRun = Callable[[], "TraceSink | None"]
