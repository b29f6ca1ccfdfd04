"""The ``lower-trace`` command: the parser assembled from each command family's module
(run_script, traces, edits, answers, where_command, repro_command, bisect_command, device_command,
reduce_command, regress_command), and the one-line errors."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any, NoReturn

from lower_trace import __version__
from lower_trace.cli import answers, bisect_command, device_command, edits, reduce_command, regress_command, repro_command, run_script, traces, where_command
from lower_trace.cli.selection import UsageError
from lower_trace.store.layout import TraceNotFound
from lower_trace.store.reader import TraceDamaged


def _fail(message: str) -> int:
    sys.stderr.write(f"lower-trace: error: {message}\n")
    return 2


class _Parser(argparse.ArgumentParser):
    """Usage mistakes are one line, as every other error of lower-trace (argparse prints its usage block).
    A command made with intermixed=True takes its positionals after its options too (`blame DIR -k K
    REGEX`, `where DIR -k K FILE:LINE`): argparse's parse_intermixed_args, which a subcommand only gets
    when its own parser asks for it."""

    def __init__(self, *args: Any, intermixed: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._intermixed = intermixed
        self._parsing_intermixed = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride] -- one body for typeshed's overloads
        if not self._intermixed or self._parsing_intermixed:  # parse_known_intermixed_args calls this twice itself
            return super().parse_known_args(args, namespace)
        self._parsing_intermixed = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._parsing_intermixed = False

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lower-trace",
        description="See what every TileLang / TVM compiler pass does to your kernel.",
    )
    parser.add_argument("--version", action="version", version=f"lower-trace {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    # In the order --help lists them.
    run_script.add_parser(sub)
    traces.add_parsers(sub)
    edits.add_parser(sub)
    answers.add_parsers(sub)
    where_command.add_parser(sub)
    device_command.add_parser(sub)
    reduce_command.add_parser(sub)
    repro_command.add_parsers(sub)
    bisect_command.add_parser(sub)
    regress_command.add_parser(sub)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A damaged trace is one line on stderr, in lower-trace's own words; other warnings as Python shows them."""
    if issubclass(category, TraceDamaged):
        sys.stderr.write(f"lower-trace: warning: {message}\n")
    else:
        _python_showwarning(message, category, filename, lineno, file, line)


_python_showwarning = warnings.showwarning


def _no_tracing_of_its_own() -> None:
    """A TL_LOWER_TRACE left exported switches tracing on in this very process (the startup hook): a command
    that reads traces compiles nothing of the user's, so that run is closed unsaid (no "no kernel was
    compiled" line after every command). Tracing the API started (a notebook, a test) is left alone."""
    from lower_trace import api

    run = api.current_run()
    if run is not None and run.config.origin == "env":
        api.disable()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        command = f"{parser.prog} {args.command}" if getattr(args, "command", None) else parser.prog
        parser.exit(2, f"{command}: error: unrecognized arguments: {' '.join(extra)} (see {command} --help)\n")
    try:
        if args.func is run_script.cmd_run:
            return run_script.cmd_run(args)  # the user's program: its warnings (and exceptions) are its own
        _no_tracing_of_its_own()
        with warnings.catch_warnings():
            warnings.simplefilter("always", TraceDamaged)
            warnings.showwarning = _show_warning
            return int(args.func(args) or 0)
    except (UsageError, TraceNotFound, LookupError) as exc:
        return _fail(exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc))
    except BrokenPipeError:
        return 0
