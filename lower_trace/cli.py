"""The ``lower-trace`` command: each subcommand is a few lines over the public API."""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import time
import warnings
from collections.abc import Callable
from types import CodeType, ModuleType
from typing import Any, NoReturn

from . import __version__
from .cli_answers import cmd_blame, cmd_diff, print_json, show_timing
from .cli_bisect import add_parser as add_bisect_parser
from .cli_rerun import add_parsers as add_rerun_parsers
from .cli_select import UsageError, kernels_of, no_pass, select_steps, step_name
from .config import DEFAULT_TRACE_DIR, ENV_DIR, ENV_MODE, MODES, ConfigError, default_trace_dir, parse_mode
from .model import CodegenRecord, kernel_list
from .store import TraceDamaged, TraceNotFound, list_runs, load_trace


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
        raise UsageError("name a script to run: lower-trace run kernel.py [args...] (or -m module)")
    script = None
    if args.module:
        # argparse hands the module's first argument to `script`: give it back.
        argv = [args.module, *([args.script] if args.script else []), *args.args]
        path0 = os.getcwd()
    else:
        script = _Script(args.script)  # every mistake about the script is one line, before anything runs
        argv = [args.script, *args.args]
        path0 = script.path0
    from . import api
    from .config import config_from_env

    # Children the script starts are traced too, exactly as with the variable.
    os.environ[ENV_MODE] = mode
    if args.dir:
        os.environ[ENV_DIR] = args.dir
    try:
        config = config_from_env(origin="cli", dir_origin="cli" if args.dir else "env")
    except ConfigError as exc:  # e.g. a bad TL_LOWER_TRACE_FILTER
        raise UsageError(str(exc)) from None
    # As python does: argv and sys.path[0] are the script's (or, for -m, the current folder).
    sys.argv = argv
    if not getattr(sys.flags, "safe_path", False):  # python -P / PYTHONSAFEPATH: no such folder on the path
        sys.path[0] = path0
    if script is not None:
        try:
            code, module = script.load()
        except (SyntaxError, ValueError) as exc:  # shown as python shows it, before tracing starts
            return _report_user_error(exc)
        api._start(config)  # after sys.argv: the trace folder is named after the script
        sys.modules["__main__"] = module  # pickle and multiprocessing find the script's objects there
        return _run_user_code(lambda: exec(code, module.__dict__))
    api._start(config)
    try:
        _check_module(args.module)  # may import the module's parent packages: traced, as python -m runs them
    except UsageError:
        api.disable()  # nothing ran: no "nothing was compiled" message either
        raise
    return _run_user_code(lambda: runpy.run_module(args.module, run_name="__main__", alter_sys=True))


class _Script:
    """A script python would run: a file, or a folder / zip file holding __main__.py.
    Checked as python checks it; every mistake is a UsageError (one line, exit 2)."""

    def __init__(self, given: str) -> None:
        self.given = given
        # python makes the script's path absolute without normalising it ("/cwd/./k.py") ...
        self.path = given if os.path.isabs(given) else os.path.join(os.getcwd(), given)
        if not os.path.exists(given):
            raise UsageError(f"{given}: no such script")
        self.is_file = os.path.isfile(given) and not _is_zip(given)
        if os.path.isdir(given) and not os.path.isfile(os.path.join(given, "__main__.py")):
            raise UsageError(f"{given} is a folder without a __main__.py; name a Python script: lower-trace run kernel.py")
        if not os.path.isdir(given) and not os.path.isfile(given):
            raise UsageError(f"{given}: not a file; name a Python script")
        try:
            with open(given if self.is_file or not os.path.isdir(given) else os.path.join(given, "__main__.py"), "rb"):
                pass
        except OSError as exc:
            raise UsageError(f"{given}: cannot read it ({exc.strerror or exc})") from None
        # ... and puts the folder of the real file (symlinks resolved), or the folder / zip itself, first on sys.path.
        self.path0 = os.path.dirname(os.path.realpath(self.path)) if self.is_file else self.path

    def load(self) -> tuple[CodeType, ModuleType]:
        """The code to run and the __main__ module to run it in, with the attributes python gives it."""
        import builtins
        import importlib.machinery
        import importlib.util

        if self.is_file:
            with open(self.given, "rb") as handle:
                code = compile(handle.read(), self.path, "exec", dont_inherit=True)
            module = ModuleType("__main__")
            loader = importlib.machinery.SourceFileLoader("__main__", self.path)
            module.__dict__.update(__file__=self.path, __cached__=None, __builtins__=builtins, __loader__=loader, __spec__=None, __package__=None)
            return code, module
        # A folder or zip file: its __main__ module, found by the import system as python finds it.
        spec = importlib.machinery.PathFinder.find_spec("__main__", [self.path])
        get_code = getattr(spec.loader, "get_code", None) if spec is not None else None
        code = get_code("__main__") if get_code is not None else None
        if spec is None or code is None:
            raise UsageError(f"{self.given}: no __main__ module in it; name a Python script")
        return code, importlib.util.module_from_spec(spec)


def _is_zip(path: str) -> bool:
    import zipfile

    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def _check_module(name: str) -> None:
    """What python -m says when there is nothing to run, as one line."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None and importlib.util.find_spec(f"{name}.__main__") is None:
            raise UsageError(f"-m {name}: {name!r} is a package without a __main__ module; it cannot be run")
    except UsageError:
        raise
    except ImportError as exc:
        raise UsageError(f"-m {name}: {exc.msg or exc}") from None
    except Exception as exc:  # the package's own code raised while it was looked up: python -m says so in one line too
        raise UsageError(f"-m {name}: error while finding the module ({type(exc).__name__}: {exc})") from None
    if spec is None:
        raise UsageError(f"-m {name}: no module named {name!r}")


def _run_user_code(run: Callable[[], object]) -> int:
    """Run the user's program; its exception is printed as python prints it, exit status 1."""
    try:
        run()
    except SystemExit:
        raise  # sys.exit() in the script: its status, as under python
    except BaseException as exc:  # the script's own exception, reported as python reports it
        return _report_user_error(exc)
    return 0


# Frames of lower-trace and of runpy / the import machinery, above the user's first frame.
_RUNNER_FILES = (os.path.dirname(os.path.abspath(__file__)) + os.sep, runpy.__file__ or "<runpy>", "<frozen runpy>", "<frozen importlib.")


def _report_user_error(exc: BaseException) -> int:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_RUNNER_FILES):
        tb = tb.tb_next
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)
    return 130 if isinstance(exc, KeyboardInterrupt) else 1


def cmd_show(args: argparse.Namespace) -> int:
    """Print a stored trace in the terminal: the pass table, the diffs, the generated source."""
    from .render.terminal import TerminalRenderer

    trace = load_trace(args.trace)
    kernels = kernels_of(trace, args.kernel)
    if args.timing:
        if args.changed or args.no_diff or args.no_source:
            raise UsageError("--timing shows every step's time; --changed, --no-diff and --no-source do not apply to it")
        return show_timing(trace, kernels, args.json)
    color = True if args.color == "always" else False if args.color == "never" else None
    renderer = TerminalRenderer(sys.stdout, color=color, context=args.context)
    renderer.trace_path = trace.path
    if args.ir is not None:
        if len(kernels) != 1:
            raise UsageError(f"{trace.path}: --ir needs one kernel; pick it by id with -k: {kernel_list(kernels)}")
        kernel = kernels[0]
        steps = select_steps(kernels, args.ir)[kernel.kernel_id]
        if not steps:
            raise no_pass(trace, args.ir, f"kernel {kernel.kernel_id} ({kernel.name})")
        if len(steps) > 1:
            if len({step_name(s) for s in steps}) == 1:
                said, numbers = f"are named {step_name(steps[0])!r}", ", ".join(str(s.seq) for s in steps)
            else:
                said, numbers = f"match {args.ir!r}", ", ".join(f"{s.seq} ({step_name(s)})" for s in steps)
            raise UsageError(f"{trace.path}: {len(steps)} passes of kernel {kernel.kernel_id} {said}; pick one by number: {numbers}")
        step = steps[0]
        digest = step.source if isinstance(step, CodegenRecord) else (step.after or step.before)
        if args.json:
            from .render.json_view import kernel_json, step_json

            print_json({"kernel": kernel_json(kernel), "step": step_json(step, trace.snapshot), "text": trace.snapshot(digest)})
            return 0
        renderer.render_snapshot(trace.snapshot(digest))
        return 0
    only: dict[str, set[int]] | None = None
    if args.pass_:
        only = {kernel_id: {s.seq for s in steps} for kernel_id, steps in select_steps(kernels, args.pass_).items()}
        if not any(only.values()):
            raise no_pass(trace, args.pass_, f"kernel {kernels[0].kernel_id} ({kernels[0].name})" if len(kernels) == 1 else "this run")
    if args.json:
        from .render.json_view import showing

        print_json(showing(trace, kernels, only, args.changed))
        return 0
    for kernel in kernels:
        if only is not None and not only[kernel.kernel_id]:
            continue  # the pass is not in this kernel: no empty table for it
        renderer.render_kernel(
            kernel,
            trace.snapshot,
            show_diffs=not args.no_diff,
            only=None if only is None else only[kernel.kernel_id],
            changed_only=args.changed,
            show_source=not (args.no_source or args.no_diff),
        )
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """One line per kernel of the latest run (per pass with --passes; per run with --runs)."""
    from .render.terminal import kernel_state, printable, status_label

    if args.runs:
        runs = list_runs(args.trace)
        if not runs:
            load_trace(args.trace)  # raises the one-line "no trace here" error
        if args.json:
            print_json({"schema": 1, "runs": [_run_entry(run_dir) for run_dir in runs]})
            return 0
        loaded: list[tuple[str, Any]] = []
        for run_dir in runs:
            try:
                loaded.append((run_dir, load_trace(run_dir)))
            except TraceNotFound as exc:
                loaded.append((run_dir, exc))
        # A titled run (a test of pytest --lower-trace) shows its title: the node id, as pytest names the test.
        titles = {run_dir: printable(t.run.title) for run_dir, t in loaded if not isinstance(t, TraceNotFound) and t.run.title}
        width = max(map(len, titles.values()), default=0)
        for run_dir, trace in loaded:
            if isinstance(trace, TraceNotFound):
                print(f"{'(unreadable)':<19}  {printable(str(trace))}")
                continue
            started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(trace.run.started))
            states = [kernel_state(k) for k in trace.kernels]
            failed = sum(1 for state in states if state in ("failed", "compile failed"))
            unfinished = states.count("did not finish")
            count = len(states)
            title = f"{titles.get(run_dir, ''):<{width}}  " if width else ""
            line = f"{started}  {count:>3} {'kernel ' if count == 1 else 'kernels'} {failed:>2} failed  {title}{printable(run_dir)}"
            print(line + (f"  ({unfinished} did not finish)" if unfinished else ""))
        return 0
    trace = load_trace(args.trace)
    if args.json:
        from .render.json_view import listing

        print_json(listing(trace, args.passes))
        return 0
    run = trace.run
    named = printable(run.title) if run.title else f"script {printable(run.script)}"
    print(f"run {printable(run.run_id)}  {named}  {printable(trace.path)}")
    for kernel in trace.kernels:
        state = kernel_state(kernel)
        count = len(kernel.passes)
        failed = f" {kernel.failed_count:>2} failed" if kernel.failed_count or state == "ok" else " " * 10
        took = "" if state == "did not finish" else f" {kernel.ms:>8.1f} ms"
        # Which variant: its working copy, as `lower-trace edits` names it, and what became of it.
        edited = sorted({c.edit_status for c in kernel.codegen if c.edit_status and c.edit_status != "SYNCED"})
        variant = "  " + " ".join([kernel.working_copy, *edited]) if kernel.working_copy else ""
        print(
            f"  {kernel.kernel_id:<4} {printable(kernel.name):<24} {printable(kernel.target):<20} {state:<14}"
            f" {count:>3} {'pass  ' if count == 1 else 'passes'} {kernel.changed_count:>3} changed{failed}{took}{printable(variant)}".rstrip()
        )
        if args.passes:
            for step in kernel.steps:
                if isinstance(step, CodegenRecord):
                    print(f"      {step.seq:>4} {step.role + ' codegen':<22} {printable(step.function)}  {status_label(step)}")
                else:
                    print(f"      {step.seq:>4} {printable(step.phase):<22} {'  ' * step.depth}{printable(step.name)}  {status_label(step)}")
    return 0


def _run_entry(run_dir: str) -> dict[str, object]:
    """One run of `list --runs --json`: its counts, or why it could not be read."""
    from .render.terminal import kernel_state

    try:
        trace = load_trace(run_dir)
    except TraceNotFound as exc:
        return {"path": run_dir, "error": str(exc)}
    states = [kernel_state(k) for k in trace.kernels]
    entry: dict[str, object] = {
        "path": run_dir, "run_id": trace.run.run_id, "started": trace.run.started, "kernels": len(states),
        "failed": sum(1 for state in states if state in ("failed", "compile failed")), "unfinished": states.count("did not finish"),
    }
    if trace.run.title:
        entry["title"] = trace.run.title
    return entry


def cmd_report(args: argparse.Namespace) -> int:
    """(Re)build the HTML report of a trace, also of one whose process was killed."""
    from .render.html import write_report
    from .render.progress import Progress
    from .store import find_run_dir

    run_dir = find_run_dir(args.trace)
    output = args.output
    if output and os.path.isdir(output):
        output = os.path.join(output, "report.html")
    if output and not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        raise UsageError(f"-o {args.output}: the folder {os.path.dirname(os.path.abspath(output))} does not exist")
    bar: Progress | None = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = Progress(sys.stderr, total, "writing the report")
        bar.update(done)

    try:
        path = write_report(run_dir, output, progress=progress)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {exc.filename or output or run_dir}: {exc.strerror or exc}") from None
    finally:
        if bar is not None:
            bar.close()
    print(f"file://{path}")
    return 0


def _script_dirs(path: str) -> list[str]:
    """Script folders holding working copies, from a run folder, a script folder, its
    edits/ folder or a file in it, or the trace root (every script below it)."""
    from .store import EDITS, MANIFEST

    folder = os.path.normpath(path)
    if os.path.isfile(folder):  # a run's manifest, or a working copy
        folder = os.path.dirname(folder) or "."
    if os.path.isdir(os.path.join(folder, EDITS)):
        return [folder]
    if os.path.basename(folder) == EDITS and os.path.isdir(folder):
        return [os.path.dirname(folder) or "."]
    if os.path.isfile(os.path.join(folder, MANIFEST)):  # a run folder: its script's working copies
        parent = os.path.normpath(os.path.join(folder, os.pardir))
        return [parent] if os.path.isdir(os.path.join(parent, EDITS)) else []
    try:
        children = sorted(entry.path for entry in os.scandir(folder) if entry.is_dir())
    except OSError:
        raise UsageError(f"{path}: no such directory; pass a trace folder (default {DEFAULT_TRACE_DIR})") from None
    return [child for child in children if os.path.isdir(os.path.join(child, EDITS))]


def cmd_edits(args: argparse.Namespace) -> int:
    """List the editable generated sources (working copies): which kernel variant each is
    for, whether you edited it, and whether it is stale (its edit failed to compile, or the
    kernel's code moved on without it); or --reset one kernel's (or one file's)."""
    from .edit_entries import CODE_CHANGED as STALE_CODE
    from .edit_entries import FAILED as STALE_FAILED
    from .override import EditStore
    from .render.terminal import printable

    stores = [EditStore(folder) for folder in _script_dirs(args.trace)]
    if not stores:
        raise UsageError(f"{args.trace}: no working copies here yet; run your script with TL_LOWER_TRACE=html first")
    if args.reset:
        matching = [s for s in stores if any(args.reset in (e["kernel"], e["file"], os.path.splitext(e["file"])[0]) for e in s.entries())]
        if len(matching) > 1:
            folders = ", ".join(os.path.dirname(s.root) for s in matching)
            raise UsageError(
                f"several scripts have working copies for {args.reset!r}; name one: lower-trace edits FOLDER --reset {args.reset} (folders: {folders})"
            )
        done = [item for store in matching for item in store.reset(args.reset)]
        if not done:
            known = sorted({e["kernel"] for store in stores for e in store.entries()})
            raise UsageError(f"no working copy for {args.reset!r}; kernels: {', '.join(known)}")
        for path, backup in done:
            print(f"{path}: back to the generated source" + (f" (your edit is saved in {backup})" if backup else ""))
        return 0
    stale = set()
    for store in stores:
        entries = store.entries()
        print(printable(store.root))
        width = max([len(e["file"]) for e in entries] + [12])
        kernel_width = max([len(printable(e["kernel"])) for e in entries] + [6])
        marks = {e["file"]: f"stale: {e['stale']}" if e["stale"] else "" for e in entries}
        mark_width = max(len(m) for m in marks.values()) if entries else 0
        for entry in entries:
            # What tells the copy apart: its literals (constants, tiles), its code or its buffers.
            mark = f"{marks[entry['file']]:<{mark_width}}  " if mark_width else ""
            kernel, variant = printable(entry["kernel"]), printable(entry["variant"])
            print(f"  {entry['file']:<{width}}  {kernel:<{kernel_width}}  {entry['role']:<6}  {entry['state']:<12}  {mark}{variant}")
        stale.update(e["stale"] for e in entries if e["stale"])
    if STALE_FAILED in stale:
        print(f"{STALE_FAILED}: the last compile with this edit, as the file is now, failed; fix it, or `lower-trace edits --reset FILE`")
    if STALE_CODE in stale:
        print(f"{STALE_CODE}: the kernel's code changed and this variant was not compiled since; compiled with the new code, it takes this copy over")
    return 0


class _Parser(argparse.ArgumentParser):
    """Usage mistakes are one line, as every other error of lower-trace (argparse prints its usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
    which.add_argument("--timing", action="store_true", help="ms, self ms and IR lines per step (one kernel); the slowest steps over the run (several)")
    show.add_argument("--changed", action="store_true", help="hide passes that changed nothing")
    show.add_argument("--no-diff", action="store_true", help="the pass table only (no diffs, no generated source)")
    show.add_argument("--no-source", action="store_true", help="do not print generated source")
    show.add_argument("-U", "--context", type=int, default=3, help="lines of context around changes (default 3)")
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    show.add_argument("--json", action="store_true", help="the kernels and their steps as JSON (with -p, the IR texts too)")
    show.set_defaults(func=cmd_show)

    lst = sub.add_parser("list", help="list the kernels (and passes) of a trace", description=cmd_list.__doc__)
    lst.add_argument("trace", nargs="?", default=default_trace, help=trace_help)
    lst.add_argument("--passes", action="store_true", help="one line per pass too")
    lst.add_argument("--runs", action="store_true", help="every run under the folder, oldest first")
    lst.add_argument("--json", action="store_true", help="the same as JSON (docs/trace-format.md)")
    lst.set_defaults(func=cmd_list)

    edits = sub.add_parser("edits", help="list or reset the editable generated sources", description=cmd_edits.__doc__)
    edits.add_argument("trace", nargs="?", default=default_trace, help="a run folder, a script folder or the trace root (every script in it)")
    edits.add_argument("--reset", metavar="KERNEL", help="return KERNEL's working copies (or one FILE's) to the generated source; edits are kept aside")
    edits.set_defaults(func=cmd_edits)

    blame = sub.add_parser("blame", help="which pass made a line of the IR", description=cmd_blame.__doc__)
    blame.add_argument("trace", nargs="?", default=default_trace, help=trace_help)
    blame.add_argument("pattern", nargs="?", metavar="PATTERN", help="a regex: the history of the lines it matches")
    blame.add_argument("-k", "--kernel", help="kernel id (k1), name or number")
    blame.add_argument("--ir", metavar="PASS", help="blame the IR after PASS (default: the final TIR)")
    blame.add_argument("--json", action="store_true", help="the answer as JSON")
    blame.set_defaults(func=cmd_blame)

    diff = sub.add_parser("diff", help="compare two compiles pass by pass", description=cmd_diff.__doc__)
    diff.add_argument("a", metavar="A", help="RUN or RUN:KERNEL (a run, script or root folder; a kernel id, name or number; :KERNEL alone: the default folder)")
    diff.add_argument("b", metavar="B", help="the same for the other compile (also another kernel of the same run)")
    diff.add_argument("--ignore", action="append", default=[], metavar="REGEX", help="remove matches before comparing (repeatable)")
    diff.add_argument(
        "--up-to-renaming", action="store_true",
        help="texts that differ only in a consistent renaming of identifiers (A_shared / A_s, k / k_1) count as the same",
    )
    diff.add_argument("--json", action="store_true", help="the comparison as JSON")
    diff.add_argument("-U", "--context", type=int, default=3, help="lines of context around changes (default 3)")
    diff.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    diff.add_argument("--html", metavar="FILE", help="also write the comparison page to FILE (one offline HTML file)")
    diff.set_defaults(func=cmd_diff)

    add_rerun_parsers(sub, default_trace, trace_help)
    add_bisect_parser(sub)

    report = sub.add_parser("report", help="write the HTML report of a trace", description=cmd_report.__doc__)
    report.add_argument("trace", nargs="?", default=default_trace, help=trace_help)
    report.add_argument("-o", "--output", help="file (or folder) to write it to (default <run>/report.html)")
    report.set_defaults(func=cmd_report)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A damaged trace is one line on stderr, in lower-trace's own words; other warnings as Python shows them."""
    if issubclass(category, TraceDamaged):
        sys.stderr.write(f"lower-trace: warning: {message}\n")
    else:
        _python_showwarning(message, category, filename, lineno, file, line)


_python_showwarning = warnings.showwarning


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # `blame DIR -k K REGEX`: argparse takes a command's positionals only before its first option.
        if getattr(args, "func", None) is cmd_blame and args.pattern is None and len(extra) == 1 and not extra[0].startswith("-"):
            args.pattern = extra[0]
        else:
            command = f"{parser.prog} {args.command}" if getattr(args, "command", None) else parser.prog
            parser.exit(2, f"{command}: error: unrecognized arguments: {' '.join(extra)} (see {command} --help)\n")
    try:
        if args.func is cmd_run:
            return cmd_run(args)  # the user's program: its warnings (and exceptions) are its own
        with warnings.catch_warnings():
            warnings.simplefilter("always", TraceDamaged)
            warnings.showwarning = _show_warning
            return int(args.func(args) or 0)
    except (UsageError, TraceNotFound, LookupError) as exc:
        return _fail(exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc))
    except BrokenPipeError:
        return 0
