"""The ``lower-trace`` command: each subcommand is a few lines over the public API."""

from __future__ import annotations

import argparse
import os
import runpy
import sys

from . import __version__
from .config import DEFAULT_TRACE_DIR, ENV_DIR, ENV_MODE, MODES, ConfigError, parse_mode
from .model import PassStatus
from .store import TraceNotFound, load_trace


def _fail(message: str) -> int:
    sys.stderr.write(f"lower-trace: error: {message}\n")
    return 2


def cmd_run(args: argparse.Namespace) -> int:
    """Run a Python script (or -m module) with tracing on, like TL_LOWER_TRACE=<mode> python script.py."""
    try:
        mode = parse_mode(args.mode)
    except ConfigError as exc:
        return _fail(str(exc))
    if mode is None:
        return _fail("--mode must turn tracing on: terminal, html or both")
    target = args.module or args.script
    if not target:
        return _fail("name a script to run: lower-trace run kernel.py [args...]")
    if not args.module and not os.path.isfile(target):
        return _fail(f"{target}: no such script")
    # Children the script starts are traced too, exactly as with the variable.
    os.environ[ENV_MODE] = mode
    if args.dir:
        os.environ[ENV_DIR] = args.dir
    from . import api
    from .config import config_from_env

    api._start(config_from_env())
    if args.module:
        # argparse hands the module's first argument to `script`: give it back.
        sys.argv = [target, *([args.script] if args.script else []), *args.args]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [target, *args.args]
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")
    return 0


def _load(path: str):
    return load_trace(path)


def cmd_show(args: argparse.Namespace) -> int:
    """Print a stored trace in the terminal: the pass table and the diffs."""
    from .render.terminal import TerminalRenderer

    trace = _load(args.trace)
    kernels = [trace.kernel(args.kernel)] if args.kernel else list(trace.kernels)
    color = True if args.color == "always" else False if args.color == "never" else None
    renderer = TerminalRenderer(sys.stdout, color=color, context=args.context)
    if args.ir is not None:
        kernel = kernels[0]
        step = next((s for s in kernel.steps if str(s.seq) == args.ir or getattr(s, "name", "") == args.ir), None)
        if step is None:
            return _fail(f"no pass {args.ir!r} in kernel {kernel.kernel_id}; `lower-trace list` shows them")
        digest = getattr(step, "after", "") or getattr(step, "before", "") or getattr(step, "source", "")
        renderer.render_snapshot(trace.snapshot(digest))
        return 0
    only = None
    if args.pass_:
        only = set()
        for kernel in kernels:
            for step in kernel.steps:
                if str(step.seq) == args.pass_ or getattr(step, "name", getattr(step, "function", "")) == args.pass_:
                    only.add(step.seq)
        if not only:
            return _fail(f"no pass {args.pass_!r} in this trace; `lower-trace list` shows them")
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


def cmd_list(args: argparse.Namespace) -> int:
    """One line per kernel of the run (or per pass with --passes)."""
    trace = _load(args.trace)
    run = trace.run
    print(f"run {run.run_id}  script {run.script}  {trace.path}")
    for kernel in trace.kernels:
        print(
            f"  {kernel.kernel_id:<4} {kernel.name:<24} {kernel.target:<20} {kernel.status.value:<8}"
            f" {len(kernel.passes):>3} passes {kernel.changed_count:>3} changed {kernel.failed_count:>2} failed {kernel.ms:>8.1f} ms"
        )
        if args.passes:
            for step in kernel.steps:
                status = "codegen" if not hasattr(step, "status") else step.status.value
                name = getattr(step, "name", None) or getattr(step, "function", "")
                phase = getattr(step, "phase", None) or f"{getattr(step, 'role', '')} codegen"
                print(f"      {step.seq:>4} {phase:<22} {'  ' * getattr(step, 'depth', 0)}{name}  {status}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """(Re)build the HTML report of a trace, also one whose process was killed."""
    from .render.html import write_report
    from .store import find_run_dir

    run_dir = find_run_dir(args.trace)
    path = write_report(run_dir, args.output)
    print(f"file://{path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lower-trace",
        description="See what every TileLang / TVM compiler pass does to your kernel.",
    )
    parser.add_argument("--version", action="version", version=f"lower-trace {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a script with tracing on", description=cmd_run.__doc__)
    run.add_argument("--mode", default="html", help=f"one of {', '.join(MODES)} (default html)")
    run.add_argument("--dir", help=f"trace folder (default ${ENV_DIR} or {DEFAULT_TRACE_DIR})")
    run.add_argument("-m", dest="module", help="run a module, like python -m")
    run.add_argument("script", nargs="?", help="the Python script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    run.set_defaults(func=cmd_run)

    default_trace = os.environ.get(ENV_DIR) or DEFAULT_TRACE_DIR
    show = sub.add_parser("show", help="print a trace's passes and diffs", description=cmd_show.__doc__)
    show.add_argument("trace", nargs="?", default=default_trace, help="run folder, script folder or trace root (latest run)")
    show.add_argument("-k", "--kernel", help="kernel id (k1), name or number")
    show.add_argument("-p", "--pass", dest="pass_", help="only this pass (sequence number or name)")
    show.add_argument("--ir", metavar="PASS", help="print the IR after PASS (the source, for a codegen step)")
    show.add_argument("--changed", action="store_true", help="hide passes that changed nothing")
    show.add_argument("--no-diff", action="store_true", help="the pass table only")
    show.add_argument("--no-source", action="store_true", help="do not print generated source")
    show.add_argument("-U", "--context", type=int, default=3, help="lines of context around changes (default 3)")
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    show.set_defaults(func=cmd_show)

    lst = sub.add_parser("list", help="list the kernels (and passes) of a trace", description=cmd_list.__doc__)
    lst.add_argument("trace", nargs="?", default=default_trace)
    lst.add_argument("--passes", action="store_true", help="one line per pass too")
    lst.set_defaults(func=cmd_list)

    report = sub.add_parser("report", help="write the HTML report of a trace", description=cmd_report.__doc__)
    report.add_argument("trace", nargs="?", default=default_trace)
    report.add_argument("-o", "--output", help="where to write it (default <run>/report.html)")
    report.set_defaults(func=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (TraceNotFound, LookupError) as exc:
        return _fail(str(exc).strip("'\""))
    except BrokenPipeError:
        return 0
