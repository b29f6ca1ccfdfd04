"""What a command names on its command line: kernels, passes, RUN:KERNEL selectors, a command after --; bad names are UsageErrors."""

from __future__ import annotations

import os
import re

from lower_trace.analysis.queries import name_pattern
from lower_trace.config import default_trace_dir
from lower_trace.model import KernelTrace, Trace, kernel_list
from lower_trace.store.reader import load_trace


class UsageError(Exception):
    """Bad input on the command line: one line, exit status 2."""


def kernels_of(trace: Trace, key: str | None) -> list[KernelTrace]:
    if not key:
        return list(trace.kernels)
    try:
        return trace.kernels_for(key)  # a name shared by a sweep's variants selects them all
    except LookupError as exc:
        raise UsageError(f"{trace.path}: {exc}") from None


def one_kernel(trace: Trace, kernels: list[KernelTrace], what: str) -> KernelTrace:
    """The one kernel a command that reads one (blame, where, show --ir) was given, or a UsageError listing them."""
    if len(kernels) != 1:
        raise UsageError(f"{trace.path}: {what} needs one kernel; pick it by id with -k: {kernel_list(kernels)}")
    return kernels[0]


def regex(pattern: str, option: str = "") -> re.Pattern[str]:
    """A regex the command line gives (after option, if named), or the one-line error it is not one."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"{option + ' ' if option else ''}{pattern!r} is not a valid regex ({exc})") from None


def no_pass(trace: Trace, key: str, where: str) -> UsageError:
    hint = "" if name_pattern(key) is not None else f" ({key!r} is not a valid regex either)"
    return UsageError(
        f"{trace.path}: no pass {key!r} in {where}{hint}; give a number, a name with or without its prefix"
        f" (tl.LowerTileOp, LowerTileOp) or a regex; `lower-trace list --passes {trace.path}` lists them"
    )


def selected(arg: str) -> tuple[Trace, list[KernelTrace]]:
    """RUN[:KERNEL]: a run, script or root folder (its latest run), and optionally a kernel
    (id, name or number) of it; an empty RUN (":k2") is the default trace folder."""
    path, kernel = arg, None
    if not os.path.exists(arg) and ":" in arg:
        path, kernel = arg.rsplit(":", 1)
    trace = load_trace(path or default_trace_dir())
    return trace, kernels_of(trace, kernel or None)


def after_dashes(command: list[str]) -> list[str]:
    """The command given after -- (argparse's REMAINDER keeps the -- when an option came before it)."""
    return command[1:] if command and command[0] == "--" else list(command)
