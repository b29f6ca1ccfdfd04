"""What reading fragment layouts costs (the report's layout pictures), in one run.

    python benchmarks/layouts.py [--repeat 7] [--kernels gemm,flash_attention,row_sum]
    taskset -c 0 python benchmarks/layouts.py        # one core: the worker thread cannot hide it

Layouts are read on lower-trace's worker thread, off the module a pass returned, and only for
passes whose output shows other layout annotations than their input (tl.LayoutInference). The
rows: untraced, lower-trace html with layouts, the same with layout reading switched off, and
TileLang's built-in tracer; configurations take turns lower by lower, medians reported, wall
and CPU time (the process's, all threads) until the tracer is idle. The last columns time
read_layouts itself: how often it ran per kernel and its CPU milliseconds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from overhead import Config, configurations

# TileLang's built-in tracer is one of the rows: its module must stay TileLang's own (lower-trace
# drives it otherwise, see lower_trace/seed_api.py); set before anything imports it.
os.environ["TL_LOWER_TRACE_BUILTIN"] = "1"


class Timed:
    """Wraps TVMIR.read_layouts: calls that read layouts, and their CPU time (thread time: the worker's)."""

    def __init__(self) -> None:
        from lower_trace.integrations.ir_reading import tilelang_layouts

        self.module, self.reads, self.cpu = tilelang_layouts, 0, 0.0
        self.original = tilelang_layouts.fragment_layouts
        self.enabled = True

        def timed(mod):
            started = time.thread_time()
            try:
                return self.original(mod)
            finally:
                self.reads += 1
                self.cpu += time.thread_time() - started

        self.changes = tilelang_layouts.changes_layouts
        tilelang_layouts.fragment_layouts = timed
        tilelang_layouts.changes_layouts = lambda before, after: self.enabled and self.changes(before, after)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--kernels", default="gemm,flash_attention,row_sum")
    args = parser.parse_args()

    import tilelang
    from tilelang import tvm

    import kernels as demo_kernels

    timed = Timed()
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    base = configurations()
    by_label = {c.label: c for c in base}
    html = by_label["lower-trace html"]

    def no_layouts(d: str) -> None:
        timed.enabled = False
        html.start(d)

    def stop_no_layouts() -> None:
        html.stop()
        timed.enabled = True

    configs = [
        by_label["untraced"],
        html,
        Config("lower-trace html, no layouts", start=no_layouts, stop=stop_no_layouts, settle=html.settle),
        *(c for c in base if c.label == "tilelang built-in html"),
    ]
    cores = len(os.sched_getaffinity(0))
    print(f"median of {args.repeat} lowers after one warm-up; CUDA sm_90a source generated on the CPU; {cores} core(s)\n")
    head = f"{'kernel':<16} {'configuration':<30} {'wall ms':>8} {'x':>6} {'CPU ms':>8} {'x':>6} {'reads/kernel':>12} {'read CPU ms':>11}"
    print(head)
    for name in args.kernels.split(","):
        build = getattr(demo_kernels, name)
        walls: list[list[float]] = [[] for _ in configs]
        cpus: list[list[float]] = [[] for _ in configs]
        reads: list[list[tuple[int, float]]] = [[] for _ in configs]
        for round_no in range(args.repeat + 1):
            for index, config in enumerate(configs):
                with tempfile.TemporaryDirectory(prefix="lt-bench-") as trace_dir:
                    func = build()
                    timed.reads, timed.cpu = 0, 0.0
                    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                        config.start(trace_dir)
                        try:
                            wall, cpu = time.perf_counter(), time.process_time()
                            with target:
                                tilelang.lower(func, target=target)
                            config.settle()
                            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                        finally:
                            config.stop()
                    if round_no:
                        walls[index].append(wall)
                        cpus[index].append(cpu)
                        reads[index].append((timed.reads, timed.cpu))
        wall0, cpu0 = statistics.median(walls[0]), statistics.median(cpus[0])
        for index, config in enumerate(configs):
            wall, cpu = statistics.median(walls[index]), statistics.median(cpus[index])
            count = statistics.median(r for r, _ in reads[index])
            read_ms = statistics.median(c for _, c in reads[index]) * 1000
            times = f"{wall * 1000:>8.1f} {wall / wall0:>5.2f}x {cpu * 1000:>8.1f} {cpu / cpu0:>5.2f}x"
            print(f"{name:<16} {config.label:<30} {times} {count:>12g} {read_ms:>11.2f}")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
