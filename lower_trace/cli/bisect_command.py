"""``lower-trace bisect``: the pass that turns the user's check from good to bad (lower_trace/bisect.py)."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import time
from typing import Any

from lower_trace.cli.options import add_color, color_wanted_by
from lower_trace.cli.selection import UsageError
from lower_trace.text_safety import plural


def cmd_bisect(args: argparse.Namespace) -> int:
    """Find the pass that breaks your result: COMMAND (your check: exit 0 good, non-zero bad) is run
    again and again with only the first N passes (and the required ones), bisecting N."""
    from lower_trace.config import default_trace_dir
    from lower_trace.render.terminal import TerminalRenderer, printable
    from lower_trace.rerun.bisection import KNOWN_REQUIRED, Bisector, CannotRun, python_command
    from lower_trace.store.layout import new_run_dir

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("give the check to run after --, e.g. lower-trace bisect -- python check.py (exit 0 = good)")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout:g}: give the seconds one run may take (more than 0)")
    if args.kernel:
        try:
            re.compile(args.kernel)
        except re.error as exc:
            raise UsageError(f"--kernel {args.kernel!r} is not a valid regex ({exc})") from None
    workdir = args.work or new_run_dir(os.path.join(default_trace_dir(), "bisect"))
    required = [] if args.no_known_required else list(KNOWN_REQUIRED)
    required += [name for item in args.required for name in item.split(",") if name]
    bisector = Bisector(python_command(command), workdir, kernel=args.kernel or "", required=required, timeout=args.timeout, say=_say_flushed)
    print(f"lower-trace bisect: {shlex.join(command)}  (runs and their traces in {workdir})", flush=True)
    started = time.monotonic()
    try:
        if args.configs is not None:
            return _try_configs(bisector, args.configs, started)
        answer = bisector.bisect()
    except KeyboardInterrupt:
        print(f"\nstopped after {len(bisector.steps)} runs; their traces are in {workdir}")
        return 130
    except CannotRun as exc:
        raise UsageError(str(exc)) from None
    took = f"{plural(answer.runs, 'run')}, {time.monotonic() - started:.0f} s; each run's output is in its folder's output.txt"
    if answer.kind == "timeout":
        print(f"your check ran longer than --timeout {args.timeout:g} s with every pass: give it more time ({took})")
        return 1
    if answer.kind == "untraced":
        print(f"no pass was traced in your check's process: does it compile a TileLang kernel (with {printable(args.kernel or 'any name')})? ({took})")
        return 1
    if answer.kind == "broken":
        where = answer.bad.trace.path if answer.bad and answer.bad.trace else workdir
        print(f"the compile fails with every pass run, so there is nothing to bisect: see {where} ({took})")
        return 1
    if answer.kind == "always-good":
        print(f"your check passes with every pass run: nothing to bisect (is it the check that fails for you?) ({took})")
        return 1
    if answer.kind == "always-bad":
        scope = f" in the kernels --kernel {printable(args.kernel)} selects (the cause may be in another kernel)" if args.kernel else ""
        print(f"your check fails even with every skippable pass skipped{scope}: the cause is not a pass that can be skipped ({took})")
        if answer.untested:
            print(f"  ran in every run (never skipped), so not tested: {', '.join(answer.untested)}")
        return 1
    culprit, kernel, good, bad = answer.culprit, answer.kernel, answer.good, answer.bad
    assert culprit is not None and kernel is not None and good is not None and bad is not None and bad.trace is not None and good.trace is not None
    parent = next((p for p in kernel.passes if p.seq == culprit.parent), None)
    inside = f", nested in #{parent.seq} {printable(parent.name)}" if parent is not None else ""
    same = [p for p in kernel.passes if p.name == culprit.name]
    which = f", the {_nth(same.index(culprit) + 1)} of {len(same)} {printable(culprit.name)} passes" if len(same) > 1 else ""
    where = f"{printable(culprit.phase)}{inside}{which}"
    gated = {k.kernel_id for k in bad.trace.kernels if any(p.ordinal for p in k.passes)}
    counted = "passes" if len(gated) <= 1 else "passes (counted over the kernels bisected)"
    print(
        f"first bad pass: {printable(culprit.name)} ({where}) of kernel {kernel.kernel_id} {printable(kernel.name)}: "
        f"the {_nth(culprit.ordinal)} of the {bisector.total} {counted} in the order they run (step #{culprit.seq} of the bad run's trace)"
    )
    print(f"  with the first {good.limit} {counted} your check passes; with the first {bad.limit} (the last of them is this one) it fails  ({took})")
    print(f"  good run: {good.trace.path}")
    print(f"  bad run:  {bad.trace.path}")
    print(f"  compare them: lower-trace diff {good.trace.path}:{kernel.kernel_id} {bad.trace.path}:{kernel.kernel_id}")
    print(f"  reproduce the bad run:  {bisector.reproduce(bad.limit, folder=os.path.join(workdir, 'again-bad'))}")
    print(f"  and the good one:       {bisector.reproduce(good.limit, folder=os.path.join(workdir, 'again-good'))}")
    if answer.untested:
        print(f"  ran in every run (never skipped), so not tested: {', '.join(answer.untested)}")
    _compare(good, bad, kernel)
    print(f"what {printable(culprit.name)} did in the bad run:")
    color = color_wanted_by(args)
    TerminalRenderer(sys.stdout, color=color).render_diff(bad.trace.snapshot(culprit.before), bad.trace.snapshot(culprit.after or culprit.before))
    return 0


def _nth(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _say_flushed(text: str) -> None:
    print(text, flush=True)


def _compare(good: Any, bad: Any, kernel: Any) -> None:
    """The good and the bad run's kernel compared, as lower-trace diff does: where they part."""
    from lower_trace.analysis.compare import Side, compare
    from lower_trace.render.terminal import printable

    before = next((k for k in good.trace.kernels if k.kernel_id == kernel.kernel_id), None)
    if before is None:
        return
    result = compare(Side(before, good.trace.snapshot), Side(kernel, bad.trace.snapshot))
    divergence = result.divergence
    if divergence is not None and divergence.kind != "input":
        record = divergence.b or divergence.a
        assert record is not None
        source = "the same" if result.same_source else "differs"
        print(f"  the two compiles part at #{record.seq} {printable(record.name)} ({divergence.kind}); generated source: {source}")


def _try_configs(bisector: Any, wanted: str, started: float) -> int:
    """--configs: each TileLang switch on its own, with every pass: which ones flip the check."""
    from lower_trace.integrations.extra_configs import registered_configs, switch_configs

    known = registered_configs()
    if wanted == "all":
        keys = [key for key in switch_configs() if not known or key in known]
    else:
        keys = [key for key in wanted.split(",") if key]
        unknown = [key for key in keys if known and key not in known]
        if unknown:
            raise UsageError(f"--configs: {', '.join(unknown)} is not a pass config this TileLang knows; `--configs` alone tries all its switches")
    if not keys:
        raise UsageError("--configs found no TileLang pass configs to try; name them: --configs tl.disable_x,tl.enable_y")
    base, tried = bisector.try_configs(keys)
    flips = [(key, step) for key, step in tried if step.verdict in ("good", "bad") and step.verdict != base.verdict]
    broken = [key for key, step in tried if step.verdict not in ("good", "bad")]
    print(f"as it is: {base.verdict}; {len(keys)} configs tried one at a time ({plural(len(bisector.steps), 'run')}, {time.monotonic() - started:.0f} s)")
    for key, step in flips:
        again = bisector.reproduce(None, {key: True}, folder=os.path.join(bisector.workdir, "again"))
        print(f"  {key}=True: {step.verdict} (flips {base.verdict} -> {step.verdict})  reproduce: {again}")
    if broken:
        print(f"  the compile did not get through with (so they tell nothing): {', '.join(f'{key}=True' for key in broken)}")
    if not flips:
        print("  no config changes the result")
    return 0 if flips else 1


def add_parser(sub: Any) -> None:
    bis = sub.add_parser("bisect", help="find the pass that makes your check fail", description=cmd_bisect.__doc__)
    bis.add_argument("--kernel", metavar="REGEX", help="skip passes only in kernels whose name matches (others compile normally)")
    bis.add_argument("--required", action="append", default=[], metavar="PASS[,PASS]", help="passes never to skip (added to the built-in list)")
    bis.add_argument("--no-known-required", action="store_true", help="start without the built-in list of required TileLang passes (learn them)")
    bis.add_argument("--work", metavar="DIR", help="where the runs' traces go (default <trace dir>/bisect/<time>)")
    bis.add_argument("--timeout", type=float, help="seconds one run of the check may take")
    bis.add_argument(
        "--configs", nargs="?", const="all", metavar="KEY[,KEY]",
        help="instead of bisecting passes, try TileLang's on/off pass configs (all, or these) one at a time",
    )
    add_color(bis)
    bis.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="your check: exit 0 = good, anything else = bad")
    bis.set_defaults(func=cmd_bisect)
