"""What the report's source map costs, and where: during the compiles, and when the run closes.

    python benchmarks/source_map.py [--kernel gemm|scaled_add] [--count 20]
    taskset -c 0 python benchmarks/source_map.py --kernel gemm --count 20

Traces --count fresh variants of the kernel in one html run (TileLang's first-use costs paid
before), with a timer around the report's steps: per kernel, the report's block (``add_kernel``:
on the worker thread with a spare core, inline on the compile's thread on one core), the part of
it that is the source map's, and the run's close (the source maps computed then, from the trace
on disk). Milliseconds of the running thread's CPU time (``thread_time``: a machine shared with
other work moves it far less than wall time) and wall time.

It times whichever lower-trace is imported: a tree before the source map moved off the compile
(``origins_payload`` inside ``add_kernel``) reads the same way.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import sys
import tempfile
import time

os.environ["TILELANG_DISABLE_CACHE"] = "1"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))


class Timer:
    """CPU (this thread's) and wall seconds per label, and calls; nested labels are counted in both."""

    def __init__(self) -> None:
        self.cpu: collections.Counter[str] = collections.Counter()
        self.wall: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.phase = "compiles"  # "close" once the run closes

    def wrap(self, owner: object, name: str, label: str) -> bool:
        original = getattr(owner, name, None)
        if original is None:
            return False

        def timed(*args, **kwargs):
            cpu, wall = time.thread_time(), time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                key = f"{label} [{self.phase}]"
                self.cpu[key] += time.thread_time() - cpu
                self.wall[key] += time.perf_counter() - wall
                self.calls[key] += 1

        setattr(owner, name, timed)
        return True


def memory(field: str) -> float:
    """A line of /proc/self/status in MB (VmRSS: now, VmHWM: the peak so far); 0 where there is none."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="gemm", choices=("gemm", "scaled_add"))
    parser.add_argument("--count", type=int, default=20)
    args = parser.parse_args()

    import tilelang
    from tilelang import tvm

    import kernels
    import lower_trace
    from lower_trace.render import live
    from lower_trace.render.report import writer
    from lower_trace.store import reader

    timer = Timer()
    timer.wrap(writer.ReportWriter, "add_kernel", "add_kernel (the kernel's block)")
    # The source map's own part, wherever this tree computes it.
    timer.wrap(writer, "origins_payload", "source map: origins_payload")
    timer.wrap(writer, "has_spans", "source map: has_spans")
    timer.wrap(live.ReportListener, "close", "the report's close")
    timer.wrap(reader, "load_trace", "reading the trace back")  # imported by the close when it runs
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    with target:
        tilelang.lower(kernels.elementwise_add(), target=target)  # TileLang's first-use costs
    if args.kernel == "gemm":
        tiles = [(128, 128, 32), (64, 64, 32), (128, 64, 32), (64, 128, 64), (128, 128, 64)]
        builds = [lambda i=i: kernels.gemm(1024, 1024, 1024 + 32 * (i // len(tiles)), *tiles[i % len(tiles)]) for i in range(args.count)]
    else:
        builds = [lambda v=v: kernels.scaled_add(**v) for v in kernels.sweep_variants(args.count)]
    compile_cpu = compile_wall = 0.0
    with contextlib.redirect_stderr(io.StringIO()):
        lower_trace.enable(mode="html", trace_dir=tempfile.mkdtemp(prefix="lt-source-map-"))
        for build in builds:
            func = build()
            cpu, wall = time.process_time(), time.perf_counter()
            with target:
                tilelang.lower(func, target=target)
            run = lower_trace.current_run()
            if run is not None:
                run.worker.wait()
            compile_cpu += time.process_time() - cpu
            compile_wall += time.perf_counter() - wall
        timer.phase = "close"
        rss = memory("VmRSS")
        lower_trace.disable()
        peak = memory("VmHWM")
    n = len(builds)
    threaded = len(os.sched_getaffinity(0)) > 1
    print(f"{args.kernel} x{n}, {'2+ cores: the report is written on the worker thread' if threaded else 'one core: the report is written inline'}")
    print(f"  traced compile: {1e3 * compile_wall / n:.1f} ms wall, {1e3 * compile_cpu / n:.1f} ms CPU per kernel (all threads)")
    print(f"  {'step [when]':<52} {'calls':>6} {'CPU ms/kernel':>14} {'wall ms/kernel':>15} {'CPU ms/call':>12}")
    if rss and peak:
        print(f"  memory: {rss:.0f} MB resident before the close, the process's peak {peak:.0f} MB after it")
    for label in sorted(timer.calls, key=lambda lab: -timer.cpu[lab]):
        calls = timer.calls[label]
        print(f"  {label:<52} {calls:>6} {1e3 * timer.cpu[label] / n:>14.2f} {1e3 * timer.wall[label] / n:>15.2f} {1e3 * timer.cpu[label] / calls:>12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
