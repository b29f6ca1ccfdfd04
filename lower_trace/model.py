"""The data model: what a trace is made of.

Frozen dataclasses that the capture layer produces, the store writes and reads,
and every renderer consumes. Snapshots (IR text, generated source) are not held
here: records name them by content digest and a :class:`Trace` resolves them. Their JSON form
(the trace's files) is model_json.py.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lower_trace.device_model import DeviceRecord
from lower_trace.text_safety import short_path


class PassStatus(str, enum.Enum):
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    FAILED = "failed"
    # Started but never finished: the process died, or an enclosing pass failed.
    INCOMPLETE = "incomplete"
    SKIPPED = "skipped"  # not run: lower-trace bisect was testing a pipeline without it


class KernelStatus(str, enum.Enum):
    RUNNING = "running"  # no end record: the process stopped mid-compile
    OK = "ok"
    FAILED = "failed"


class EditStatus(str, enum.Enum):
    """What the three-way decision (edits/decision.py) made of a generated source's working copy."""

    SYNCED = "SYNCED"
    PATCHED = "PATCHED"
    REGENERATED = "REGENERATED"
    CONFLICT = "CONFLICT"
class KernelState(str, enum.Enum):
    """What became of a compile, in the words every view uses: the terminal, the JSON, and the
    report's page, which receives these labels (render/report/page.py's page_rules)."""

    OK = "ok"
    FAILED = "failed"  # a pass raised
    COMPILE_FAILED = "compile failed"  # it failed outside every pass: codegen, gcc, nvcc ...
    DID_NOT_FINISH = "did not finish"  # no end record: the process was killed or crashed mid-compile

    @classmethod
    def of(cls, kernel: KernelTrace) -> KernelState:
        if kernel.status is KernelStatus.RUNNING:
            return cls.DID_NOT_FINISH
        if kernel.status is KernelStatus.FAILED:
            return cls.FAILED if kernel.failed_count else cls.COMPILE_FAILED
        return cls.OK

    @property
    def failed(self) -> bool:
        """A compile that failed, in a pass or outside them (what `list` counts as failed)."""
        return self in (KernelState.FAILED, KernelState.COMPILE_FAILED)


@dataclass(frozen=True)
class ErrorInfo:
    type: str
    message: str
    traceback: str = ""


@dataclass(frozen=True)
class LaunchValue:
    """One argument of a kernel launch, or a tensor it returned: a tensor described (never its data),
    or a scalar's value."""

    name: str  # the kernel parameter's name; "return" (or "return.1", ...) for a tensor the call returned
    kind: str  # "tensor" or "scalar"
    shape: tuple[int, ...] = ()
    dtype: str = ""
    strides: tuple[int, ...] = ()
    device: str = ""
    digest: str = ""  # blake2b (16 bytes, hex) of the tensor's bytes in row-major order; "" when not taken
    value: Any = None  # a scalar's value (int, float, bool), or its repr
    note: str = ""  # what was not recorded, and why
    data: str = ""  # data mode: the tensor's .npy, relative to the run's folder; "" when not kept (note says why)


@dataclass(frozen=True)
class LaunchRecord:
    """One call of a compiled kernel while traced (the first ones of each kernel: Config.launch_limit)."""

    kernel: str  # the kernel id of the compile that made it
    n: int  # 1 for the kernel's first launch
    site: str  # file:line of the call
    ms: float
    args: tuple[LaunchValue, ...] = ()  # before the call, in the kernel's parameter order
    after: tuple[LaunchValue, ...] = ()  # the tensor arguments after the call (written in place), then returned tensors
    error: ErrorInfo | None = None  # the call raised (re-raised to the caller)


@dataclass(frozen=True)
class KernelRebuild:
    """How a traced kernel object can be built again outside the program (lower-trace repro --launch):
    TileLang's compile arguments, the @tilelang.jit factory call that made it, the PrimFunc handed to lowering."""

    kernel: str  # the kernel id
    compile: dict[str, Any] = field(default_factory=dict)  # out_idx, target, target_host, execution_backend, pass_configs, compile_flags
    factory: dict[str, Any] = field(default_factory=dict)  # file, module, name, args, kwargs (Python source text each); {} when none
    factory_note: str = ""  # why there is no factory ("" when there is one)
    prim_func: str = ""  # digest of the PrimFunc's TVM JSON (data mode); "" when not kept
    versions: dict[str, str] = field(default_factory=dict)  # tilelang, torch


@dataclass(frozen=True)
class RunInfo:
    """One process run of a traced program."""

    run_id: str
    started: float
    script: str
    title: str = ""  # what the run is called where it is shown ("": its script); pytest's node id of a test
    argv: tuple[str, ...] = ()
    pid: int = 0
    mode: str = "html"
    python: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    # Informational notes shown to the user (e.g. "kernel cache bypassed").
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class FragmentLayout:
    """How a fragment buffer is spread over threads, as TileLang's layout inference decided it:
    element (vars) -> thread ``thread_min + thread``, local index ``index``; expressions as TVM
    prints them, in the variables ``vars`` (``_rep`` first when ``replicate`` > 1: each element
    held by that many threads). The report evaluates them into a grid."""

    buffer: str
    shape: tuple[int, ...]
    vars: tuple[str, ...]
    thread: str
    index: tuple[str, ...]
    replicate: int = 1
    thread_min: int = 0
    threads: int = 0
    function: str = ""
    scope: str = ""
    dtype: str = ""


CRASHED = "the process ended while this pass ran (a hard crash: abort, segfault, or kill)"
# Known from a pass_open record only (no replay): which of its nested passes ran then is not recorded.
CRASHED_NESTED = "the process ended while this pass or a pass nested in it ran (a hard crash: abort, segfault, or kill)"


@dataclass(frozen=True)
class PassCall:
    """How Python built a pass that takes arguments, read off the line that called it
    (``tilelang.transform.ThreadSync("shared")(mod)``): the factory and each argument as Python
    source that makes its value again (a literal, the target, a module-level function)."""

    factory: str  # module.function, e.g. tilelang.transform.ThreadSync
    args: tuple[str, ...] = ()
    kwargs: tuple[tuple[str, str], ...] = ()
    imports: tuple[str, ...] = ()  # the modules factory and the sources name
    problem: str = ""  # why an argument cannot be written down ("" when every one can)

    @property
    def expression(self) -> str:
        """Python that builds the pass: tilelang.transform.ThreadSync('shared')."""
        return f"{self.factory}({', '.join([*self.args, *(f'{key}={value}' for key, value in self.kwargs)])})"


@dataclass(frozen=True)
class PassRecord:
    """One compiler pass as it ran on one kernel."""

    kernel: str
    seq: int
    name: str
    status: PassStatus
    depth: int = 0
    parent: int | None = None
    phase: str = ""
    # The Python function that ran the pass, e.g. "CUDAPassPipelineBody".
    caller: str = ""
    before: str = ""  # snapshot digest of the IR the pass received
    after: str = ""  # snapshot digest of the IR it returned ("" when it failed)
    ms: float = 0.0
    error: ErrorInfo | None = None
    # Digest of the IR it received as TVM's JSON (ir.jsonl): kept for a failed pass, for every
    # pass with TL_LOWER_TRACE_REPLAY=1; what a reproducer and `lower-trace replay` load.
    input: str = ""
    repro: str = ""  # the folder of the reproducer written for this failed pass
    ordinal: int = 0  # under lower-trace bisect: its place among the passes counted (1-based)
    # Fragment layouts in the IR it returned, read only when it changed the layout annotations.
    layouts: tuple[FragmentLayout, ...] = ()
    # The arguments Python built it with, when its factory takes some (replay and repro rebuild it so).
    call: PassCall | None = None

    @property
    def crashed(self) -> bool:
        """The pass that was running when the process died (known to replay-enabled traces)."""
        return self.error is not None and self.error.type == "Crashed" and self.error.message == CRASHED


@dataclass(frozen=True)
class CodegenRecord:
    """The final TIR -> source step, device and host apart."""

    kernel: str
    seq: int
    role: str  # "device" or "host"
    function: str  # the codegen entry point, e.g. target.build.tilelang_cuda
    target: str
    language: str  # cuda, hip, c, llvm, ...
    tir: str  # digest of the TIR module handed to codegen
    source: str = ""  # digest of the source that was compiled ("" if none could be read)
    ms: float = 0.0
    error: ErrorInfo | None = None
    # Edit and recompile (see edits/): what happened to the working copy.
    edit_status: EditStatus | None = None  # None when not tracked (the trace holds its value, or nothing)
    edit_path: str = ""  # the working copy
    edit_backup: str = ""  # where a conflicting edit was saved
    generated: str = ""  # digest of the fresh codegen, when something else was compiled
    line_map: str = ""  # digest of {"tir_lines": [...]}: per line of source, the line of tir it came from


# --- edit and recompile: one decision, and the listing of the working copies -------------


@dataclass(frozen=True)
class EditOutcome:
    """One edit decision: what capture compiles and the user is told."""

    status: EditStatus
    path: str  # the working copy
    compile_text: str  # what the compiler gets
    backup: str = ""  # where an edit was saved aside (CONFLICT)
    backup_base: str = ""  # the baseline that edit was made against
    created: bool = False  # the working copy was written for the first time
    siblings: tuple[str, ...] = ()  # edited working copies of this kernel's other variants

    @property
    def uses_edit(self) -> bool:
        return self.status is EditStatus.PATCHED

    def message(self, kernel: str) -> str:
        where = short_path(self.path)
        if self.created:
            text = f"{kernel}: generated source saved to {where}; edit it and rerun to compile your version"
            if self.siblings:
                others = ", ".join(short_path(p) for p in self.siblings[:3])
                if len(self.siblings) > 3:
                    others += f" and {len(self.siblings) - 3} more"
                verb = "is" if len(self.siblings) == 1 else "are"
                noun = "edit" if len(self.siblings) == 1 else "edits"
                text += f" (your {noun} in {others} {verb} for other variants of {kernel}, so not used here; `lower-trace edits` says which is which)"
            return text
        if self.status is EditStatus.PATCHED:
            return f"{kernel}: PATCHED, compiling your edit of {where}"
        if self.status is EditStatus.REGENERATED:
            return f"{kernel}: REGENERATED, codegen changed; {where} now holds the new source"
        if self.status is EditStatus.CONFLICT:
            return (
                f"{kernel}: CONFLICT, codegen changed and {where} was edited; compiling the new codegen. "
                f"Your edit is saved in {short_path(self.backup)}; to re-apply it: "
                f"diff -u {short_path(self.backup_base)} {short_path(self.backup)} | patch {where}"
            )
        return f"{kernel}: SYNCED, {where}"


class CopyState(str, enum.Enum):
    """A working copy's text against its baseline, as `lower-trace edits` says it."""

    AS_GENERATED = "as generated"
    EDITED = "edited"
    MISSING = "missing"


class StaleReason(str, enum.Enum):
    """Why a working copy's variant no longer compiles as the copy stands (docs/edits.md)."""

    FAILED = "compile failed"  # the last compile that used this edit, as the file holds it now, failed
    CODE_CHANGED = "code changed"  # the kernel's code changed and this variant was not compiled since


@dataclass(frozen=True)
class WorkingCopy:
    """One working copy, as `lower-trace edits` lists it."""

    kernel: str
    signature: str
    role: str
    language: str
    file: str  # its name in edits/
    path: str
    state: CopyState
    variant: str  # what tells it apart from the kernel's other copies
    stale: StaleReason | None = None


@dataclass(frozen=True)
class KernelStart:
    """The manifest's ``kernel`` record: a compile began (written before its passes)."""

    kernel_id: str
    name: str
    started: float = 0.0
    target: str = ""
    entry: str = ""
    pass_configs: dict[str, str] = field(default_factory=dict)
    # What a pass needs to run again alone: the target as TVM's JSON, the typed pass configs.
    context: dict[str, Any] = field(default_factory=dict)
    # The user's frames that started the compile, outermost first: [file, line, function] each.
    stack: tuple[tuple[str, int, str], ...] = ()


@dataclass(frozen=True)
class KernelEnd:
    """The manifest's ``kernel_end`` record: the compile returned or raised."""

    kernel_id: str
    status: KernelStatus
    ms: float = 0.0
    target: str = ""
    error: ErrorInfo | None = None


@dataclass(frozen=True)
class Note:
    """The manifest's ``note`` record: something the user was told during the run."""

    text: str


def source_key(path: str) -> str:
    """Where a file of the user's program is stored (once per run), beside the snapshots."""
    return "source:" + path


def spans_key(digest: str) -> str:
    """Where a snapshot's source spans are stored: beside it, under its digest and ".spans"."""
    return digest + ".spans"


@dataclass(frozen=True)
class KernelTrace:
    """Everything recorded for one compile of one kernel."""

    kernel_id: str
    name: str
    started: float = 0.0
    target: str = ""
    entry: str = ""  # the compile entry point: lower, jit, ...
    pass_configs: dict[str, str] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)  # as KernelStart.context
    status: KernelStatus = KernelStatus.RUNNING
    ms: float = 0.0
    passes: tuple[PassRecord, ...] = ()
    codegen: tuple[CodegenRecord, ...] = ()
    error: ErrorInfo | None = None
    stack: tuple[tuple[str, int, str], ...] = ()  # as KernelStart.stack
    device: tuple[DeviceRecord, ...] = ()  # device compiles of its generated source, oldest first
    launches: tuple[LaunchRecord, ...] = ()  # its calls while traced, first first
    rebuild: KernelRebuild | None = None  # how its kernel object can be built again (when one was called)

    @property
    def device_stage(self) -> DeviceRecord | None:
        """The device compile to show: the newest one, as the latest `lower-trace device` left it."""
        return self.device[-1] if self.device else None

    @property
    def steps(self) -> list[PassRecord | CodegenRecord]:
        """Passes and codegen steps in execution order."""
        return sorted([*self.passes, *self.codegen], key=lambda step: step.seq)

    @property
    def working_copy(self) -> str:
        """Which variant this kernel is, as `lower-trace edits` names it: its working copy's
        file (the device one first), e.g. scaled_add-d09a05.cu; "" when it has none."""
        steps = sorted((c for c in self.codegen if c.edit_path), key=lambda c: c.role != "device")
        return os.path.basename(steps[0].edit_path) if steps else ""

    @property
    def changed_count(self) -> int:
        return sum(1 for p in self.passes if p.status is PassStatus.CHANGED)

    @property
    def failed_count(self) -> int:
        return sum(1 for p in self.passes if p.status is PassStatus.FAILED)


@dataclass(frozen=True)
class Trace:
    """A loaded trace directory: one run, its kernels, and access to snapshots."""

    path: str
    run: RunInfo
    kernels: tuple[KernelTrace, ...]
    read_snapshot: Callable[[str], str] = field(repr=False, compare=False, default=lambda digest: "")
    format: int = 1
    read_ir: Callable[[str], str] = field(repr=False, compare=False, default=lambda digest: "")

    def snapshot(self, digest: str) -> str:
        return self.read_snapshot(digest) if digest else ""

    def spans(self, digest: str) -> str:
        """The source spans stored beside a snapshot (see analysis/origins.py); "" when none were."""
        return self.read_snapshot(spans_key(digest)) if digest else ""

    def source_text(self, path: str) -> str | None:
        """A file of the user's program as it was when traced; None when the trace has none."""
        return self.read_snapshot(source_key(path)) or None

    def ir_json(self, digest: str) -> str:
        """The TVM JSON of a pass's input (PassRecord.input); "" where it was not kept."""
        return self.read_ir(digest) if digest else ""

    def kernel(self, key: str) -> KernelTrace:
        """Find a kernel by id (k1), by name, or by 1-based index; LookupError if none or ambiguous."""
        found = self.kernels_for(key)
        if len(found) > 1:
            raise LookupError(f"{len(found)} kernels are named {key!r}; pick one by id: {kernel_list(found)}")
        return found[0]

    def kernels_for(self, key: str) -> list[KernelTrace]:
        """The kernels `key` names: an id (k1), a name (every variant of that name), or a 1-based
        index; LookupError naming some of the kernels there are if none."""
        for kernel in self.kernels:
            if key == kernel.kernel_id:
                return [kernel]
        named = [k for k in self.kernels if k.name == key]
        if named:
            return named
        if key.isdigit() and 1 <= int(key) <= len(self.kernels):
            return [self.kernels[int(key) - 1]]
        raise LookupError(f"no kernel {key!r} in this trace; kernels: {kernel_list(self.kernels)}")


def kernel_list(kernels: Sequence[KernelTrace], limit: int = 8) -> str:
    """'k1 (gemm), k2 (gemm), ... and 298 more (`lower-trace list` shows them)': a line stays short."""
    if not kernels:
        return "none"
    shown = ", ".join(f"{k.kernel_id} ({k.name})" for k in kernels[:limit])
    return shown + (f", ... and {len(kernels) - limit} more (`lower-trace list` shows them)" if len(kernels) > limit else "")


# --- reproducers: what capture shares with rerun/ --------------


@dataclass(frozen=True)
class PassBuild:
    """How a script builds a pass: Python that makes it (``tilelang.transform.ThreadSync('shared')``,
    or ``find_pass('tl.X')`` to look it up by name) and the modules that Python names."""

    name: str
    expression: str
    imports: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReproSpec:
    """What a reproducer runs (rerun/repro.py writes it): `passes` in order, starting from the
    input of the first, under the kernel's target and pass configs. Usually one pass, the failed one."""

    failed: str  # the pass the reproducer is about (failed, crashed, or picked with -p)
    passes: tuple[PassBuild, ...]
    kernel: str
    context: dict[str, Any] = field(default_factory=dict)  # {"target": TVM JSON, "configs": {...}}
    versions: dict[str, str] = field(default_factory=dict)
    error: ErrorInfo | None = None  # None: the pass did not fail when traced
    why: str = ""  # why it runs more (or other) passes than the one it is about

    @property
    def first(self) -> str:
        return self.passes[0].name


# --- bisect: what its search hands to the terminal -------------------------------------


@dataclass
class BisectRun:
    """One run of the check: under which limit, what it said, and the trace it left."""

    limit: int | None
    verdict: str  # good, bad, or broken (the compile failed: a required pass was skipped)
    exit_code: int
    trace: Trace | None
    counted: int  # passes the gate numbered in this run
    seconds: float


@dataclass
class BisectAnswer:
    """What bisect found (rerun/bisection.py searches, render/bisect_view.py says it)."""

    kind: str  # found, always-good, always-bad, broken (the check cannot run even with every pass)
    culprit: PassRecord | None = None
    kernel: KernelTrace | None = None
    good: BisectRun | None = None
    bad: BisectRun | None = None
    runs: int = 0
    required: tuple[str, ...] = ()
    untested: tuple[str, ...] = ()  # passes that ran in every run: never skipped, so never tested
    steps: list[BisectRun] = field(default_factory=list)
