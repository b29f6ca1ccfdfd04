"""Lowering overhead: untraced vs lower-trace vs TileLang's built-in tracer, in one run.

    python benchmarks/overhead.py [--repeat 7] [--kernels gemm,elementwise]

(The "replay" row is TL_LOWER_TRACE_REPLAY=1: the cost of keeping every pass's input. The "print
floor" row is a bare PassInstrument that only prints each function a pass changed: benchmarks/print_floor.py.)

For each kernel, the configurations take turns (one warm-up round, then
--repeat rounds) and the median of each is reported (CUDA source for sm_90a, generated on the CPU). Prints the
ratio to the untraced median and the bytes each tracer leaves on disk for one
kernel (its final report included). Terminal output is sent to /dev/null so that only
the tracer's own work is timed. "CPU" is the process's CPU time (every thread) from the
lower's start until the tracer is idle: on a machine shared with other work it moves far less
than wall time does.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time

# TileLang's built-in tracer is one of the rows: its module must stay TileLang's own (lower-trace
# drives it otherwise, see lower_trace/seed_api.py); set before anything imports it.
os.environ["TL_LOWER_TRACE_BUILTIN"] = "1"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def dir_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, name))
    return total


class Config:
    def __init__(self, label: str, start=None, stop=None, settle=None) -> None:
        self.label = label
        self.start = start or (lambda trace_dir: None)
        self.stop = stop or (lambda: None)
        # Waits for work the tracer still does in the background after lower() returned.
        self.settle = settle or (lambda: None)


def configurations() -> list[Config]:
    import print_floor
    import tilelang

    import lower_trace

    configs = [Config("untraced")]
    if print_floor.available():
        # The least a tracer keeping every pass's IR as text does: lower-trace's rows read against it.
        floor = print_floor.PrintFloor()
        configs.append(Config("print floor", start=lambda d: floor.start(), stop=floor.stop))
    # Terminal mode writes nothing to disk unless a folder is named, as users run it.
    def settle():
        run = lower_trace.current_run()
        if run is not None:
            run.worker.wait()

    configs.append(Config("lower-trace terminal", start=lambda d: lower_trace.enable(mode="terminal"), stop=lower_trace.disable, settle=settle))
    configs.append(Config("lower-trace html", start=lambda d: lower_trace.enable(mode="html", trace_dir=d), stop=lower_trace.disable, settle=settle))
    # TL_LOWER_TRACE_REPLAY=1: every pass's input also kept as TVM JSON, on disk before the pass runs.
    def start_replay(trace_dir: str) -> None:
        lower_trace.enable(mode="html", trace_dir=trace_dir, replay=True)

    configs.append(Config("lower-trace html + replay", start=start_replay, stop=lower_trace.disable, settle=settle))
    try:
        from tilelang.tools import lower_trace as builtin
    except ImportError:
        builtin = None
    if builtin is not None:
        for mode in ("terminal", "html"):
            configs.append(
                Config(
                    f"tilelang built-in {mode}",
                    start=lambda d, m=mode: builtin.enable(mode=m, trace_dir=d),
                    stop=builtin.disable,
                )
            )
    del tilelang
    return configs


def _lower_once(config: Config, build, target, trace_dir: str) -> tuple[float, float, float]:
    """One fresh kernel lowered under config: (seconds in tilelang.lower, seconds until the tracer is
    idle, CPU seconds until then)."""
    import tilelang

    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        config.start(trace_dir)
        try:
            func = build()
            started, cpu = time.perf_counter(), time.process_time()
            with target:
                tilelang.lower(func, target=target)
            lowered = time.perf_counter() - started
            config.settle()
            return lowered, time.perf_counter() - started, time.process_time() - cpu
        finally:
            config.stop()  # our report is written here: counted in the bytes, not in the time


def measure_all(configs: list[Config], build, target, repeat: int) -> list[tuple[float, float, float, int]]:
    """(median seconds in lower, until idle, CPU seconds until idle, bytes on disk for one kernel) per config.

    Configurations take turns lower by lower, so drift of the machine's speed
    hits them all alike; the first round is a warm-up.
    """
    times: list[list[float]] = [[] for _ in configs]
    settled: list[list[float]] = [[] for _ in configs]
    cpus: list[list[float]] = [[] for _ in configs]
    sizes = [0] * len(configs)
    for round_no in range(repeat + 1):
        for index, config in enumerate(configs):
            trace_dir = tempfile.mkdtemp(prefix="lt-bench-")
            try:
                seconds, until_idle, cpu = _lower_once(config, build, target, trace_dir)
                if round_no == 0:
                    sizes[index] = dir_bytes(trace_dir)
                else:
                    times[index].append(seconds)
                    settled[index].append(until_idle)
                    cpus[index].append(cpu)
            finally:
                shutil.rmtree(trace_dir, ignore_errors=True)
    return [(statistics.median(t), statistics.median(u), statistics.median(c), size) for t, u, c, size in zip(times, settled, cpus, sizes, strict=False)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--kernels", default="gemm,elementwise")
    parser.add_argument("--no-builtin", action="store_true", help="leave out TileLang's built-in tracer (the slowest rows)")
    parser.add_argument("--no-floor", action="store_true", help="leave out the print floor row (benchmarks/print_floor.py)")
    parser.add_argument("--no-replay", action="store_true", help="leave out the TL_LOWER_TRACE_REPLAY=1 row")
    args = parser.parse_args()

    from tilelang import tvm

    import kernels as demo_kernels

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    builders = {name: demo_kernels.CUDA_KERNELS[name] for name in args.kernels.split(",")}
    left_out = {"built-in": args.no_builtin, "replay": args.no_replay, "print floor": args.no_floor}
    configs = [c for c in configurations() if not any(skip and word in c.label for word, skip in left_out.items())]
    print(f"median of {args.repeat} lowers after one warm-up; CUDA sm_90a source generated on the CPU\n")
    print("'lower' is the time tilelang.lower took; 'idle' adds the tracer's background work after it returned.\n")
    print(
        f"{'kernel':<12} {'configuration':<28} {'lower ms':>9} {'x untraced':>11} {'idle ms':>8} {'x untraced':>11}"
        f" {'CPU ms':>7} {'x untraced':>11} {'KB on disk/kernel':>18}"
    )
    for name, build in builders.items():
        results = measure_all(configs, build, target, args.repeat)
        base, base_cpu = results[0][0], results[0][2]
        for config, (median, idle, cpu, per_kernel) in zip(configs, results, strict=False):
            print(
                f"{name:<12} {config.label:<28} {median * 1000:>9.1f} {median / base:>10.2f}x"
                f" {idle * 1000:>8.1f} {idle / base:>10.2f}x {cpu * 1000:>7.1f} {cpu / base_cpu:>10.2f}x {per_kernel / 1024:>18.1f}"
            )
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
