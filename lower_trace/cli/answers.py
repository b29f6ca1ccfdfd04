"""The commands that answer questions about traces: ``diff`` (two compiles pass by pass) and ``blame``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from lower_trace.cli.options import add_color, add_context, add_kernel, add_trace, color_wanted_by, print_json
from lower_trace.cli.selection import UsageError, kernels_of, no_pass, regex, select_steps, selected
from lower_trace.config import default_trace_dir
from lower_trace.model import PassRecord, kernel_list
from lower_trace.store.reader import load_trace
from lower_trace.text_safety import plural


def cmd_diff(args: argparse.Namespace) -> int:
    """Compare two compiles pass by pass: the first pass that makes them differ, the passes only
    one ran, the generated sources. Exit status 0 when identical (or, with --up-to-renaming, the
    same up to renaming), 1 when they differ."""
    from lower_trace.analysis.compare import Side, compare
    from lower_trace.analysis.device.summary import device_differences, summarize
    from lower_trace.render.compare_view import as_json, render, write_pairs
    from lower_trace.render.device_view import device_differences_json, write_device_differences

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
    color = color_wanted_by(args)
    pairs = list(zip(kernels_a, kernels_b, strict=False))
    if len(pairs) > 1 and not args.json:
        write_pairs(sys.stdout, pairs)
    results = [
        (ka, kb, compare(Side(ka, trace_a.snapshot), Side(kb, trace_b.snapshot), ignore=args.ignore, up_to_renaming=args.up_to_renaming))
        for ka, kb in pairs
    ]
    device = [device_differences(summarize(ka, trace_a.read_snapshot), summarize(kb, trace_b.read_snapshot)) for ka, kb, _ in results]
    differ = any(not result.equivalent for _, _, result in results) or any(device)
    pages: list[str] = []
    if args.html:
        from lower_trace.render.report.compare_page import write_compare_page

        (ka, kb, result), = results
        try:
            pages.append(write_compare_page(args.html, result, (trace_a, ka), (trace_b, kb)))
        except OSError as exc:
            raise UsageError(f"--html {args.html}: cannot write the page ({exc.strerror or exc})") from None
    try:
        if args.json:
            found = [
                {**as_json(result, (trace_a.path, ka), (trace_b.path, kb)), "device": device_differences_json(changes)}
                for (ka, kb, result), changes in zip(results, device, strict=True)
            ]
            print_json(found if len(found) != 1 else found[0])
        else:
            for (ka, kb, result), changes in zip(results, device, strict=True):
                render(sys.stdout, result, (trace_a.path, ka), (trace_b.path, kb), color=color, context=args.context)
                write_device_differences(sys.stdout, changes)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the answer still is the exit status
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    for page in pages:
        print(f"comparison page: file://{page}", file=sys.stderr)
    return 1 if differ else 0


def cmd_blame(args: argparse.Namespace) -> int:
    """Which pass made each line of the IR (the final TIR, or the IR after --ir PASS); with a
    PATTERN, which pass introduced the lines it matches, which later passes changed them, and
    which removed them."""
    from lower_trace.analysis.blame import blame_lines, final_text, functions, history, pattern_history
    from lower_trace.render import blame_view, json_view

    if args.pattern is None and not os.path.exists(args.trace) and os.sep not in args.trace:
        args.trace, args.pattern = default_trace_dir(), args.trace  # `blame -k gemm REGEX`: the default folder
    trace = load_trace(args.trace)
    kernels = kernels_of(trace, args.kernel)
    if len(kernels) != 1:
        raise UsageError(f"{trace.path}: blame needs one kernel; pick it by id with -k: {kernel_list(kernels)}")
    kernel = kernels[0]
    if args.source:
        if args.pattern is not None or args.ir is not None:
            raise UsageError("--source blames the generated source line by line; a PATTERN and --ir do not apply to it")
        return _blame_source(trace, kernel, args.json)
    until = None
    steps: list[PassRecord] = []
    if args.ir is not None:
        steps = [s for s in select_steps(kernels, args.ir)[kernel.kernel_id] if isinstance(s, PassRecord)]
        if not steps:
            raise no_pass(trace, args.ir, f"kernel {kernel.kernel_id} ({kernel.name}, passes 0-{len(kernel.passes) - 1})")
        if len(steps) > 1:
            numbers = ", ".join(f"{s.seq} ({s.name})" for s in steps[:12]) + (", ..." if len(steps) > 12 else "")
            raise UsageError(f"{trace.path}: --ir {args.ir!r} names {len(steps)} passes of kernel {kernel.kernel_id}; pick one by number: {numbers}")
        until = steps[0].seq
    changes = history(kernel, trace.snapshot, until)
    if until is not None and changes and final_text(changes) != trace.snapshot(steps[0].after or steps[0].before):
        names = ", ".join(sorted(functions(trace.snapshot(steps[0].before)))) or "?"
        raise UsageError(
            f"{trace.path}: pass {until} {steps[0].name} worked on another module ({names}), not the kernel's IR, so its lines have "
            f"no place in the kernel's history; `lower-trace show {trace.path} -k {kernel.kernel_id} -p {until}` shows its diff"
        )
    if args.pattern is not None:
        pattern = regex(args.pattern)
        found = pattern_history(changes, pattern)
        matches = sum(1 for line in final_text(changes).splitlines() if pattern.search(line))
        if args.json:
            print_json(json_view.pattern_history(kernel, args.pattern, found, matches))
        else:
            blame_view.write_history(sys.stdout, kernel, args.pattern, found, matches)
        return 0 if found.matched else 1
    lines = blame_lines(changes)
    if args.json:
        print_json(json_view.blamed_lines(kernel, until, lines))
    else:
        blame_view.write_lines(sys.stdout, lines)
    return 0


def _blame_source(trace: Any, kernel: Any, as_json: bool) -> int:
    """blame --source: each line of the generated source with the pass that made the TIR line it
    comes from and its origin in the user's program."""
    from lower_trace.analysis.origins import source_owner
    from lower_trace.cli.where_command import origins_of
    from lower_trace.render import origins_view

    result = origins_of(trace, kernel)
    steps = [step for step in kernel.codegen if step.seq in result.sources]
    if not steps:
        raise UsageError(f"{trace.path}: kernel {kernel.kernel_id} ({kernel.name}) has no generated source in this trace")
    found = []
    for step in steps:
        entry = result.sources[step.seq]
        owners = [source_owner(result, step, i) for i in range(len(entry.origins))]
        found.append((step, entry, owners))
    if as_json:
        print_json([
            {"role": step.role, "language": step.language, "lines": origins_view.lines_json(entry.text, entry.origins, owners)}
            for step, entry, owners in found
        ])
        return 0
    for step, entry, owners in found:
        if len(found) > 1:
            sys.stdout.write(f"== {step.role} source ({step.language}) ==\n")
        origins_view.write_with_origins(sys.stdout, entry.text, entry.origins, owners)
    return 0


def add_parsers(sub: Any) -> None:
    blame = sub.add_parser("blame", help="which pass made a line of the IR", description=cmd_blame.__doc__)
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
