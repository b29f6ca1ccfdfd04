"""``lower-trace where``: the lines of the final TIR and of the generated source that come from a
line of the user's program, and the passes that changed them; also what ``blame --source`` and
``show --ir --origins`` need (the origins of one kernel, or a one-line reason there are none)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from lower_trace.analysis import queries
from lower_trace.analysis.origins import KernelOrigins, trace_origins
from lower_trace.cli.options import add_kernel, add_trace, print_json
from lower_trace.cli.selection import UsageError, kernels_of, one_kernel
from lower_trace.config import default_trace_dir
from lower_trace.model import KernelTrace, Trace
from lower_trace.render import origins_view
from lower_trace.store.reader import load_trace


def origins_of(trace: Trace, kernel: KernelTrace) -> KernelOrigins:
    """The kernel's origins; a UsageError (one line, what to do) when the trace holds none."""
    result = trace_origins(trace, kernel)
    reason = origins_view.no_origins_reason(result, trace.run.notes)
    if reason:
        said = reason if "your program" in reason else f"{reason}; its lines cannot be traced to your program"
        raise UsageError(f"{trace.path}: kernel {kernel.kernel_id} ({kernel.name}): {said}")
    return result


def _location(text: str) -> tuple[str, int]:
    file, sep, line = text.rpartition(":")
    if not sep or not line.isdigit() or not file:
        raise UsageError(f"{text!r}: give a line of your program as FILE:LINE, e.g. my_kernel.py:29")
    return file, int(line)


def _matches(file: str, wanted: str) -> bool:
    """A traced file named by the user: the same path, or the same tail (kernels.py, testing/kernels.py)."""
    if os.path.abspath(wanted) == file:
        return True
    tail = os.path.normpath(wanted)
    return file == tail or file.endswith(os.sep + tail)


def cmd_where(args: argparse.Namespace) -> int:
    """The lines of the final TIR and of the generated source that come from FILE:LINE of your
    program, and, in order, the passes that made, changed, duplicated or removed them. Exit status
    0 when some line comes from it, 1 when none does."""
    if args.location is None:
        if os.path.exists(args.trace) or not re.search(r":\d+$", args.trace):
            raise UsageError("where needs a line of your program: lower-trace where [TRACE] -k KERNEL FILE:LINE")
        args.trace, args.location = default_trace_dir(), args.trace  # `where -k K FILE:LINE`: the default folder
    trace = load_trace(args.trace)
    kernel = one_kernel(trace, kernels_of(trace, args.kernel), "where")
    wanted, line = _location(args.location)
    result = origins_of(trace, kernel)
    file = _traced_file(trace, kernel, queries.traced_files(result), wanted)
    source = trace.source_text(file)
    if source is not None and line > len(source.splitlines()):
        raise UsageError(f"{file} had {len(source.splitlines())} lines when kernel {kernel.kernel_id} was traced; line {line} is past its end")
    answer = queries.where_answer(result, kernel, file, line, source)
    said = (kernel, file, line, answer.final, answer.sources, answer.events, answer.helper, answer.called)
    if args.json:
        print_json(origins_view.where_json(*said))
    else:
        origins_view.write_where(sys.stdout, *said)
    return 0 if answer.found else 1


def _traced_file(trace: Trace, kernel: KernelTrace, files: list[str], wanted: str) -> str:
    """The one traced file FILE names, or a UsageError listing the files the kernel's lines come from."""
    named = [file for file in files if _matches(file, wanted)]
    if not named:
        raise UsageError(f"{trace.path}: no line of kernel {kernel.kernel_id} comes from {wanted}; its lines come from {', '.join(files) or 'no file'}")
    if len(named) > 1:
        raise UsageError(f"{wanted} names {len(named)} traced files ({', '.join(named)}); give more of the path")
    return named[0]


def add_parser(sub: Any) -> None:
    where = sub.add_parser(
        "where", intermixed=True, help="which lines of the IR and generated source come from a line of your program", description=cmd_where.__doc__,
    )
    add_trace(where)
    where.add_argument("location", nargs="?", metavar="FILE:LINE", help="a line of your program, e.g. my_kernel.py:29 (the path's tail is enough)")
    add_kernel(where)
    where.add_argument("--json", action="store_true", help="the answer as JSON")
    where.set_defaults(func=cmd_where)
