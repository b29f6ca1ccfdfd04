"""What `lower-trace bisect` says: the first bad pass (or why there is none), and which TileLang
configs flip the check (rerun/bisection.py does the search)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from lower_trace.render.terminal import TerminalRenderer
from lower_trace.text_safety import plural, printable

if TYPE_CHECKING:  # the records it is given (render runs nothing)
    from lower_trace.analysis.compare import Comparison
    from lower_trace.model import BisectAnswer, BisectRun


def write_start(out: TextIO, command: Sequence[str], workdir: str) -> None:
    out.write(f"lower-trace bisect: {shlex.join(command)}  (runs and their traces in {workdir})\n")
    out.flush()


def write_stopped(out: TextIO, runs: int, workdir: str) -> None:
    out.write(f"\nstopped after {plural(runs, 'run')}; their traces are in {workdir}\n")


def took(runs: int, seconds: float) -> str:
    return f"{plural(runs, 'run')}, {seconds:.0f} s; each run's output is in its folder's output.txt"


def write_no_culprit(out: TextIO, answer: BisectAnswer, took: str, workdir: str, kernel: str, timeout: float | None) -> None:
    """Why a bisection found no pass (answer.kind is not "found")."""
    if answer.kind == "timeout":
        out.write(f"your check ran longer than --timeout {timeout or 0:g} s with every pass: give it more time ({took})\n")
    elif answer.kind == "untraced":
        out.write(f"no pass was traced in your check's process: does it compile a TileLang kernel (with {printable(kernel or 'any name')})? ({took})\n")
    elif answer.kind == "broken":
        where = answer.bad.trace.path if answer.bad and answer.bad.trace else workdir
        out.write(f"the compile fails with every pass run, so there is nothing to bisect: see {where} ({took})\n")
    elif answer.kind == "always-good":
        out.write(f"your check passes with every pass run: nothing to bisect (is it the check that fails for you?) ({took})\n")
    elif answer.kind == "always-bad":
        scope = f" in the kernels --kernel {printable(kernel)} selects (the cause may be in another kernel)" if kernel else ""
        out.write(f"your check fails even with every skippable pass skipped{scope}: the cause is not a pass that can be skipped ({took})\n")
        _untested(out, answer)


def write_culprit(
    out: TextIO, answer: BisectAnswer, total: int, took: str, again: tuple[str, str, str, str], parted: Comparison | None, color: bool | None = None
) -> None:
    """The first bad pass: where it sits, the good and the bad run (again: the commands that make
    them again, the bad one keeping every pass's input, and its folder), where the two compiles
    part, and what the pass did in the bad run."""
    culprit, kernel, good, bad = answer.culprit, answer.kernel, answer.good, answer.bad
    assert culprit is not None and kernel is not None and good is not None and bad is not None and bad.trace is not None and good.trace is not None
    parent = next((p for p in kernel.passes if p.seq == culprit.parent), None)
    inside = f", nested in #{parent.seq} {printable(parent.name)}" if parent is not None else ""
    same = [p for p in kernel.passes if p.name == culprit.name]
    which = f", the {_nth(same.index(culprit) + 1)} of {len(same)} {printable(culprit.name)} passes" if len(same) > 1 else ""
    where = f"{printable(culprit.phase)}{inside}{which}"
    gated = {k.kernel_id for k in bad.trace.kernels if any(p.ordinal for p in k.passes)}
    counted = "passes" if len(gated) <= 1 else "passes (counted over the kernels bisected)"
    out.write(
        f"first bad pass: {printable(culprit.name)} ({where}) of kernel {kernel.kernel_id} {printable(kernel.name)}: "
        f"the {_nth(culprit.ordinal)} of the {total} {counted} in the order they run (step #{culprit.seq} of the bad run's trace)\n"
    )
    out.write(f"  with the first {good.limit} {counted} your check passes; with the first {bad.limit} (the last of them is this one) it fails  ({took})\n")
    out.write(f"  good run: {good.trace.path}\n")
    out.write(f"  bad run:  {bad.trace.path}\n")
    out.write(f"  compare them: lower-trace diff {good.trace.path}:{kernel.kernel_id} {bad.trace.path}:{kernel.kernel_id}\n")
    out.write(f"  reproduce the bad run:  {again[0]}\n")
    out.write(f"  and the good one:       {again[1]}\n")
    if culprit.input:
        out.write(
            f"  shrink its input:       lower-trace reduce {bad.trace.path} -k {kernel.kernel_id} -p {culprit.seq} -o FOLDER --test SCRIPT"
            "  (SCRIPT gets a candidate's folder: exit 0 while the pass still changes your result)\n"
        )
    else:  # bisect's runs keep no pass inputs
        out.write(
            f"  shrink its input:       {again[2]}   # the bad run, every pass's input kept; then\n"
            f"                          lower-trace reduce {again[3]} -k {kernel.kernel_id} -p {culprit.seq} -o FOLDER --test SCRIPT"
            "  (SCRIPT gets a candidate's folder: exit 0 while the pass still changes your result)\n"
        )
    _untested(out, answer)
    divergence = parted.divergence if parted is not None else None
    if parted is not None and divergence is not None and divergence.kind != "input":
        record = divergence.b or divergence.a
        assert record is not None
        source = "the same" if parted.same_source else "differs"
        out.write(f"  the two compiles part at #{record.seq} {printable(record.name)} ({divergence.kind}); generated source: {source}\n")
    out.write(f"what {printable(culprit.name)} did in the bad run:\n")
    TerminalRenderer(out, color=color).render_diff(bad.trace.snapshot(culprit.before), bad.trace.snapshot(culprit.after or culprit.before))


def write_configs(out: TextIO, base: BisectRun, tried: Sequence[tuple[str, BisectRun]], runs: int, seconds: float, again: dict[str, str]) -> None:
    """`--configs`: the check as it is, and each config that flips it (again: the command that
    reproduces each of those, flipping() names them)."""
    flips = [(key, step) for key, step in tried if key in flipping(base, tried)]
    broken = [key for key, step in tried if step.verdict not in ("good", "bad")]
    out.write(f"as it is: {base.verdict}; {plural(len(tried), 'config')} tried one at a time ({plural(runs, 'run')}, {seconds:.0f} s)\n")
    for key, step in flips:
        out.write(f"  {key}=True: {step.verdict} (flips {base.verdict} -> {step.verdict})  reproduce: {again[key]}\n")
    if broken:
        out.write(f"  the compile did not get through with (so they tell nothing): {', '.join(f'{key}=True' for key in broken)}\n")
    if not flips:
        out.write("  no config changes the result\n")


def flipping(base: BisectRun, tried: Sequence[tuple[str, BisectRun]]) -> list[str]:
    """The configs whose run came out the other way (good <-> bad) from the check as it is."""
    return [key for key, step in tried if step.verdict in ("good", "bad") and step.verdict != base.verdict]


def _untested(out: TextIO, answer: BisectAnswer) -> None:
    if answer.untested:
        out.write(f"  ran in every run (never skipped), so not tested: {', '.join(answer.untested)}\n")


def _nth(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
