"""`lower-trace show --timing`: the report's timing charts as tables, from analysis/timing.py (the JSON: json_view.timing)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import TextIO

from lower_trace.analysis.timing import BETWEEN, StepTime, compile_split, ir_lines, kernel_timing, run_timing, slowest
from lower_trace.model import KernelTrace, PassRecord, PassStatus, Trace
from lower_trace.text_safety import plural, printable

TextOf = Callable[[str], str]
SLOWEST = 10  # steps named under a kernel's table; names in a run's table


def ms_text(value: float) -> str:
    """Milliseconds with two decimals, an exact half rounded up: as the page's toFixed(2) does
    (Python's own formatting rounds exact halves, 0.125, to even)."""
    return str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _timed(time: StepTime) -> bool:
    """A failed pass has no meaningful time (it ends when TVM has built the error): left blank."""
    return getattr(time.step, "status", None) not in (PassStatus.FAILED, PassStatus.INCOMPLETE)


def write_timing(out: TextIO, trace: Trace, kernels: Sequence[KernelTrace]) -> None:
    """One kernel: its steps' table; several: the step names' table over them, and how to see one."""
    if len(kernels) == 1:
        write_kernel_table(out, kernels[0], trace.snapshot)
    else:
        write_run_table(out, kernels)
        out.write(f"one kernel's steps: lower-trace show --timing -k KERNEL {trace.path}\n")


def write_kernel_table(out: TextIO, kernel: KernelTrace, text_of: TextOf) -> None:
    times = kernel_timing(kernel)
    top = [t for t in times if t.depth == 0]
    passes = sum(t.ms for t in top if isinstance(t.step, PassRecord))
    codegen = sum(t.ms for t in top) - passes
    between = max(0.0, kernel.ms - passes - codegen)
    out.write(
        f"{kernel.kernel_id} {printable(kernel.name)}: compile {kernel.ms:.1f} ms, passes {passes:.1f} ms, codegen {codegen:.1f} ms,"
        f" between steps {between:.1f} ms\n"
    )
    width = max([24, *(len(t.name) + 2 * t.depth for t in times)])
    out.write(f"{'seq':>4}  {'step':<{width}}  {'ms':>9}  {'self ms':>9}  {'IR lines':>8}\n")
    for time in times:
        lines = ir_lines(time.step, text_of)
        name = "  " * time.depth + printable(time.name)
        ms, self_ms = (ms_text(time.ms), ms_text(time.self_ms)) if _timed(time) else ("", "")
        out.write(f"{time.seq:>4}  {name:<{width}}  {ms:>9}  {self_ms:>9}  {'' if lines is None else lines:>8}\n".rstrip() + "\n")
    out.write(f"slowest (self time): {', '.join(f'{printable(t.name)} ({t.seq}) {t.self_ms:.1f} ms' for t in slowest(times, 5))}\n")


def write_run_table(out: TextIO, kernels: Sequence[KernelTrace], limit: int | None = 40) -> None:
    totals = run_timing(kernels)
    split = compile_split(kernels)
    out.write(
        f"{plural(len(kernels), 'kernel')}: compile {split.compile_ms:.1f} ms in all: {split.steps_ms:.1f} ms ({split.share(split.steps_ms):.1f}%)"
        f" in passes and codegen, {split.between_ms:.1f} ms ({split.share(split.between_ms):.1f}%) {BETWEEN};"
        f" step names by self time over every kernel, % of the compile\n"
    )
    shown = totals if limit is None else totals[:limit]
    width = max([24, *(len(t.name) for t in shown)])
    out.write(f"{'step':<{width}}  {'self ms':>10}  {'%':>6}  {'calls':>6}  {'kernels':>7}  {'slowest':>9}  where\n")
    for t in shown:
        share = f"{split.share(t.self_ms):.1f}%"
        out.write(
            f"{printable(t.name):<{width}}  {ms_text(t.self_ms):>10}  {share:>6}  {t.calls:>6}  {t.kernels:>7}"
            f"  {ms_text(t.max_self_ms):>9}  {t.max_kernel}/{t.max_seq}\n"
        )
    if len(shown) < len(totals):
        out.write(f"... and {plural(len(totals) - len(shown), 'more step name')} (--json lists them all)\n")
