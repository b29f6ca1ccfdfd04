"""``lower-trace show``, ``list`` and ``report``: a stored trace in the terminal, as JSON, as a page."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from lower_trace.analysis import queries
from lower_trace.cli import device_command
from lower_trace.cli.options import add_color, add_context, add_kernel, add_trace, color_wanted_by, print_json
from lower_trace.cli.selection import UsageError, kernels_of, no_pass, one_kernel
from lower_trace.model import KernelTrace, Trace
from lower_trace.render.device_view import SORT_KEYS
from lower_trace.store.layout import TraceNotFound, list_runs
from lower_trace.store.reader import load_trace


def cmd_show(args: argparse.Namespace) -> int:
    """Print a stored trace in the terminal: the pass table, the diffs, the generated source."""
    trace = load_trace(args.trace)
    kernels = kernels_of(trace, args.kernel)
    if args.timing:
        if args.changed or args.no_diff or args.no_source:
            raise UsageError("--timing shows every step's time; --changed, --no-diff and --no-source do not apply to it")
        return show_timing(trace, kernels, args.json)
    if args.device or args.sass or args.ptx:
        return device_command.show_device(trace, kernels, args)
    if args.launches:
        return _show_launches(kernels, args.json, trace.path)
    if args.ir is not None:
        return _show_ir(trace, kernels, args)
    if args.origins:
        raise UsageError("--origins goes with --ir PASS, --sass or --ptx: each line with the line of your program it comes from")
    return _show_passes(trace, kernels, args)


def _show_launches(kernels: list[KernelTrace], as_json: bool, run_path: str = "") -> int:
    """show --launches: each kernel's recorded launches (arguments, what was written and returned, time, site)."""
    if as_json:
        from lower_trace.model_json import to_json

        print_json([{"kernel": k.kernel_id, "name": k.name, "launches": [to_json(launch) for launch in k.launches]} for k in kernels])
        return 0
    from lower_trace.render.launches_view import launches_text

    print(launches_text(kernels, run_path))
    return 0


def _renderer(trace: Trace, args: argparse.Namespace) -> Any:
    from lower_trace.render.terminal import TerminalRenderer

    renderer = TerminalRenderer(sys.stdout, color=color_wanted_by(args), context=args.context)
    renderer.trace_path = trace.path
    return renderer


def _show_ir(trace: Trace, kernels: list[KernelTrace], args: argparse.Namespace) -> int:
    """show --ir PASS: the IR after one step of one kernel (its source, for codegen)."""
    kernel = one_kernel(trace, kernels, "--ir")
    step = _one_step(trace, kernel, args.ir)
    text = trace.snapshot(queries.shown_digest(step))
    if args.origins:
        return _show_with_origins(trace, kernel, step, text, args.json)
    if args.json:
        from lower_trace.render.json_view import ir_text_json

        print_json(ir_text_json(trace, kernel, step, text))
        return 0
    _renderer(trace, args).render_snapshot(text)
    return 0


def _one_step(trace: Trace, kernel: KernelTrace, key: str) -> queries.Step:
    """The one step of kernel that PASS names, or a UsageError that lists the candidates."""
    steps = queries.select_steps([kernel], key)[kernel.kernel_id]
    if not steps:
        raise no_pass(trace, key, f"kernel {kernel.kernel_id} ({kernel.name})")
    if len(steps) > 1:
        if len({queries.step_name(s) for s in steps}) == 1:
            said, numbers = f"are named {queries.step_name(steps[0])!r}", ", ".join(str(s.seq) for s in steps)
        else:
            said, numbers = f"match {key!r}", ", ".join(f"{s.seq} ({queries.step_name(s)})" for s in steps)
        raise UsageError(f"{trace.path}: {len(steps)} passes of kernel {kernel.kernel_id} {said}; pick one by number: {numbers}")
    return steps[0]


def _show_passes(trace: Trace, kernels: list[KernelTrace], args: argparse.Namespace) -> int:
    """show [-p PASS]: the pass table of each kernel, with the diffs and the generated source."""
    only = _only(trace, kernels, args.pass_) if args.pass_ else None
    if args.json:
        from lower_trace.render.json_view import showing

        print_json(showing(trace, kernels, only, args.changed))
        return 0
    renderer = _renderer(trace, args)
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


def _only(trace: Trace, kernels: list[KernelTrace], key: str) -> dict[str, set[int]]:
    """show -p PASS: the steps it names, per kernel; a UsageError when it names none in any."""
    only = queries.selected_seqs(kernels, key)
    if not any(only.values()):
        raise no_pass(trace, key, f"kernel {kernels[0].kernel_id} ({kernels[0].name})" if len(kernels) == 1 else "this run")
    return only


def cmd_list(args: argparse.Namespace) -> int:
    """One line per kernel of the latest run (per pass with --passes; per run with --runs)."""
    from lower_trace.render import json_view, listing

    if args.runs:
        runs = list_runs(args.trace)
        if not runs:
            load_trace(args.trace)  # raises the one-line "no trace here" error
        loaded = [(run_dir, _loaded(run_dir)) for run_dir in runs]
        if args.json:
            print_json(json_view.runs(loaded))
        else:
            listing.write_runs(sys.stdout, loaded)
        return 0
    trace = load_trace(args.trace)
    if args.device:
        return device_command.list_device(trace, args)
    if args.json:
        print_json(json_view.listing(trace, args.passes))
    else:
        listing.write_run(sys.stdout, trace, args.passes)
    return 0


def _loaded(run_dir: str) -> Trace | TraceNotFound:
    """A run of `list --runs`, or why it cannot be read."""
    try:
        return load_trace(run_dir)
    except TraceNotFound as exc:
        return exc


def cmd_report(args: argparse.Namespace) -> int:
    """(Re)build the HTML report of a trace, also of one whose process was killed."""
    from lower_trace.render.progress import Progress
    from lower_trace.render.report.from_trace import write_report
    from lower_trace.store.layout import find_run_dir

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


def show_timing(trace: Trace, kernels: list[KernelTrace], as_json: bool) -> int:
    """`show --timing`: one kernel's steps with their time and IR size; for several, the slowest
    step names over them (the report's two timing charts)."""
    from lower_trace.render import json_view, timing_view

    if as_json:
        print_json(json_view.timing_json(trace, kernels))
    else:
        timing_view.write_timing(sys.stdout, trace, kernels)
    return 0


def _show_with_origins(trace: Trace, kernel: KernelTrace, step: queries.Step, text: str, as_json: bool) -> int:
    """show --ir PASS --origins: the IR (or source) with, per line, the line of the user's program it comes from."""
    from lower_trace.cli.where_command import origins_of
    from lower_trace.render import origins_view

    origins, on_history = queries.step_origins(origins_of(trace, kernel), step, text)
    if not on_history:
        # Passes an enclosing pass runs on a helper module of its own (tl.LowerTileOp's _gemm_ssr)
        # are not on the kernel's history, whose changes the origins follow.
        sys.stderr.write(
            f"lower-trace: the IR after #{step.seq} {queries.step_name(step)} is not on kernel {kernel.kernel_id}'s history"
            " (a helper module an enclosing pass ran it on): its lines have no origins\n"
        )
    if as_json:
        print_json({"kernel": kernel.kernel_id, "step": step.seq, "lines": origins_view.lines_json(text, origins)})
    else:
        origins_view.write_with_origins(sys.stdout, text, origins)
    return 0


def add_parsers(sub: Any) -> None:
    show = sub.add_parser("show", help="print a trace's passes and diffs", description=cmd_show.__doc__)
    add_trace(show)
    add_kernel(show)
    which = show.add_mutually_exclusive_group()
    which.add_argument("-p", "--pass", dest="pass_", metavar="PASS", help="only this pass (sequence number or name)")
    which.add_argument("--ir", metavar="PASS", help="print the IR after PASS (the IR it received, if it failed; the source, for codegen)")
    which.add_argument("--timing", action="store_true", help="ms, self ms and IR lines per step (one kernel); the slowest steps over the run (several)")
    which.add_argument("--device", action="store_true", help="registers, spills, stack, shared memory, barriers, occupancy, instruction counts")
    which.add_argument("--sass", action="store_true", help="the SASS, each instruction with its CUDA line (one kernel)")
    which.add_argument("--ptx", action="store_true", help="the PTX, each instruction with its CUDA line (one kernel)")
    which.add_argument("--launches", action="store_true", help="each kernel's calls while traced: arguments, what it wrote and returned, time, call site")
    show.add_argument("--origins", action="store_true", help="with --ir, --sass or --ptx: each line with the line of your program it comes from")
    show.add_argument("--changed", action="store_true", help="hide passes that changed nothing")
    show.add_argument("--no-diff", action="store_true", help="the pass table only (no diffs, no generated source)")
    show.add_argument("--no-source", action="store_true", help="do not print generated source")
    add_context(show)
    add_color(show)
    show.add_argument("--json", action="store_true", help="the kernels and their steps as JSON (with -p, the IR texts too)")
    show.set_defaults(func=cmd_show)

    lst = sub.add_parser("list", help="list the kernels (and passes) of a trace", description=cmd_list.__doc__)
    add_trace(lst)
    lst.add_argument("--passes", action="store_true", help="one line per pass too")
    lst.add_argument("--runs", action="store_true", help="every run under the folder, oldest first")
    lst.add_argument("--device", action="store_true", help="one row per kernel: registers, spills, shared memory, occupancy")
    lst.add_argument("--sort", choices=SORT_KEYS, default="kernel", help="with --device: the order of the rows (most first)")
    lst.add_argument("--json", action="store_true", help="the same as JSON (docs/trace-format.md)")
    lst.set_defaults(func=cmd_list)

    report = sub.add_parser("report", help="write the HTML report of a trace", description=cmd_report.__doc__)
    add_trace(report)
    report.add_argument("-o", "--output", help="file (or folder) to write it to (default <run>/report.html)")
    report.set_defaults(func=cmd_report)
