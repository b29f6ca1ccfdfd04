"""The commands that answer questions about traces: ``diff`` (two compiles pass by pass) and ``blame``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from lower_trace.analysis import queries
from lower_trace.cli.options import add_color, add_context, add_kernel, add_trace, color_wanted_by, print_json
from lower_trace.cli.selection import UsageError, kernels_of, no_pass, one_kernel, regex, selected
from lower_trace.config import default_trace_dir
from lower_trace.model import KernelTrace, PassRecord, Trace, kernel_list
from lower_trace.store.reader import load_trace
from lower_trace.text_safety import plural


def cmd_diff(args: argparse.Namespace) -> int:
    """Compare two compiles pass by pass: the first pass that makes them differ, the passes only
    one ran, the generated sources. Exit status 0 when identical (or, with --up-to-renaming, the
    same up to renaming), 1 when they differ."""
    from lower_trace.render.compare_view import write_pairs

    trace_a, trace_b, pairs = _diff_pairs(args)
    if len(pairs) > 1 and not args.json:
        write_pairs(sys.stdout, pairs)
    compared = queries.compare_pairs(trace_a, trace_b, pairs, args.ignore, args.up_to_renaming)
    pages = [_compare_page(args.html, trace_a, trace_b, compared[0])] if args.html else []
    try:
        _write_diff(args, trace_a, trace_b, compared)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the answer still is the exit status
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    for page in pages:
        print(f"comparison page: file://{page}", file=sys.stderr)
    return 1 if queries.any_differ(compared) else 0


def _diff_pairs(args: argparse.Namespace) -> tuple[Trace, Trace, list[tuple[KernelTrace, KernelTrace]]]:
    """diff A B: the two runs and the kernels compared, pair by pair; UsageErrors for what does not pair up."""
    for pattern in args.ignore:
        regex(pattern, "--ignore")
    trace_a, kernels_a = selected(args.a)
    trace_b, kernels_b = selected(args.b)
    if len(kernels_a) != len(kernels_b):
        raise UsageError(
            f"{args.a} has {plural(len(kernels_a), 'kernel')} and {args.b} {len(kernels_b)}; pick one of each as RUN:KERNEL "
            f"(A: {kernel_list(kernels_a)}; B: {kernel_list(kernels_b)})"
        )
    if args.html and len(kernels_a) != 1:
        raise UsageError(f"--html shows one comparison; pick one kernel of each as RUN:KERNEL (A: {kernel_list(kernels_a)})")
    return trace_a, trace_b, list(zip(kernels_a, kernels_b, strict=False))


def _compare_page(path: str, trace_a: Trace, trace_b: Trace, compared: queries.KernelComparison) -> str:
    """diff --html: the comparison page of the one pair."""
    from lower_trace.render.report.compare_page import write_compare_page

    try:
        return write_compare_page(path, compared.result, (trace_a, compared.a), (trace_b, compared.b))
    except OSError as exc:
        raise UsageError(f"--html {path}: cannot write the page ({exc.strerror or exc})") from None


def _write_diff(args: argparse.Namespace, trace_a: Trace, trace_b: Trace, compared: list[queries.KernelComparison]) -> None:
    from lower_trace.render.compare_view import as_json, render
    from lower_trace.render.device_view import device_differences_json, write_device_differences

    if args.json:
        found = [
            {**as_json(c.result, (trace_a.path, c.a), (trace_b.path, c.b)), "device": device_differences_json(c.device)}
            for c in compared
        ]
        print_json(found if len(found) != 1 else found[0])
        return
    color = color_wanted_by(args)
    for c in compared:
        render(sys.stdout, c.result, (trace_a.path, c.a), (trace_b.path, c.b), color=color, context=args.context)
        write_device_differences(sys.stdout, c.device)


def cmd_blame(args: argparse.Namespace) -> int:
    """Which pass made each line of the IR (the final TIR, or the IR after --ir PASS); with a
    PATTERN, which pass introduced the lines it matches, which later passes changed them, and
    which removed them."""
    from lower_trace.analysis.blame import blame_lines
    from lower_trace.render import blame_view, json_view

    if args.pattern is None and not os.path.exists(args.trace) and os.sep not in args.trace:
        args.trace, args.pattern = default_trace_dir(), args.trace  # `blame -k gemm REGEX`: the default folder
    trace = load_trace(args.trace)
    kernel = one_kernel(trace, kernels_of(trace, args.kernel), "blame")
    if args.source:
        return _blame_source(trace, kernel, args)
    until = _blamed_pass(trace, kernel, args.ir) if args.ir is not None else None
    changes = _history(trace, kernel, until)
    if args.pattern is not None:
        return _blame_pattern(kernel, changes, args.pattern, args.json)
    lines = blame_lines(changes)
    if args.json:
        print_json(json_view.blamed_lines(kernel, until.seq if until is not None else None, lines))
    else:
        blame_view.write_lines(sys.stdout, lines)
    return 0


def _history(trace: Trace, kernel: KernelTrace, until: PassRecord | None) -> list[Any]:
    """The kernel's IR history up to until; a UsageError when until worked on another module."""
    changes = queries.blame_history(trace, kernel, until)
    if until is not None and queries.off_history(trace, changes, until):
        names = ", ".join(queries.module_functions(trace, until)) or "?"
        raise UsageError(
            f"{trace.path}: pass {until.seq} {until.name} worked on another module ({names}), not the kernel's IR, so its lines have "
            f"no place in the kernel's history; `lower-trace show {trace.path} -k {kernel.kernel_id} -p {until.seq}` shows its diff"
        )
    return changes


def _blamed_pass(trace: Trace, kernel: KernelTrace, key: str) -> PassRecord:
    """blame --ir PASS: the one pass it names (codegen steps are not IR), or a UsageError."""
    steps = [s for s in queries.select_steps([kernel], key)[kernel.kernel_id] if isinstance(s, PassRecord)]
    if not steps:
        raise no_pass(trace, key, f"kernel {kernel.kernel_id} ({kernel.name}, passes 0-{len(kernel.passes) - 1})")
    if len(steps) > 1:
        numbers = ", ".join(f"{s.seq} ({s.name})" for s in steps[:12]) + (", ..." if len(steps) > 12 else "")
        raise UsageError(f"{trace.path}: --ir {key!r} names {len(steps)} passes of kernel {kernel.kernel_id}; pick one by number: {numbers}")
    return steps[0]


def _blame_pattern(kernel: KernelTrace, changes: list[Any], pattern: str, as_json: bool) -> int:
    """blame PATTERN: the history of the lines it matches; exit status 1 when no line ever matched."""
    from lower_trace.render import blame_view, json_view

    found, matches = queries.pattern_answer(changes, regex(pattern))
    if as_json:
        print_json(json_view.pattern_history(kernel, pattern, found, matches))
    else:
        blame_view.write_history(sys.stdout, kernel, pattern, found, matches)
    return 0 if found.matched else 1


def _blame_source(trace: Trace, kernel: KernelTrace, args: argparse.Namespace) -> int:
    """blame --source: each line of the generated source with the pass that made the TIR line it
    comes from and its origin in the user's program."""
    from lower_trace.cli.where_command import origins_of
    from lower_trace.render import origins_view

    if args.pattern is not None or args.ir is not None:
        raise UsageError("--source blames the generated source line by line; a PATTERN and --ir do not apply to it")
    found = queries.source_blame(origins_of(trace, kernel), kernel)
    if not found:
        raise UsageError(f"{trace.path}: kernel {kernel.kernel_id} ({kernel.name}) has no generated source in this trace")
    if args.json:
        print_json([
            {"role": s.step.role, "language": s.step.language, "lines": origins_view.lines_json(s.entry.text, s.entry.origins, s.owners)}
            for s in found
        ])
        return 0
    for s in found:
        if len(found) > 1:
            sys.stdout.write(f"== {s.step.role} source ({s.step.language}) ==\n")
        origins_view.write_with_origins(sys.stdout, s.entry.text, s.entry.origins, s.owners)
    return 0


def add_parsers(sub: Any) -> None:
    blame = sub.add_parser("blame", intermixed=True, help="which pass made a line of the IR", description=cmd_blame.__doc__)
    add_trace(blame)
    blame.add_argument("pattern", nargs="?", metavar="PATTERN", help="a regex: the history of the lines it matches")
    add_kernel(blame)
    blame.add_argument("--ir", metavar="PASS", help="blame the IR after PASS (default: the final TIR)")
    blame.add_argument("--source", action="store_true", help="blame the generated source: each line's pass and the line of your program it comes from")
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
    add_context(diff)
    add_color(diff)
    diff.add_argument("--html", metavar="FILE", help="also write the comparison page to FILE (one offline HTML file)")
    diff.set_defaults(func=cmd_diff)
