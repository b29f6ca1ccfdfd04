"""``lower-trace run``: a script (or -m module) run as python runs it, with tracing on."""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from collections.abc import Callable
from types import CodeType, ModuleType
from typing import Any

from lower_trace.cli.selection import UsageError
from lower_trace.config import DEFAULT_TRACE_DIR, ENV_DIR, ENV_MODE, MODES, Config, ConfigError, parse_mode


def cmd_run(args: argparse.Namespace) -> int:
    """Run a Python script (or -m module) with tracing on, like TL_LOWER_TRACE=<mode> python script.py."""
    mode = _mode(args.mode)
    script, argv, path0 = _target(args)  # every mistake about the script is one line, before anything runs
    from lower_trace import api  # noqa: F401 -- the tracer imported before the variables below are set, as it always was

    config = _config(mode, args.dir)
    # As python does: argv and sys.path[0] are the script's (or, for -m, the current folder).
    sys.argv = argv
    if not getattr(sys.flags, "safe_path", False):  # python -P / PYTHONSAFEPATH: no such folder on the path
        sys.path[0] = path0
    if script is not None:
        return _run_script(script, config)
    return _run_module(args.module, config)


def _mode(given: str) -> str:
    """--mode, which must turn tracing on."""
    try:
        mode = parse_mode(given)
    except ConfigError:
        raise UsageError(f"--mode {given!r} is not a mode; use one of {', '.join(MODES)}") from None
    if mode is None:
        raise UsageError("--mode must turn tracing on: terminal, html or both")
    return mode


def _target(args: argparse.Namespace) -> tuple[_Script | None, list[str], str]:
    """What runs (the script, or None for -m), its sys.argv and its sys.path[0]."""
    if not args.module and not args.script:
        raise UsageError("name a script to run: lower-trace run kernel.py [args...] (or -m module)")
    if args.module:
        # argparse hands the module's first argument to `script`: give it back.
        return None, [args.module, *([args.script] if args.script else []), *args.args], os.getcwd()
    script = _Script(args.script)
    return script, [args.script, *args.args], script.path0


def _config(mode: str, folder: str | None) -> Config:
    """The configuration the run traces with, from the environment, set as the variables would set it."""
    from lower_trace.config import config_from_env

    # Children the script starts are traced too, exactly as with the variable.
    os.environ[ENV_MODE] = mode
    if folder:
        os.environ[ENV_DIR] = folder
    try:
        return config_from_env(origin="cli", dir_origin="cli" if folder else "env")
    except ConfigError as exc:  # e.g. a bad TL_LOWER_TRACE_FILTER
        raise UsageError(str(exc)) from None


def _run_script(script: _Script, config: Config) -> int:
    from lower_trace import api

    try:
        code, module = script.load()
    except (SyntaxError, ValueError) as exc:  # shown as python shows it, before tracing starts
        return _report_user_error(exc)
    api.start(config)  # after sys.argv: the trace folder is named after the script
    sys.modules["__main__"] = module  # pickle and multiprocessing find the script's objects there
    return _run_user_code(lambda: exec(code, module.__dict__))


def _run_module(name: str, config: Config) -> int:
    from lower_trace import api

    api.start(config)
    try:
        _check_module(name)  # may import the module's parent packages: traced, as python -m runs them
    except UsageError:
        api.disable()  # nothing ran: no "nothing was compiled" message either
        raise
    return _run_user_code(lambda: runpy.run_module(name, run_name="__main__", alter_sys=True))


class _Script:
    """A script python would run: a file, or a folder / zip file holding __main__.py.
    Checked as python checks it; every mistake is a UsageError (one line, exit 2)."""

    def __init__(self, given: str) -> None:
        self.given = given
        # python makes the script's path absolute without normalising it ("/cwd/./k.py") ...
        self.path = given if os.path.isabs(given) else os.path.join(os.getcwd(), given)
        _check_script(given)
        self.is_file = os.path.isfile(given) and not _is_zip(given)
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


def _check_script(given: str) -> None:
    """A UsageError for what python would not run: nothing there, a folder without __main__.py, a
    device or such, a file that cannot be read."""
    if not os.path.exists(given):
        raise UsageError(f"{given}: no such script")
    if os.path.isdir(given) and not os.path.isfile(os.path.join(given, "__main__.py")):
        raise UsageError(f"{given} is a folder without a __main__.py; name a Python script: lower-trace run kernel.py")
    if not os.path.isdir(given) and not os.path.isfile(given):
        raise UsageError(f"{given}: not a file; name a Python script")
    try:
        with open(os.path.join(given, "__main__.py") if os.path.isdir(given) else given, "rb"):
            pass
    except OSError as exc:
        raise UsageError(f"{given}: cannot read it ({exc.strerror or exc})") from None


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
_RUNNER_FILES = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep, runpy.__file__ or "<runpy>", "<frozen runpy>", "<frozen importlib.")


def _report_user_error(exc: BaseException) -> int:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_RUNNER_FILES):
        tb = tb.tb_next
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)
    return 130 if isinstance(exc, KeyboardInterrupt) else 1


def add_parser(sub: Any) -> None:
    run = sub.add_parser("run", help="run a script with tracing on", description=cmd_run.__doc__)
    run.add_argument("--mode", default="html", help=f"one of {', '.join(MODES)} (default html)")
    run.add_argument("--dir", help=f"trace folder (default ${ENV_DIR} or {DEFAULT_TRACE_DIR})")
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module, like python -m")
    run.add_argument("script", nargs="?", help="the Python script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    run.set_defaults(func=cmd_run)
