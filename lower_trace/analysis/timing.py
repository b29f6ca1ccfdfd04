"""Where a compile's time goes: inclusive and self time per pass, and the slowest passes of a run.

Pure over a stored trace. A pass's ``ms`` is inclusive: the passes it runs inside itself
(a C++ ``Sequential``) are part of it, the tracer's own work is not. Self time is what is
left when its nested passes' time is taken away. Steps are laid out on one time line
(``at``): top-level steps one after another, a nested pass inside its parent after its
earlier siblings -- the order they ran in, without the gaps between them (not measured).
The report's chart draws exactly these numbers (they travel in its payload).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lower_trace.model import CodegenRecord, KernelTrace, PassRecord


@dataclass(frozen=True)
class StepTime:
    step: PassRecord | CodegenRecord
    ms: float  # inclusive
    self_ms: float  # without its nested passes
    at: float  # where it starts on the kernel's time line (ms)

    @property
    def seq(self) -> int:
        return self.step.seq

    @property
    def depth(self) -> int:
        return self.step.depth if isinstance(self.step, PassRecord) else 0

    @property
    def name(self) -> str:
        return step_label(self.step)


@dataclass(frozen=True)
class PassTotal:
    """One pass name over a run: every time it ran, in every kernel."""

    name: str
    calls: int
    kernels: int
    self_ms: float  # summed
    max_self_ms: float  # its slowest run ...
    max_kernel: str  # ... in this kernel
    max_seq: int  # ... at this step


# What the compile time outside every pass and codegen is (the terminal and the page say it).
BETWEEN = "between steps (TileLang's Python around them, the tracer's own work)"


@dataclass(frozen=True)
class CompileSplit:
    """Where the compile time of some kernels went: in traced steps, or between them."""

    compile_ms: float  # the kernels' compile time (a kernel's steps where it has none: it did not finish)
    steps_ms: float  # in passes and codegen: their self times summed (the top-level steps' time)

    @property
    def between_ms(self) -> float:
        return max(0.0, self.compile_ms - self.steps_ms)

    def share(self, ms: float) -> float:
        """ms as a percentage of the compile time."""
        return 100.0 * ms / self.compile_ms if self.compile_ms > 0 else 0.0


def compile_split(kernels: Iterable[KernelTrace]) -> CompileSplit:
    """Self times, not the top-level steps' ms, so that a run table's % column adds up to the
    steps' share; the page sums the same numbers from its summaries (kernel_totals)."""
    compile_ms = steps_ms = 0.0
    for kernel in kernels:
        steps = sum(entry[1] for entry in kernel_totals(kernel_timing(kernel)).values())
        compile_ms += max(kernel.ms, steps)
        steps_ms += steps
    return CompileSplit(compile_ms, steps_ms)


def step_label(step: PassRecord | CodegenRecord) -> str:
    return f"{step.role} codegen" if isinstance(step, CodegenRecord) else step.name


def kernel_timing(kernel: KernelTrace) -> list[StepTime]:
    """Every step of the kernel in the order it ran, with its inclusive and self time and place."""
    steps = kernel.steps
    nested: dict[int, float] = {}  # parent seq -> time of its direct children
    for step in steps:
        if isinstance(step, PassRecord) and step.parent is not None:
            nested[step.parent] = nested.get(step.parent, 0.0) + step.ms
    next_at: dict[int | None, float] = {None: 0.0}  # parent seq -> where its next child starts
    placed: dict[int, float] = {}
    out = []
    for step in steps:
        parent = step.parent if isinstance(step, PassRecord) else None
        if parent is not None and parent not in placed:
            parent = None  # its parent is not in the trace (cut off): lay it out at the top
        at = next_at[parent]
        next_at[parent] = at + step.ms
        placed[step.seq] = at
        next_at[step.seq] = at
        self_ms = max(0.0, step.ms - nested.get(step.seq, 0.0))
        out.append(StepTime(step, step.ms, round(self_ms, 3), round(at, 3)))
    return out


def slowest(times: Iterable[StepTime], count: int = 10) -> list[StepTime]:
    """The steps with the most self time, slowest first (ties in execution order)."""
    return sorted(times, key=lambda t: (-t.self_ms, t.seq))[:count]


def kernel_totals(times: Iterable[StepTime]) -> dict[str, list[float]]:
    """Per step name of one kernel's times: [calls, self ms summed, slowest self ms, its seq] -- what a
    run's table is built from."""
    totals: dict[str, list[float]] = {}
    for time in times:
        entry = totals.setdefault(time.name, [0, 0.0, -1.0, 0])
        entry[0] += 1
        entry[1] = round(entry[1] + time.self_ms, 3)
        if time.self_ms > entry[2]:
            entry[2], entry[3] = time.self_ms, time.seq
    return totals


def run_timing(kernels: Iterable[KernelTrace]) -> list[PassTotal]:
    """Every step name of a run with its total self time over all kernels, slowest first."""
    merged: dict[str, PassTotal] = {}
    for kernel in kernels:
        for name, (calls, self_ms, max_ms, max_seq) in kernel_totals(kernel_timing(kernel)).items():
            old = merged.get(name)
            if old is None:
                merged[name] = PassTotal(name, int(calls), 1, self_ms, max_ms, kernel.kernel_id, int(max_seq))
                continue
            top = max_ms > old.max_self_ms
            merged[name] = PassTotal(
                name,
                old.calls + int(calls),
                old.kernels + 1,
                round(old.self_ms + self_ms, 3),
                max_ms if top else old.max_self_ms,
                kernel.kernel_id if top else old.max_kernel,
                int(max_seq) if top else old.max_seq,
            )
    return sorted(merged.values(), key=lambda t: (-t.self_ms, t.name))


def line_count(text: str) -> int:
    """Lines of a text as the page counts them: a final newline ends the last line, it opens no new one."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def ir_lines(step: PassRecord | CodegenRecord, text_of: Callable[[str], str]) -> int | None:
    """Lines of the IR after a pass (of the source, for codegen); None when it made none (failed)."""
    if isinstance(step, CodegenRecord):
        return line_count(text_of(step.source)) if step.source else None
    return line_count(text_of(step.after)) if step.after else None
