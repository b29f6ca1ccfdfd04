"""What a command names on its command line: kernels, passes, RUN:KERNEL selectors; bad names are UsageErrors."""

from __future__ import annotations

import os
import re

from lower_trace.config import default_trace_dir
from lower_trace.model import CodegenRecord, KernelTrace, PassRecord, Trace
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


def step_name(step: PassRecord | CodegenRecord) -> str:
    return step.function if isinstance(step, CodegenRecord) else step.name


def name_pattern(key: str) -> re.Pattern[str] | None:
    try:
        return re.compile(key, re.IGNORECASE)
    except re.error:
        return None


def select_steps(kernels: list[KernelTrace], key: str) -> dict[str, list[PassRecord | CodegenRecord]]:
    """The steps PASS names, per kernel: a sequence number; else the exact name; else the name
    without its namespace (LowerTileOp for tl.LowerTileOp); else a regex searched in the names
    (case-insensitive). The first of these that matches anything decides, in every kernel alike."""
    if key.isdigit():
        return {k.kernel_id: [s for s in k.steps if s.seq == int(key)] for k in kernels}
    pattern = name_pattern(key)
    tests = (
        lambda name: name == key,
        lambda name: name.rsplit(".", 1)[-1] == key,
        lambda name: pattern is not None and pattern.search(name) is not None,
    )
    chosen: dict[str, list[PassRecord | CodegenRecord]] = {}
    for test in tests:
        chosen = {k.kernel_id: [s for s in k.steps if test(step_name(s))] for k in kernels}
        if any(chosen.values()):
            break
    return chosen


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
