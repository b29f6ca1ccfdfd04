"""``lower-trace device``, and the device stage in ``show`` and ``list``."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from lower_trace.analysis.device.summary import cuda_source_step, device_summary, listing
from lower_trace.cli.options import add_kernel, add_trace, print_json
from lower_trace.cli.selection import UsageError, kernels_of
from lower_trace.integrations.nvcc.toolchain import find_tool
from lower_trace.model import KernelTrace, Trace
from lower_trace.store.reader import load_trace


def cmd_device(args: argparse.Namespace) -> int:
    """Compile the stored generated source of each kernel (or its working copy, edited or not) with
    the flags TileLang uses for its target, and add PTX, SASS and ptxas' resource usage to the
    trace and its report; a kernel traced through TileLang's own nvcc call only gets its SASS."""
    from lower_trace.render import device_view
    from lower_trace.render.report.from_trace import write_report

    trace = load_trace(args.trace)
    outcomes = _build(trace, kernels_of(trace, args.kernel), args)
    _say_problems(trace, outcomes)
    trace = load_trace(trace.path)
    summaries = [s for s in (device_summary(trace, k) for k in kernels_of(trace, args.kernel)) if s is not None]
    if any(o.record is not None for o in outcomes):
        write_report(trace.path)
    if args.json:
        print_json({"run": trace.path, "kernels": [device_view.summary_json(s) for s in summaries]})
    else:
        for summary in summaries:
            device_view.write_summary(sys.stdout, summary)
    return 0 if summaries else 1


def _say_problems(trace: Trace, outcomes: list[Any]) -> None:
    """A UsageError when no kernel has a device stage now; else a line on stderr per kernel whose build had a problem."""
    if not any(o.record is not None or o.kernel.device_stage is not None for o in outcomes):
        said = "; ".join(f"{o.kernel.kernel_id} {o.kernel.name} {o.problem}" for o in outcomes[:3]) + ("; ..." if len(outcomes) > 3 else "")
        raise UsageError(f"{trace.path}: no device stage to build or show: {said}")
    for outcome in outcomes:
        problem = outcome.problem or (outcome.record.error if outcome.record is not None else "")
        if problem:
            sys.stderr.write(f"lower-trace: {outcome.kernel.kernel_id} {outcome.kernel.name}: {problem}\n")


def _build(trace: Trace, kernels: list[KernelTrace], args: argparse.Namespace) -> list[Any]:
    """Each kernel's device stage built (rerun/device_build.py), with a progress bar on a terminal."""
    from lower_trace.integrations.nvcc.toolchain import ToolMissing
    from lower_trace.render.progress import Progress
    from lower_trace.rerun.device_build import build_device_stage

    bar: Progress | None = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None and total > 1 and sys.stderr.isatty():
            bar = Progress(sys.stderr, total, "compiling")
        if bar is not None:
            bar.update(done)

    try:
        return build_device_stage(trace, kernels, jobs=args.jobs, working_copy=args.working_copy, rebuild=args.rebuild, progress=progress)
    except ToolMissing as exc:
        raise UsageError(f"lower-trace device: {exc}") from None
    finally:
        if bar is not None:
            bar.close()


def show_device(trace: Trace, kernels: list[KernelTrace], args: argparse.Namespace) -> int:
    """show --device (the summary), --sass / --ptx (the listing, with --origins their pass and line)."""

    summaries = [(k, device_summary(trace, k)) for k in kernels]
    if all(s is None for _, s in summaries):
        raise _no_device_stage(trace, kernels)
    if args.device:
        return _show_summaries([s for _, s in summaries if s is not None], args.json)
    if len(kernels) != 1:
        raise UsageError(f"{trace.path}: --sass and --ptx need one kernel; pick it with -k: {', '.join(k.kernel_id for k in kernels)}")
    kernel, summary = summaries[0]
    assert summary is not None
    return _show_listing(trace, kernel, summary, args)


def _show_summaries(summaries: list[Any], as_json: bool) -> int:
    """show --device: each kernel's registers, spills, shared memory, occupancy."""
    from lower_trace.render import device_view

    if as_json:
        print_json({"kernels": [device_view.summary_json(s) for s in summaries]})
    else:
        for summary in summaries:
            device_view.write_summary(sys.stdout, summary)
    return 0


def _no_device_stage(trace: Trace, kernels: list[KernelTrace]) -> UsageError:
    compilable = [k.kernel_id for k in kernels if cuda_source_step(k) is not None]
    if compilable:
        return UsageError(f"{trace.path}: no device stage for {', '.join(compilable)} yet; `lower-trace device {trace.path}` compiles it")
    named = ", ".join(f"{k.kernel_id} ({k.name}, {k.target or 'no target'})" for k in kernels)
    return UsageError(f"{trace.path}: {named}: no CUDA source, so no device stage (a CPU or host-only kernel)")


def _show_listing(trace: Trace, kernel: KernelTrace, summary: Any, args: argparse.Namespace) -> int:
    """show --sass / --ptx: one kernel's listing, each instruction with its CUDA line."""
    from lower_trace.render import device_view

    which = "sass" if args.sass else "ptx"
    if not (summary.record.sass if which == "sass" else summary.record.ptx):
        command = f"lower-trace device {trace.path} -k {kernel.kernel_id}"
        needs = " (it needs nvdisasm: pip install nvidia-cuda-nvdisasm)" if which == "sass" and find_tool("nvdisasm") is None else ""
        raise UsageError(f"{trace.path}: kernel {kernel.kernel_id} has no {which.upper()} yet; `{command}` makes it{needs}")
    lines = listing(trace, summary.record, which)
    cuda = trace.read_snapshot(summary.record.source).splitlines()
    origins, owners = _origins(trace, kernel, summary.record) if args.origins else (None, None)
    if args.json:
        print_json({"kernel": kernel.kernel_id, which: device_view.listing_json(lines, origins)})
    else:
        device_view.write_listing(sys.stdout, lines, cuda, origins, owners)
    return 0


def _origins(trace: Trace, kernel: KernelTrace, record: Any) -> tuple[list[Any], list[Any]]:
    """Per line of the compiled source: the user's line it comes from and the pass that made it."""
    from lower_trace.analysis.origins import source_owner
    from lower_trace.cli.where_command import origins_of

    result = origins_of(trace, kernel)
    step = next((c for c in kernel.codegen if c.seq == record.seq), None)
    entry = result.sources.get(record.seq)
    if step is None or entry is None or step.source != record.source:
        raise UsageError(f"{trace.path}: kernel {kernel.kernel_id}: the compiled source is not the generated one (an edit?): its lines have no origins")
    owners = [source_owner(result, step, i) for i in range(len(entry.origins))]
    return list(entry.origins), owners


def list_device(trace: Trace, args: argparse.Namespace) -> int:
    """list --device: a row per kernel (registers, spills, shared memory, occupancy), sortable."""
    from lower_trace.render import device_view

    summaries, missing, cpu = [], [], []
    for kernel in trace.kernels:
        summary = device_summary(trace, kernel)
        if summary is not None:
            summaries.append(summary)
        else:
            (missing if cuda_source_step(kernel) is not None else cpu).append(kernel.kernel_id)
    summaries.sort(key=device_view.sort_key(args.sort))
    if args.json:
        rows = [device_view.summary_json(s) for s in summaries]
        print_json({"run": trace.path, "kernels": rows, "without_device_stage": missing, "without_cuda_source": cpu})
    else:
        device_view.write_table(sys.stdout, summaries, missing, cpu)
    return 0


def add_parser(sub: Any) -> None:
    device = sub.add_parser("device", help="PTX, SASS, registers, spills and occupancy of each kernel", description=cmd_device.__doc__)
    add_trace(device)
    add_kernel(device)
    device.add_argument("--working-copy", action="store_true", help="compile each kernel's working copy as it is now (your edit)")
    device.add_argument("--rebuild", action="store_true", help="compile again even what the trace has")
    device.add_argument("-j", "--jobs", type=int, default=0, help="compiles at a time (default: one per core)")
    device.add_argument("--json", action="store_true", help="the summaries as JSON")
    device.set_defaults(func=cmd_device)
