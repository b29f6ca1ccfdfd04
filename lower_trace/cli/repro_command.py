"""The commands that rerun the compiler on recorded IR: ``repro`` (a failed pass as a standalone
script) and ``replay`` (a pass, or a stretch of the pipeline, rerun on its recorded input and
compared with what it made then). What runs the compiler is in integrations/reruns/replay.py."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from lower_trace.analysis.queries import select_steps
from lower_trace.cli.options import add_color, add_context, add_kernel, add_trace, color_wanted_by
from lower_trace.cli.selection import UsageError, kernels_of, no_pass
from lower_trace.model import KernelTrace, PassBuild, PassRecord, PassStatus, Trace
from lower_trace.rerun import repro
from lower_trace.store.reader import load_trace

REPLAY_HINT = "trace with TL_LOWER_TRACE_REPLAY=1 to keep every pass's input"


def _compiler() -> Any:
    """integrations.reruns.replay, or None where no TVM is installed (reading a trace needs none).
    The rerun itself is never traced, nor by TileLang's own tracer, whatever TL_LOWER_TRACE says."""
    from lower_trace import api, integrations

    api.disable()
    integrations.keep_builtin_off()
    try:
        from lower_trace.integrations.reruns import replay
    except ImportError:
        return None
    return replay


def _one_kernel(trace: Trace, key: str | None, what: str) -> KernelTrace:
    kernels = kernels_of(trace, key)
    if len(kernels) != 1:
        raise UsageError(f"{trace.path}: {what} needs one kernel; pick it with -k: {', '.join(k.kernel_id + ' (' + k.name + ')' for k in kernels[:8])}")
    return kernels[0]


def _one_pass(trace: Trace, kernel: KernelTrace, key: str) -> PassRecord:
    from lower_trace.render.terminal import call_arguments

    chosen = select_steps([kernel], key)[kernel.kernel_id]
    steps = [s for s in chosen if isinstance(s, PassRecord)]
    if not steps and chosen:
        raise UsageError(f"{trace.path}: {key!r} is a codegen step of kernel {kernel.kernel_id}, not a pass; replay and repro rerun passes")
    if not steps:
        raise no_pass(trace, key, f"kernel {kernel.kernel_id} ({kernel.name})")
    if len(steps) > 1:
        numbers = ", ".join(f"{s.seq} ({s.name}{call_arguments(s.call) if s.call else ''})" for s in steps[:12])  # ThreadSync('shared') / ('shared.dyn')
        raise UsageError(f"{trace.path}: {key!r} names {len(steps)} passes of kernel {kernel.kernel_id}; pick one by number: {numbers}")
    return steps[0]


def _enclosing(kernel: KernelTrace, record: PassRecord) -> list[PassRecord]:
    """record and the passes it is nested in, innermost first."""
    by_seq = {p.seq: p for p in kernel.passes}
    chain = [record]
    while chain[-1].parent is not None and chain[-1].parent in by_seq and len(chain) <= len(by_seq):
        chain.append(by_seq[chain[-1].parent])
    return chain


def cmd_repro(args: argparse.Namespace) -> int:
    """Write a reproducer: a folder with the IR a pass received (TVM JSON), a repro.py that runs
    that pass alone on it, and the recorded error. Default: every failed (or crashed) pass."""
    from lower_trace.render import rerun_view

    trace = load_trace(args.trace)
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise UsageError(f"-o {args.output}: a file is there; name a folder (it is created)")
    if args.launch is not None:
        return _repro_launch(trace, args)
    if args.rebuild is not None:
        raise UsageError("--rebuild says how --launch rebuilds its kernel; name the launch with --launch KERNEL[:N]")
    chosen = args.pass_ is not None
    targets = _repro_targets(trace, args)
    compiler = _compiler()
    written = 0
    for kernel, record in targets:
        try:
            passes, start, why = _plan(trace, kernel, record, compiler, args.from_)
        except UsageError as exc:
            if chosen:
                raise
            print(f"lower-trace: {exc}", file=sys.stderr)
            continue
        folder = args.output if len(targets) == 1 else os.path.join(args.output, os.path.basename(repro.folder("", kernel.kernel_id, record.seq, record.name)))
        repro.write(folder, repro.spec_for(trace, kernel, record, passes, why), trace.ir_json(start.input))
        rerun_view.write_repro(sys.stdout, kernel, record, repro.command(folder), why)
        written += 1
    return 0 if written else 1


def _repro_launch(trace: Trace, args: argparse.Namespace) -> int:
    """repro --launch KERNEL[:N]: the launch as a folder whose run.py rebuilds the kernel, calls it on the
    recorded inputs and compares with the recorded outputs."""
    from lower_trace.integrations.reruns import launch_repro

    if args.pass_ is not None or args.from_ is not None or args.kernel is not None:
        raise UsageError("--launch names its kernel itself (KERNEL[:N]); leave out -k, -p and --from")
    key, _, number = args.launch.rpartition(":") if ":" in args.launch else (args.launch, "", "1")
    if not number.isdigit() or int(number) < 1:
        raise UsageError(f"--launch {args.launch}: the launch is a number from 1 (KERNEL:N, e.g. k1:2)")
    kernels = kernels_of(trace, key)
    if len(kernels) != 1:
        raise UsageError(f"{trace.path}: --launch {args.launch} names {len(kernels)} kernels; pick one by id: "
                         + ", ".join(f"--launch {k.kernel_id}{':' + number if number != '1' else ''} ({k.name})" for k in kernels[:8]))
    kernel = kernels[0]
    try:
        launch = launch_repro.pick_launch(kernel, int(number))
        made = launch_repro.write(trace, kernel, launch, args.rebuild or "source", args.output)
    except launch_repro.LaunchReproError as exc:
        raise UsageError(str(exc)) from None
    digest_only = f", {made.by_digest} by digest only (not kept)" if made.by_digest else ""
    what = f"{kernel.kernel_id} ({kernel.name}) launch {launch.n}"
    print(f"{what}: written to {made.folder} (rebuilt from {made.rebuild}; {made.outputs} outputs compared{digest_only})")
    print(f"run it (TileLang, torch and numpy; no lower-trace needed): python {made.script}")
    return 0


def _repro_targets(trace: Trace, args: argparse.Namespace) -> list[tuple[KernelTrace, PassRecord]]:
    """The passes repro writes a reproducer of: -p PASS of one kernel, else every failed (or crashed) pass."""
    kernels = kernels_of(trace, args.kernel)
    if args.pass_ is not None:
        kernel = _one_kernel(trace, args.kernel, "repro -p")
        return [(kernel, _one_pass(trace, kernel, args.pass_))]
    targets = [(k, p) for k in kernels for p in k.passes if p.status is PassStatus.FAILED or p.crashed]
    if not targets:
        raise UsageError(f"{trace.path}: no pass failed here; name one with -k KERNEL -p PASS to write a script that reruns it")
    return targets


def _builder(kernel: KernelTrace, compiler: Any) -> Any:
    """record -> PassBuild, or the one-line reason it cannot be built (integrations/reruns/replay.py);
    without a compiler here, the script looks each pass up by name."""
    by_seq = {p.seq: p for p in kernel.passes}

    def build(record: PassRecord) -> PassBuild | str:
        if compiler is None:
            return PassBuild(record.name, f"find_pass({record.name!r})")
        parent = by_seq.get(record.parent) if record.parent is not None else None
        return compiler.pass_build(record.name, record.call, parent.name if parent is not None else "")

    return build


def _plan(trace: Trace, kernel: KernelTrace, record: PassRecord, compiler: Any, from_: str | None) -> tuple[list[PassBuild], PassRecord, str]:
    """(the passes a reproducer of record runs, the pass whose input it starts from, why so)."""
    build = _builder(kernel, compiler)
    runs, why = _runner(kernel, record, build)
    start, stretch = _stretch_from(trace, kernel, runs, from_) if from_ is not None else (runs, [runs])
    if not start.input or not trace.ir_json(start.input):
        raise UsageError(f"the input of {start.seq} {start.name} ({kernel.kernel_id}) was not kept; {REPLAY_HINT}")
    builds = [build(p) for p in stretch]
    missing = next(((p, b) for p, b in zip(stretch, builds, strict=False) if isinstance(b, str)), None)
    if missing is not None:
        raise UsageError(f"{missing[0].seq} {missing[1]}; start after it")
    return [b for b in builds if isinstance(b, PassBuild)], start, why


def _runner(kernel: KernelTrace, record: PassRecord, build: Any) -> tuple[PassRecord, str]:
    """The pass a reproducer of record runs (record, or the nearest pass around it that can be
    built where it cannot), and why so."""
    made = build(record)
    if not isinstance(made, str):
        return record, ""
    runs = next((p for p in _enclosing(kernel, record)[1:] if p.input and not isinstance(build(p), str)), record)
    if runs is record:
        raise UsageError(f"{kernel.kernel_id} {record.seq} {record.name}: {made}, nor can a pass around it")
    return runs, f"{made}, so this runs the pass it is nested in, {runs.name}."


def _stretch_from(trace: Trace, kernel: KernelTrace, runs: PassRecord, from_: str) -> tuple[PassRecord, list[PassRecord]]:
    """repro --from PASS: that earlier pass, and the passes from it to runs at runs' nesting level."""
    start = _one_pass(trace, kernel, from_)
    stretch = [p for p in kernel.passes if p.parent == runs.parent and start.seq <= p.seq <= runs.seq]
    if start not in stretch:
        raise UsageError(f"--from {from_}: {start.seq} {start.name} is not an earlier pass of the pipeline {runs.seq} {runs.name} runs in")
    return start, stretch


def cmd_replay(args: argparse.Namespace) -> int:
    """Rerun a pass on the input it had when the trace was made, in the current environment, and
    compare: identical (exit 0) or the diff recorded -> now (exit 1). --from / --until rerun a
    stretch of passes at one nesting level, each built from Python."""
    from lower_trace.render import rerun_view

    trace = load_trace(args.trace)
    kernel = _one_kernel(trace, args.kernel, "replay")
    first, last, stretch = _replayed(trace, kernel, args)
    compiler = _compiler()
    if compiler is None:
        raise UsageError("replay reruns the compiler: run it where TileLang (or TVM) is installed")
    builds = _replay_builds(kernel, compiler, stretch)
    mod, note = compiler.load_module(trace.ir_json(first.input))
    what = f"{first.seq} {first.name}" + (f" .. {last.seq} {last.name} ({len(stretch)} passes)" if last is not first else "")
    try:
        for made in builds:
            mod = compiler.run_pass(made, mod, kernel.context)
    except Exception as exc:  # the compiler's error is the answer, not a fault of this command
        return 0 if rerun_view.write_replay_error(sys.stdout, what, last, exc, note) else 1
    now = compiler.print_module(mod)
    same = rerun_view.write_replay_output(sys.stdout, what, last, now, trace.snapshot, note, color_wanted_by(args), args.context)
    return 0 if same else 1


def _replayed(trace: Trace, kernel: KernelTrace, args: argparse.Namespace) -> tuple[PassRecord, PassRecord, list[PassRecord]]:
    """The passes replay reruns: -p PASS, or --from / --until a stretch at one nesting level (first, last, all of them)."""
    _check_replay_options(args)
    first = _one_pass(trace, kernel, args.pass_ or args.from_ or _first_at_level(kernel, args.until, trace))
    last = _one_pass(trace, kernel, args.until) if args.until else first if args.pass_ else _last_at_level(kernel, first)
    if last.seq < first.seq:
        raise UsageError(f"--from {first.seq} {first.name} comes after --until {last.seq} {last.name}; swap them")
    stretch = [p for p in kernel.passes if p.parent == first.parent and first.seq <= p.seq <= last.seq]
    if last not in stretch:
        raise UsageError(f"{trace.path}: {first.seq} {first.name} and {last.seq} {last.name} are not at one nesting level; pick passes of one pipeline")
    if not first.input:
        raise UsageError(f"{trace.path}: the input of {first.seq} {first.name} was not kept; {REPLAY_HINT}")
    return first, last, stretch


def _check_replay_options(args: argparse.Namespace) -> None:
    if args.pass_ is None and args.from_ is None and args.until is None:
        raise UsageError("name the pass to replay with -p PASS (or a stretch with --from PASS --until PASS)")
    if args.pass_ is not None and (args.from_ is not None or args.until is not None):
        raise UsageError("-p replays one pass, --from / --until a stretch: give one or the other")


def _replay_builds(kernel: KernelTrace, compiler: Any, stretch: list[PassRecord]) -> list[PassBuild]:
    """Each pass of the stretch built from Python; a UsageError for one that cannot be."""
    build = _builder(kernel, compiler)
    builds = []
    for record in stretch:
        made = build(record)
        if isinstance(made, str):
            alone = "so it cannot be replayed alone" if len(stretch) == 1 else "replay a stretch without it"
            raise UsageError(f"{record.seq} {made}; {alone}")
        builds.append(made)
    return builds


def _first_at_level(kernel: KernelTrace, until: str | None, trace: Trace) -> str:
    """--until alone: from the first pass of that pass's pipeline."""
    last = _one_pass(trace, kernel, until or "")
    return str(next(p.seq for p in kernel.passes if p.parent == last.parent))


def _last_at_level(kernel: KernelTrace, first: PassRecord) -> PassRecord:
    """--from alone: to the last pass of that pass's pipeline."""
    return [p for p in kernel.passes if p.parent == first.parent and p.seq >= first.seq][-1]


def add_parsers(sub: Any) -> None:
    rep = sub.add_parser("repro", help="write a failed pass as a standalone script", description=cmd_repro.__doc__)
    add_trace(rep)
    add_kernel(rep)
    rep.add_argument("-p", "--pass", dest="pass_", metavar="PASS", help="the pass (default: every failed pass)")
    rep.add_argument("--from", dest="from_", metavar="PASS", help="start from this earlier pass's input and run the passes up to PASS")
    rep.add_argument("-o", "--output", required=True, metavar="FOLDER", help="where to write it (one folder per pass when there are several)")
    rep.add_argument(
        "--launch", metavar="KERNEL[:N]",
        help="write launch N (default 1) of KERNEL as a script that rebuilds the kernel, runs it on the recorded inputs and compares the outputs"
        " (traced with TL_LOWER_TRACE_LAUNCHES=data)",
    )
    rep.add_argument(
        "--rebuild", choices=("source", "generated", "tir"),
        help="with --launch: from the kernel's Python source (default), from the exact generated source that ran, "
        "or from the PrimFunc handed to lowering through this TileLang's pipeline (tir)",
    )
    rep.set_defaults(func=cmd_repro)

    play = sub.add_parser("replay", help="rerun a pass on its recorded input and compare", description=cmd_replay.__doc__)
    add_trace(play)
    add_kernel(play)
    play.add_argument("-p", "--pass", dest="pass_", metavar="PASS", help="the pass to rerun")
    play.add_argument("--from", dest="from_", metavar="PASS", help="rerun from this pass ...")
    play.add_argument("--until", metavar="PASS", help="... to this one (passes of one pipeline level)")
    add_context(play)
    add_color(play)
    play.set_defaults(func=cmd_replay)

