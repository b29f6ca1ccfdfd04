"""``lower-trace bisect``: the pass that turns the user's check from good to bad (rerun/bisection.py searches, render/bisect_view.py says what it found)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from lower_trace.cli.options import add_color, color_wanted_by
from lower_trace.cli.selection import UsageError, after_dashes, regex

if TYPE_CHECKING:
    from lower_trace.model import BisectAnswer
    from lower_trace.rerun.bisection import Bisector


def cmd_bisect(args: argparse.Namespace) -> int:
    """Find the pass that breaks your result: COMMAND (your check: exit 0 good, non-zero bad) is run
    again and again with only the first N passes (and the required ones), bisecting N. With
    --versions, find the TileLang release that breaks it instead."""
    from lower_trace.render import bisect_view
    from lower_trace.rerun.bisection import CannotRun

    if args.launch is not None:
        workdir = _workdir(args)
        command = _launch_command(args, workdir)
    else:
        command = _check_command(args)
        if args.versions is not None:  # which release, not which pass: cli/bisect_versions.py
            from lower_trace.cli.bisect_versions import cmd_bisect_versions

            return cmd_bisect_versions(args, command)
        workdir = _workdir(args)
    _check_pass_options(args)
    bisector = _bisector(args, command, workdir)
    bisect_view.write_start(sys.stdout, command, workdir)
    started = time.monotonic()
    try:
        if args.configs is not None:
            return _try_configs(bisector, args.configs, started)
        answer = bisector.bisect()
    except KeyboardInterrupt:
        bisect_view.write_stopped(sys.stdout, len(bisector.steps), workdir)
        return 130
    except CannotRun as exc:
        raise UsageError(str(exc)) from None
    return _write_answer(args, bisector, answer, workdir, started)


def _workdir(args: argparse.Namespace) -> str:
    """--work, or a new folder in <trace dir>/bisect."""
    from lower_trace.config import default_trace_dir
    from lower_trace.store.layout import new_run_dir

    return args.work or new_run_dir(os.path.join(default_trace_dir(), "bisect"))


def _launch_command(args: argparse.Namespace, workdir: str) -> list[str]:
    """--launch: the check is the recorded launch against a reference (cli/bisect_launch.py)."""
    from lower_trace.cli.bisect_launch import launch_check

    if after_dashes(args.command):
        raise UsageError("--launch is the check (the launch against its reference): leave out the command after --")
    if args.versions is not None or args.configs is not None:
        raise UsageError("--launch bisects passes: leave out --versions and --configs")
    return launch_check(args, workdir)


def _check_command(args: argparse.Namespace) -> list[str]:
    """The check, given after --; --venvs only with --versions."""
    command = after_dashes(args.command)
    if not command:
        raise UsageError("give the check to run after --, e.g. lower-trace bisect -- python check.py (exit 0 = good)")
    if args.reference_config or args.reference_python or args.atol is not None or args.rtol is not None:
        raise UsageError("--reference-config, --reference-python, --atol and --rtol go with --launch RUN:KERNEL[:N]")
    if args.venvs and args.versions is None:
        raise UsageError("--venvs is the venv cache of --versions: give the releases too, e.g. --versions 0.1.13 0.1.15")
    return command


def _check_pass_options(args: argparse.Namespace) -> None:
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout:g}: give the seconds one run may take (more than 0)")
    if args.kernel:
        regex(args.kernel, "--kernel")


def _bisector(args: argparse.Namespace, command: list[str], workdir: str) -> Bisector:
    """The search over the runs' folder."""
    from lower_trace.rerun.bisection import Bisector, python_command, required_passes

    required = required_passes(not args.no_known_required, args.required)
    return Bisector(python_command(command), workdir, kernel=args.kernel or "", required=required, timeout=args.timeout, say=_say_flushed)


def _write_answer(args: argparse.Namespace, bisector: Bisector, answer: BisectAnswer, workdir: str, started: float) -> int:
    """The first bad pass (exit 0), or why none was found (exit 1)."""
    from lower_trace.render import bisect_view
    from lower_trace.rerun.bisection import again, parted

    took = bisect_view.took(answer.runs, time.monotonic() - started)
    if answer.kind != "found":
        bisect_view.write_no_culprit(sys.stdout, answer, took, workdir, args.kernel or "", args.timeout)
        return 1
    commands = again(bisector, answer, workdir)
    bisect_view.write_culprit(sys.stdout, answer, bisector.total, took, commands, parted(answer), color_wanted_by(args))
    return 0


def _say_flushed(text: str) -> None:
    print(text, flush=True)


def _try_configs(bisector: Bisector, wanted: str, started: float) -> int:
    """--configs: each TileLang switch on its own, with every pass: which ones flip the check."""
    from lower_trace.integrations.reruns.extra_configs import registered_configs, switch_configs
    from lower_trace.render import bisect_view
    from lower_trace.rerun.bisection import configs_to_try

    keys, unknown = configs_to_try(wanted, registered_configs(), switch_configs)
    if unknown:
        raise UsageError(f"--configs: {', '.join(unknown)} is not a pass config this TileLang knows; `--configs` alone tries all its switches")
    if not keys:
        raise UsageError("--configs found no TileLang pass configs to try; name them: --configs tl.disable_x,tl.enable_y")
    base, tried = bisector.try_configs(keys)
    flips = bisect_view.flipping(base, tried)
    again = {key: bisector.reproduce(None, {key: True}, folder=os.path.join(bisector.workdir, "again")) for key in flips}
    bisect_view.write_configs(sys.stdout, base, tried, len(bisector.steps), time.monotonic() - started, again)
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
    bis.add_argument(
        "--versions", nargs="+", metavar="VERSION",
        help="instead of bisecting passes, find the first TileLang release (of these, sorted as release numbers) that makes the check fail; "
        "the last good and first bad are compared as regress compares two sides (summary page in --work)",
    )  # fmt: skip
    bis.add_argument(
        "--launch", metavar="RUN:KERNEL[:N]",
        help="the check is a recorded launch (traced with TL_LOWER_TRACE_LAUNCHES=data): rebuilt from its PrimFunc by this TileLang, "
        "its outputs compared with the recorded ones (or the reference's); no script to write",
    )
    bis.add_argument(
        "--reference-config", action="append", default=[], metavar="KEY=VALUE", help="with --launch: the reference is the launch built with this pass config"
    )
    bis.add_argument("--reference-python", metavar="PYTHON", help="with --launch: the reference is the launch built by this interpreter (another TileLang)")
    bis.add_argument("--atol", type=float, help="with --launch: outputs match within this absolute tolerance (default: bitwise)")
    bis.add_argument("--rtol", type=float, help="with --launch: ... and this relative tolerance")
    bis.add_argument(
        "--venvs", metavar="DIR", help="with --versions: the venv cache, one tilelang-VERSION venv per release (default ~/.cache/lower-trace/venvs)"
    )
    add_color(bis)
    bis.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="your check: exit 0 = good, anything else = bad")
    bis.set_defaults(func=cmd_bisect)
