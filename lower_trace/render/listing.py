"""`lower-trace list`: one line per run (--runs), per kernel, per pass (--passes)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TextIO

from lower_trace.model import CodegenRecord, EditStatus, KernelState, KernelTrace, Trace
from lower_trace.render.terminal import kernel_state, printable, status_label


def state_counts(kernels: Sequence[KernelTrace]) -> tuple[int, int]:
    """(failed, did not finish) among kernels: what a run's line (and its JSON) counts."""
    states = [kernel_state(k) for k in kernels]
    return sum(1 for state in states if state.failed), states.count(KernelState.DID_NOT_FINISH)


def write_runs(out: TextIO, loaded: Sequence[tuple[str, Trace | Exception]]) -> None:
    """A line per run folder, oldest first: when it started, its kernels, how many failed; an
    unreadable one says why."""
    # A titled run (a test of pytest --lower-trace) shows its title: the node id, as pytest names the test.
    titles = {run_dir: printable(t.run.title) for run_dir, t in loaded if isinstance(t, Trace) and t.run.title}
    width = max(map(len, titles.values()), default=0)
    for run_dir, trace in loaded:
        if not isinstance(trace, Trace):
            out.write(f"{'(unreadable)':<19}  {printable(str(trace))}\n")
            continue
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(trace.run.started))
        failed, unfinished = state_counts(trace.kernels)
        count = len(trace.kernels)
        title = f"{titles.get(run_dir, ''):<{width}}  " if width else ""
        line = f"{started}  {count:>3} {'kernel ' if count == 1 else 'kernels'} {failed:>2} failed  {title}{printable(run_dir)}"
        out.write(line + (f"  ({unfinished} did not finish)" if unfinished else "") + "\n")


def write_run(out: TextIO, trace: Trace, passes: bool) -> None:
    """The run's header, a line per kernel; with passes, a line per step under each."""
    run = trace.run
    named = printable(run.title) if run.title else f"script {printable(run.script)}"
    out.write(f"run {printable(run.run_id)}  {named}  {printable(trace.path)}\n")
    for kernel in trace.kernels:
        out.write(_kernel_line(kernel) + "\n")
        if passes:
            for step in kernel.steps:
                if isinstance(step, CodegenRecord):
                    out.write(f"      {step.seq:>4} {step.role + ' codegen':<22} {printable(step.function)}  {status_label(step)}\n")
                else:
                    out.write(f"      {step.seq:>4} {printable(step.phase):<22} {'  ' * step.depth}{printable(step.name)}  {status_label(step)}\n")


def _kernel_line(kernel: KernelTrace) -> str:
    state = kernel_state(kernel)
    count = len(kernel.passes)
    failed = f" {kernel.failed_count:>2} failed" if kernel.failed_count or state is KernelState.OK else " " * 10
    took = "" if state is KernelState.DID_NOT_FINISH else f" {kernel.ms:>8.1f} ms"
    # Which variant: its working copy, as `lower-trace edits` names it, and what became of it.
    edited = sorted({c.edit_status.value for c in kernel.codegen if c.edit_status not in (None, EditStatus.SYNCED)})
    variant = "  " + " ".join([kernel.working_copy, *edited]) if kernel.working_copy else ""
    return (
        f"  {kernel.kernel_id:<4} {printable(kernel.name):<24} {printable(kernel.target):<20} {state.value:<14}"
        f" {count:>3} {'pass  ' if count == 1 else 'passes'} {kernel.changed_count:>3} changed{failed}{took}{printable(variant)}".rstrip()
    )
