"""The ``lower-trace`` command: each subcommand is a few lines over the public API."""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import time

from . import __version__
from .config import DEFAULT_TRACE_DIR, ENV_DIR, ENV_MODE, MODES, ConfigError, default_trace_dir, parse_mode
from .model import CodegenRecord, Trace
from .store import TraceNotFound, list_runs, load_trace


class UsageError(Exception):
    """Bad input on the command line: one line, exit status 2."""


def _fail(message: str) -> int:
    sys.stderr.write(f"lower-trace: error: {message}\n")
    return 2


def cmd_run(args: argparse.Namespace) -> int:
    """Run a Python script (or -m module) with tracing on, like TL_LOWER_TRACE=<mode> python script.py."""
    try:
        mode = parse_mode(args.mode)
    except ConfigError:
        raise UsageError(f"--mode {args.mode!r} is not a mode; use one of {', '.join(MODES)}") from None
    if mode is None:
        raise UsageError("--mode must turn tracing on: terminal, html or both")
    if not args.module and not args.script:
        raise UsageError("name a script to run: lower-trace run kernel.py [args...]")
    if not args.module and not os.path.isfile(args.script):
        raise UsageError(f"{args.script}: no such script")
    # As python does: argv and sys.path[0] are the script's (or, for -m, the current folder).
    if args.module:
        # argparse hands the module's first argument to `script`: give it back.
        sys.argv = [args.module, *([args.script] if args.script else []), *args.args]
        sys.path[0] = os.getcwd()
    else:
        sys.argv = [args.script, *args.args]
        sys.path[0] = os.path.dirname(os.path.abspath(args.script))
    # Children the script starts are traced too, exactly as with the variable.
    os.environ[ENV_MODE] = mode
    if args.dir:
        os.environ[ENV_DIR] = args.dir
    from . import api
    from .config import config_from_env

    api._start(config_from_env())  # after sys.argv: the trace folder is named after the script
    if args.module:
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(args.script, run_name="__main__")
    return 0


def _kernels(trace: Trace, key: str | None) -> list:
    return [trace.kernel(key)] if key else list(trace.kernels)


def _matching_steps(kernel, key: str) -> list:
    return [s for s in kernel.steps if str(s.seq) == key or getattr(s, "name", None) == key or getattr(s, "function", None) == key]


def cmd_show(args: argparse.Namespace) -> int:
    """Print a stored trace in the terminal: the pass table, the diffs, the generated source."""
    from .render.terminal import TerminalRenderer

    trace = load_trace(args.trace)
    kernels = _kernels(trace, args.kernel)
    color = True if args.color == "always" else False if args.color == "never" else None
    renderer = TerminalRenderer(sys.stdout, color=color, context=args.context)
    if args.ir is not None:
        if len(kernels) != 1:
            raise UsageError(f"--ir needs one kernel; pick it with -k: {_kernel_names(trace)}")
        steps = _matching_steps(kernels[0], args.ir)
        if not steps:
            raise UsageError(f"no pass {args.ir!r} in kernel {kernels[0].kernel_id}; `lower-trace list --passes` shows them")
        if len(steps) > 1:
            raise UsageError(f"{len(steps)} passes are named {args.ir!r}; pick one by number: {', '.join(str(s.seq) for s in steps)}")
        step = steps[0]
        digest = step.source if isinstance(step, CodegenRecord) else (step.after or step.before)
        renderer.render_snapshot(trace.snapshot(digest))
        return 0
    only = None
    if args.pass_:
        only = {step.seq for kernel in kernels for step in _matching_steps(kernel, args.pass_)}
        if not only:
            raise UsageError(f"no pass {args.pass_!r} in this trace; `lower-trace list --passes` shows them")
    for kernel in kernels:
        renderer.render_kernel(
            kernel,
            trace.snapshot,
            show_diffs=not args.no_diff,
            only=only,
            changed_only=args.changed,
            show_source=not args.no_source,
        )
    return 0


def _kernel_names(trace: Trace) -> str:
    return ", ".join(f"{k.kernel_id} ({k.name})" for k in trace.kernels)


def cmd_list(args: argparse.Namespace) -> int:
    """One line per kernel of the latest run (per pass with --passes; per run with --runs)."""
    from .render.terminal import status_label

    if args.runs:
        runs = list_runs(args.trace)
        if not runs:
            load_trace(args.trace)  # raises the one-line "no trace here" error
        for run_dir in runs:
            try:
                trace = load_trace(run_dir)
            except TraceNotFound as exc:
                print(f"{'(unreadable)':<19}  {exc}")
                continue
            started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(trace.run.started))
            failed = sum(1 for k in trace.kernels if k.status.value == "failed")
            print(f"{started}  {len(trace.kernels):>3} kernels {failed:>2} failed  {run_dir}")
        return 0
    trace = load_trace(args.trace)
    run = trace.run
    print(f"run {run.run_id}  script {run.script}  {trace.path}")
    for kernel in trace.kernels:
        print(
            f"  {kernel.kernel_id:<4} {kernel.name:<24} {kernel.target:<20} {kernel.status.value:<8}"
            f" {len(kernel.passes):>3} {'pass  ' if len(kernel.passes) == 1 else 'passes'} {kernel.changed_count:>3} changed {kernel.failed_count:>2} failed {kernel.ms:>8.1f} ms"
        )
        if args.passes:
            for step in kernel.steps:
                if isinstance(step, CodegenRecord):
                    print(f"      {step.seq:>4} {step.role + ' codegen':<22} {step.function}  {status_label(step)}")
                else:
                    print(f"      {step.seq:>4} {step.phase:<22} {'  ' * step.depth}{step.name}  {status_label(step)}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """(Re)build the HTML report of a trace, also of one whose process was killed."""
    from .render.html import write_report
    from .store import find_run_dir

    run_dir = find_run_dir(args.trace)
    output = args.output
    if output and os.path.isdir(output):
        output = os.path.join(output, "report.html")
    if output and not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        raise UsageError(f"-o {args.output}: the folder {os.path.dirname(os.path.abspath(output))} does not exist")
    try:
        path = write_report(run_dir, output)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {exc.filename or output or run_dir}: {exc.strerror or exc}") from None
    print(f"file://{path}")
    return 0


def _script_dirs(path: str) -> list[str]:
    """Script folders holding working copies: path itself, or the folders below it."""
    from .override import EDITS

    if os.path.isdir(os.path.join(path, EDITS)):
        return [path]
    if os.path.basename(os.path.normpath(path)) == EDITS:
        return [os.path.dirname(os.path.normpath(path))]
    try:
        children = sorted(entry.path for entry in os.scandir(path) if entry.is_dir())
    except OSError:
        raise UsageError(f"{path}: no such directory; pass a trace folder (default {DEFAULT_TRACE_DIR})") from None
    return [child for child in children if os.path.isdir(os.path.join(child, EDITS))]


def cmd_edits(args: argparse.Namespace) -> int:
    """List the editable generated sources (working copies) and their state, or --reset one kernel's."""
    from .override import EditStore

    stores = [EditStore(folder) for folder in _script_dirs(args.trace)]
    if not stores:
        raise UsageError(f"{args.trace}: no working copies here yet; run your script with TL_LOWER_TRACE=html first")
    if args.reset:
        matching = [s for s in stores if any(args.reset in (e["kernel"], e["file"], os.path.splitext(e["file"])[0]) for e in s.entries())]
        if len(matching) > 1:
            folders = ", ".join(os.path.dirname(s.root) for s in matching)
            raise UsageError(f"several scripts have working copies for {args.reset!r}; name one: lower-trace edits FOLDER --reset {args.reset} (folders: {folders})")
        done = [item for store in matching for item in store.reset(args.reset)]
        if not done:
            known = sorted({e["kernel"] for store in stores for e in store.entries()})
            raise UsageError(f"no working copy for {args.reset!r}; kernels: {', '.join(known)}")
        for path, backup in done:
            print(f"{path}: back to the generated source" + (f" (your edit is saved in {backup})" if backup else ""))
        return 0
    for store in stores:
        print(store.root)
        for entry in store.entries():
            signature = entry["key"].split("|")[1]
            print(f"  {entry['file']:<28} {entry['kernel']:<20} {entry['role']:<7} {entry['state']:<13} {signature}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lower-trace",
        description="See what every TileLang / TVM compiler pass does to your kernel.",
    )
    parser.add_argument("--version", action="version", version=f"lower-trace {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    trace_help = (
        f"a run folder, a script folder or the trace root; the latest run is taken "
        f"(default: ${ENV_DIR} or {DEFAULT_TRACE_DIR})"
    )
    default_trace = default_trace_dir()

    run = sub.add_parser("run", help="run a script with tracing on", description=cmd_run.__doc__)
    run.add_argument("--mode", default="html", help=f"one of {', '.join(MODES)} (default html)")
    run.add_argument("--dir", help=f"trace folder (default ${ENV_DIR} or {DEFAULT_TRACE_DIR})")
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module, like python -m")
    run.add_argument("script", nargs="?", help="the Python script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    run.set_defaults(func=cmd_run)

    show = sub.add_parser("show", help="print a trace's passes and diffs", description=cmd_show.__doc__)
    show.add_argument("trace", nargs="?", default=default_trace, help=trace_help)
    show.add_argument("-k", "--kernel", help="kernel id (k1), name or number")
    which = show.add_mutually_exclusive_group()
    which.add_argument("-p", "--pass", dest="pass_", metavar="PASS", help="only this pass (sequence number or name)")
    which.add_argument("--ir", metavar="PASS", help="print the IR after PASS (the IR it received, if it failed; the source, for codegen)")
    show.add_argument("--changed", action="store_true", help="hide passes that changed nothing")
    show.add_argument("--no-diff", action="store_true", help="the pass table only")
    show.add_argument("--no-source", action="store_true", help="do not print generated source")
    show.add_argument("-U", "--context", type=int, default=3, help="lines of context around changes (default 3)")
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    show.set_defaults(func=cmd_show)

    lst = sub.add_parser("list", help="list the kernels (and passes) of a trace", description=cmd_list.__doc__)
    lst.add_argument("trace", nargs="?", default=default_trace, help=trace_help)
    lst.add_argument("--passes", action="store_true", help="one line per pass too")
    lst.add_argument("--runs", action="store_true", help="every run under the folder, oldest first")
    lst.set_defaults(func=cmd_list)

    edits = sub.add_parser("edits", help="list or reset the editable generated sources", description=cmd_edits.__doc__)
    edits.add_argument("trace", nargs="?", default=default_trace, help="a script folder or the trace root")
    edits.add_argument("--reset", metavar="KERNEL", help="return KERNEL's working copies (or one FILE's) to the generated source; edits are kept aside")
    edits.set_defaults(func=cmd_edits)

    report = sub.add_parser("report", help="write the HTML report of a trace", description=cmd_report.__doc__)
    report.add_argument("trace", nargs="?", default=default_trace, help=trace_help)
    report.add_argument("-o", "--output", help="file (or folder) to write it to (default <run>/report.html)")
    report.set_defaults(func=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UsageError, TraceNotFound, LookupError) as exc:
        return _fail(str(exc).strip("'\""))
    except BrokenPipeError:
        return 0
