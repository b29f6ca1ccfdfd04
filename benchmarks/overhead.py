"""Lowering overhead: untraced vs lower-trace vs TileLang's built-in tracer, in one run.

    python benchmarks/overhead.py [--repeat 7] [--kernels gemm,elementwise]

For each kernel and each configuration: one warm-up lower, then the median of
--repeat lowers (CUDA source for sm_90a, generated on the CPU). Prints the
ratio to the untraced median and the bytes each tracer leaves on disk for one
kernel (its final report included). Terminal output is sent to /dev/null so that only
the tracer's own work is timed.
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))


def dir_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, name))
    return total


class Config:
    def __init__(self, label: str, start=None, stop=None) -> None:
        self.label = label
        self.start = start or (lambda trace_dir: None)
        self.stop = stop or (lambda: None)


def configurations() -> list[Config]:
    import lower_trace
    import tilelang

    configs = [Config("untraced")]
    # Terminal mode writes nothing to disk unless a folder is named, as users run it.
    configs.append(Config("lower-trace terminal", start=lambda d: lower_trace.enable(mode="terminal"), stop=lower_trace.disable))
    configs.append(Config("lower-trace html", start=lambda d: lower_trace.enable(mode="html", trace_dir=d), stop=lower_trace.disable))
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


def _lowers(config: Config, build, target, count: int) -> tuple[list[float], int]:
    """Lower `count` fresh kernels under config in a fresh folder: (seconds each, bytes left)."""
    import tilelang

    trace_dir = tempfile.mkdtemp(prefix="lt-bench-")
    times = []
    try:
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            config.start(trace_dir)
            try:
                for _ in range(count):
                    func = build()
                    started = time.perf_counter()
                    with target:
                        tilelang.lower(func, target=target)
                    times.append(time.perf_counter() - started)
            finally:
                config.stop()  # our final report is written here, and counted in the bytes
        return times, dir_bytes(trace_dir)
    finally:
        shutil.rmtree(trace_dir, ignore_errors=True)


def measure(config: Config, build, target, repeat: int) -> tuple[float, int]:
    """(median seconds per lower after a warm-up, bytes on disk for one kernel)."""
    _, one_kernel_bytes = _lowers(config, build, target, 1)
    times, _ = _lowers(config, build, target, repeat + 1)
    return statistics.median(times[1:]), one_kernel_bytes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--kernels", default="gemm,elementwise")
    args = parser.parse_args()

    import kernels as demo_kernels
    from tilelang import tvm

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    builders = {name: demo_kernels.CUDA_KERNELS[name] for name in args.kernels.split(",")}
    configs = configurations()
    print(f"median of {args.repeat} lowers after one warm-up; CUDA sm_90a source generated on the CPU\n")
    print(f"{'kernel':<12} {'configuration':<28} {'median ms':>10} {'x untraced':>11} {'KB on disk/kernel':>18}")
    for name, build in builders.items():
        base = None
        for config in configs:
            median, per_kernel = measure(config, build, target, args.repeat)
            base = base or median
            print(f"{name:<12} {config.label:<28} {median * 1000:>10.1f} {median / base:>10.2f}x {per_kernel / 1024:>18.1f}")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
