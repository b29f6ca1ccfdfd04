"""lower-trace's own work per kernel, apart from the compiler's (docs/performance.md, "Issue 19").

    python benchmarks/hot_path.py steps [--kernel scaled_add|gemm] [--count 60]
    python benchmarks/hot_path.py replay [--kernel scaled_add|gemm] [--count 30]
    python benchmarks/hot_path.py print-reuse [--kernel NAME] [--rounds 15]

Pin it to one core (taskset -c 0): the worker then runs inline, so the process's CPU time is all of it.

steps        real compiles traced in html mode, a timer around each of lower-trace's functions:
             exclusive milliseconds per kernel, the largest first.
replay       the PassInstrument callbacks of one real compile (modules as TVM handed them over) fed
             again to fresh sessions --count times: the per-pass work without the compiler, and
             without printing (each text is printed once and then looked up; the prints a snapshot
             printer makes of its own are timed and left out). Best and median of the rounds.
print-reuse  the snapshots lower-trace prints for one kernel, printed whole and by the
             ReusingPrinter (its check against the whole print off), taking turns; the texts are
             compared, and the time each way reported.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import io
import os
import statistics
import sys
import tempfile
import time

os.environ["TL_LOWER_TRACE_BUILTIN"] = "1"
os.environ["TILELANG_DISABLE_CACHE"] = "1"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))

clock = time.process_time


def builders(kernel: str, count: int):
    import kernels

    if kernel == "gemm":
        tiles = [(128, 128, 32), (64, 64, 32), (128, 64, 32), (64, 128, 64), (128, 128, 64)]
        return [lambda i=i: kernels.gemm(1024, 1024, 1024 + 32 * (i // len(tiles)), *tiles[i % len(tiles)]) for i in range(count)]
    if kernel == "scaled_add":
        return [lambda v=v: kernels.scaled_add(**v) for v in kernels.sweep_variants(count)]
    return [kernels.CUDA_KERNELS[kernel]] * count


class Exclusive:
    """Exclusive time per wrapped function (a stack of child times)."""

    def __init__(self) -> None:
        self.time: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self._stack = [0.0]

    def wrap(self, owner, name: str) -> None:
        original = getattr(owner, name)
        label = f"{getattr(owner, '__name__', owner)}.{name}"

        @functools.wraps(original)
        def timed(*args, **kwargs):
            self._stack.append(0.0)
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                self.time[label] += spent - self._stack.pop()
                self.calls[label] += 1
                self._stack[-1] += spent

        setattr(owner, name, timed)


def steps(args) -> None:
    import tilelang
    from tilelang import tvm

    import lower_trace
    from lower_trace.capture import passes, run, session, snapshots, tracker, worker
    from lower_trace.integrations.ir_reading import pass_origin, stack_walk, tvm_ir, tvm_print
    from lower_trace.render import live
    from lower_trace.store import layout, writer

    timer = Exclusive()
    for owner, names in [
        (tracker.PassTracker, ["run_before_pass", "run_after_pass"]),
        (session.CompileSession, ["pass_started", "pass_finished", "_record", "finish", "_hand_over", "open_kernel", "codegen", "edit_source"]),
        (snapshots.Snapshots, ["of", "remember", "_print", "store_text"]),
        (passes.PassLog, ["write", "record", "_layouts"]),
        (tvm_ir.TVMIR, ["identity", "same", "equivalent", "pass_origin", "read_layouts", "print_ir", "kernel_signature", "replay_context", "codegen_line_map"]),
        (tvm_print.ReusingPrinter, ["__call__"]),
        (run.TraceRun, ["append_record", "store_snapshot", "_flush", "kernel_finished", "register_kernel"]),
        (worker.Worker, ["submit"]),
        (writer.TraceWriter, ["append", "add_snapshot", "flush"]),
        (layout.SnapshotPacker, ["line"]),
        (live.ReportListener, ["kernel_finished"]),
    ]:
        for name in names:
            timer.wrap(owner, name)
    from tvm.runtime import script_printer

    for module, name, users in [
        (stack_walk, "call_sites", [pass_origin]),
        (tvm_ir, "_equal_functions", []),
        (tvm_print, "same_parts", [tvm_ir]),
        (script_printer, "_script", []),  # TVM's printer itself (C++): the floor
    ]:
        timer.wrap(module, name)
        for user in users:
            setattr(user, name, getattr(module, name))
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    import kernels

    with target:
        tilelang.lower(kernels.elementwise_add(), target=target)  # TileLang's first-use costs
    builds = builders(args.kernel, args.count)

    def untraced() -> float:
        started = clock()
        for build in builds:
            with target:
                tilelang.lower(build(), target=target)
        return clock() - started

    before = untraced()
    with contextlib.redirect_stderr(io.StringIO()):
        lower_trace.enable(mode="html", trace_dir=tempfile.mkdtemp())
        started = clock()
        for build in builds:
            with target:
                tilelang.lower(build(), target=target)
        lower_trace.disable()
        cpu = clock() - started
    plain = (before + untraced()) / 2  # the same kernels untraced, before and after: the machine drifts
    n = len(builds)
    per = lambda seconds: 1e3 * seconds / n  # noqa: E731
    measured = sum(timer.time.values())
    printing = timer.time["tvm.runtime.script_printer._script"]
    print(f"{args.kernel} x{n}: {per(cpu):.1f} CPU ms per traced kernel, {per(plain):.1f} untraced: +{per(cpu - plain):.1f} ms")
    own, outside = per(measured - printing), per(cpu - plain - measured)
    print(f"  of which TVM's printer {per(printing):.1f}, lower-trace's own Python {own:.1f}, outside the timed functions {outside:.1f}")
    print("exclusive ms per kernel:")
    for label, spent in timer.time.most_common(40):
        print(f"  {per(spent):7.3f}  {timer.calls[label] / n:6.1f} calls  {label}")


def _record_events(kernel: str):
    """(kind, module, name) of each PassInstrument callback of one real compile, modules frozen."""
    import tilelang
    from tilelang import instrumentation as tl_instr
    from tilelang import tvm

    events = []

    @tvm.ir.instrument.pass_instrument
    class Recorder:
        def run_before_pass(self, mod, info):
            events.append(("before", mod.functions, mod.attrs, mod.global_infos, str(info.name)))

        def run_after_pass(self, mod, info):
            events.append(("after", mod.functions, mod.attrs, mod.global_infos, str(info.name)))

    class Tool(tl_instr.PassInstrumentationTool):
        def create_pass_instrument(self):
            return Recorder()

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    tl_instr.register_pass_instrumentation_tool("hot-path-recorder", Tool)
    try:
        with target:
            tilelang.lower(builders(kernel, 1)[0](), target=target)
    finally:
        tl_instr.unregister_pass_instrumentation_tool("hot-path-recorder")
    make = tvm.ir.module._ffi_api.IRModule
    return target, [(kind, make(functions, attrs, infos), name) for kind, functions, attrs, infos, name in events]


def replay(args) -> None:
    from tilelang import instrumentation as tl_instr

    import lower_trace
    from lower_trace.capture.session import CompileSession
    from lower_trace.capture.tracker import PassTracker
    from lower_trace.integrations.ir_reading import tvm_ir

    target, events = _record_events(args.kernel)
    texts: dict[tuple[int, int], tuple[object, str]] = {}  # by the parts' addresses: (the module, held; its text)
    printing = [0.0]
    original = tvm_ir.TVMIR.print_ir

    def print_once(self, mod):
        key = (mod.functions.__chandle__(), mod.attrs.__chandle__() if mod.attrs is not None else 0)
        known = texts.get(key)
        if known is not None:
            return known[1]
        started = clock()
        text = original(self, mod)
        printing[0] += clock() - started
        texts[key] = (mod, text)  # held: the addresses stay its own
        return text

    tvm_ir.TVMIR.print_ir = print_once

    class Info:
        def __init__(self, name: str) -> None:
            self.name = name

    infos = [Info(name) for _, _, name in events]
    rounds = []
    with contextlib.redirect_stderr(io.StringIO()):
        lower_trace.enable(mode="html", trace_dir=tempfile.mkdtemp())
        run = lower_trace.current_run()
        ir = tvm_ir.TVMIR(tl_instr.current_pass_phase, layouts=True)
        for round_no in range(args.count + 2):
            printing[0] = 0.0
            started = clock()
            with target:
                session = CompileSession(run, ir, entry="lower", edits=False)
                tracker = PassTracker(session)
                for (kind, mod, _), info in zip(events, infos, strict=False):
                    (tracker.run_before_pass if kind == "before" else tracker.run_after_pass)(mod, info)
                session.finish(None)
            run.worker.wait()
            if round_no >= 2:  # two warm-up rounds
                rounds.append(clock() - started - printing[0])
        lower_trace.disable()
    print(f"{args.kernel}: {len(events) // 2} passes; lower-trace's own work beyond printing: best {1e3 * min(rounds):.2f}, "
          f"median {1e3 * statistics.median(rounds):.2f} CPU ms per kernel ({len(rounds)} rounds)")


def print_reuse(args) -> None:
    import tilelang
    from tilelang import tvm

    import lower_trace
    from lower_trace.capture import snapshots
    from lower_trace.integrations.ir_reading import tvm_print

    printed = []
    original = snapshots.Snapshots._print

    def keep(self, ref, identity):
        printed.append(identity)
        return original(self, ref, identity)

    snapshots.Snapshots._print = keep
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    with contextlib.redirect_stderr(io.StringIO()):
        lower_trace.enable(mode="html", trace_dir=tempfile.mkdtemp())
        with target:
            tilelang.lower(builders(args.kernel, 1)[0](), target=target)
        lower_trace.disable()
    make = tvm.ir.module._ffi_api.IRModule
    whole_texts = [make(functions, attrs, infos).script() for attrs, infos, functions in printed]
    tvm_print.CHECKS.left = 0
    whole, reusing = [], []
    printer = None
    for _ in range(args.rounds):
        printer = tvm_print.ReusingPrinter(lambda mod: mod.script())
        started = clock()
        texts = [printer(identity) for identity in printed]
        reusing.append(clock() - started)
        assert texts == whole_texts, "a pieced text differs from the whole print"
        started = clock()
        for attrs, infos, functions in printed:
            make(functions, attrs, infos).script()
        whole.append(clock() - started)
    assert printer is not None
    print(
        f"{args.kernel}: {len(printed)} snapshots, {sum(map(len, whole_texts))} characters, {printer.reused} blocks reused; "
        f"whole {1e3 * min(whole):.2f} ms (median {1e3 * statistics.median(whole):.2f}), reusing {1e3 * min(reusing):.2f} ms "
        f"(median {1e3 * statistics.median(reusing):.2f}): {100 * (1 - min(reusing) / min(whole)):.0f}% less (best), "
        f"{100 * (1 - statistics.median(reusing) / statistics.median(whole)):.0f}% (median)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("steps", "replay", "print-reuse"))
    parser.add_argument("--kernel", default="scaled_add", help="scaled_add, gemm, or a name in testing/kernels.py CUDA_KERNELS")
    parser.add_argument("--count", type=int, default=None, help="kernels (steps: 60) or rounds (replay: 30)")
    parser.add_argument("--rounds", type=int, default=15, help="print-reuse: rounds each way")
    args = parser.parse_args()
    if args.count is None:
        args.count = 60 if args.what == "steps" else 30
    {"steps": steps, "replay": replay, "print-reuse": print_reuse}[args.what](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
