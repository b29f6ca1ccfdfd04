"""``lower-trace reduce``: a failed pass's reproducer shrunk to a bug-report-sized module."""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from typing import TYPE_CHECKING, Any

from lower_trace.cli.options import add_kernel, add_trace
from lower_trace.cli.selection import UsageError, kernels_of
from lower_trace.model import PassStatus
from lower_trace.rerun import repro

if TYPE_CHECKING:
    from lower_trace.rerun.reduction import Reduction


def cmd_reduce(args: argparse.Namespace) -> int:
    """Shrink the input of a failed pass (or of -p PASS, held under TL_LOWER_TRACE_REPLAY=1) to a
    module that still fails the same way, 1-minimal: FOLDER gets input.json, repro.py, error.txt
    and reduced.py (the module as TVMScript). DIR may also be a reproducer folder."""
    _check_output(args.output)
    _check_interesting(args)
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout:g}: give the seconds one try may take (more than 0)")
    test = os.path.abspath(args.test) if args.test else None  # it runs in each candidate's folder
    with tempfile.TemporaryDirectory(prefix="lower-trace-reduce-input-") as scratch:
        source = args.trace if _is_reproducer(args.trace) else _write_reproducer(args, scratch)
        reduce, not_interesting = _reduction()
        try:
            result = reduce(source, args.output, timeout=args.timeout, jobs=args.jobs, matches=args.matches, test=test, say=_say, warn=_warn)
        except not_interesting as exc:
            raise UsageError(f"{args.trace}: nothing to reduce: {exc}") from None
    _write_reduced(result)
    return 130 if result.interrupted else 0


def _check_interesting(args: argparse.Namespace) -> None:
    """--test or --matches, one of them, each what it must be."""
    if args.test and not (os.path.isfile(args.test) and os.access(args.test, os.X_OK)):
        raise UsageError(f"--test {args.test}: not an executable file (it gets a candidate's folder and exits 0 when it is still interesting)")
    if args.test and args.matches:
        raise UsageError("--matches and --test both say what is interesting: give one (--test SCRIPT can match the message itself)")
    if args.matches:
        try:
            re.compile(args.matches)
        except re.error as exc:
            raise UsageError(f"--matches {args.matches!r}: not a regular expression ({exc})") from None


def _reduction() -> tuple[Any, type[Exception]]:
    """rerun/reduction.py's reduce and NotInteresting, or the one line why it cannot run here."""
    try:
        from lower_trace.rerun.reduction import NotInteresting, reduce
    except ImportError as exc:
        if "stmt_functor" in str(exc):
            raise UsageError(f"lower-trace reduce cannot run here: {exc} (lower-trace repro writes the whole reproducer, which runs)") from None
        raise UsageError(f"lower-trace reduce needs the compiler the reproducer runs (TileLang or TVM) installed here: {exc}") from None
    return reduce, NotInteresting


def _say(line: str) -> None:
    """Progress, on a terminal only."""
    if sys.stderr.isatty():
        sys.stderr.write(f"lower-trace reduce: {line}\n")


def _warn(line: str) -> None:
    sys.stderr.write(f"lower-trace reduce: {line}\n")


def _write_reduced(result: Reduction) -> None:
    """What the reduction came to, the command that runs its reproducer, and the module's file."""
    minutes, seconds = divmod(round(result.seconds), 60)
    took = f"{minutes} min {seconds} s" if minutes else f"{seconds} s"
    stopped = " (interrupted: the smallest so far)" if result.interrupted else ""
    skipped = f", {result.ill_formed} candidates not run (ill-formed or out of bounds)" if result.ill_formed else ""
    print(f"reduced: statements {result.before} → {result.after}, {result.tries} tries ({result.timeouts} timed out){skipped}, {took}{stopped}")
    said = f"   # {result.failure.type}: {result.failure.headline[:120]}" if result.failure else ""
    print(f"  {repro.command(result.folder)}{said}")
    print(f"  {os.path.join(result.folder, 'reduced.py')}   # the module, to paste into a bug report")
    if result.failure and result.original and result.failure.headline != result.original.headline:
        print(f"  note: the message now reads {result.failure.headline[:160]!r}; it was {result.original.headline[:160]!r} (the numbers may differ)")


def _check_output(output: str) -> None:
    """-o names a folder that is there or can be made: said before any work, not after."""
    if os.path.exists(output) and not os.path.isdir(output):
        raise UsageError(f"-o {output}: a file is there; name a folder (it is created)")
    parent = os.path.dirname(os.path.abspath(output))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise UsageError(f"-o {output}: {parent} is not a folder this user can write in; name another")


def _is_reproducer(path: str) -> bool:
    return os.path.isfile(os.path.join(path, repro.INPUT)) and os.path.isfile(os.path.join(path, repro.SCRIPT))


def _write_reproducer(args: argparse.Namespace, scratch: str) -> str:
    from lower_trace.cli.repro_command import _compiler, _one_kernel, _one_pass, _plan
    from lower_trace.store.reader import load_trace

    trace = load_trace(args.trace)
    if args.pass_ is not None:
        kernel = _one_kernel(trace, args.kernel, "reduce -p")
        record = _one_pass(trace, kernel, args.pass_)
    else:
        failed = [(k, p) for k in kernels_of(trace, args.kernel) for p in k.passes if p.status is PassStatus.FAILED or p.crashed]
        if not failed:
            raise UsageError(f"{trace.path}: no pass failed here; name one with -k KERNEL -p PASS (its input is held under TL_LOWER_TRACE_REPLAY=1)")
        if len(failed) > 1:
            named = ", ".join(f"{k.kernel_id} {p.seq} {p.name}" for k, p in failed[:8])
            raise UsageError(f"{trace.path}: {len(failed)} passes failed; pick one with -k KERNEL -p PASS: {named}")
        kernel, record = failed[0]
    passes, start, why = _plan(trace, kernel, record, _compiler(), None)
    repro.write(scratch, repro.spec_for(trace, kernel, record, passes, why), trace.ir_json(start.input))
    return scratch


def add_parser(sub: Any) -> None:
    red = sub.add_parser("reduce", help="shrink a failed pass's input to the smallest module that still fails", description=cmd_reduce.__doc__)
    add_trace(red)
    add_kernel(red)
    red.add_argument("-p", "--pass", dest="pass_", metavar="PASS", help="the pass (default: the failed one)")
    red.add_argument("-o", "--output", required=True, metavar="FOLDER", help="where to write the reduced reproducer")
    red.add_argument("--matches", metavar="REGEX", help="interesting: the message matches REGEX (default: the same error, numbers aside)")
    red.add_argument("--test", metavar="SCRIPT", help="interesting: SCRIPT FOLDER exits 0 (C-Reduce's convention)")
    red.add_argument("--timeout", type=float, default=120.0, help="seconds per try (default 120)")
    red.add_argument("-j", "--jobs", type=int, default=0, help="tries at a time (default: one per core)")
    red.set_defaults(func=cmd_reduce)
