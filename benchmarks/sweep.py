"""Sweeps: N variants of one small kernel compiled in one process, untraced vs traced.

    python benchmarks/sweep.py [--count 300] [--kernel scaled_add|gemm] [--cores 0] [--rounds 3] [--builtin-count 30] [--no-floor]

Each configuration runs in a fresh interpreter (imports excluded from the timing):
it lowers --count distinct variants (same kernel name and buffers, other constants
and tiles: what an autotuning sweep compiles) to CUDA sm_90a source on the CPU,
then closes tracing (final report written). Printed per configuration: wall and
CPU seconds of that whole stretch and their ratio to untraced, the stderr lines the
tracer printed, bytes left on disk and the time of the final report write.
With --cores 0 every child runs pinned to that core (taskset), where a worker
thread cannot hide its cost on a spare core. TileLang's built-in tracer is much
slower, so it runs --builtin-count variants and its ratio is per variant. The "print floor" is a
bare PassInstrument that only prints each pass's changed IR (benchmarks/print_floor.py).
The machine's speed drifts (a shared host): configurations take turns for
--rounds rounds and the median of each is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import contextlib, io, json, os, sys, time
sys.path.insert(0, {testing!r})
sys.path.insert(0, {here!r})
import kernels, tilelang
from tilelang import tvm

mode, count, kernel, trace_dir = {mode!r}, {count}, {kernel!r}, {trace_dir!r}
target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
if kernel == "gemm":
    tiles = [(128, 128, 32), (64, 64, 32), (128, 64, 32), (64, 128, 64), (128, 128, 64)]
    builds = [lambda i=i: kernels.gemm(1024, 1024, 1024 + 32 * (i // len(tiles)), *tiles[i % len(tiles)]) for i in range(count)]
else:
    builds = [lambda v=v: kernels.scaled_add(**v) for v in kernels.sweep_variants(count)]
with target:  # warm-up outside the timing: first-use costs of TileLang itself
    tilelang.lower(kernels.elementwise_add(), target=target)
err = io.StringIO()
report_s = 0.0
with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
    wall, cpu = time.perf_counter(), time.process_time()
    if mode == "lower-trace":
        import lower_trace
        lower_trace.enable(mode="html", trace_dir=trace_dir)
    elif mode == "built-in":
        from tilelang.tools import lower_trace as builtin
        builtin.enable(mode="html", trace_dir=trace_dir)
    elif mode == "print floor":
        import print_floor
        floor = print_floor.PrintFloor()
        floor.start()
    for build in builds:
        with target:
            tilelang.lower(build(), target=target)
    closing = time.perf_counter()
    if mode == "lower-trace":
        lower_trace.disable()
    elif mode == "built-in":
        builtin.disable()
    elif mode == "print floor":
        floor.stop()
    end_wall, end_cpu = time.perf_counter(), time.process_time()
    report_s = end_wall - closing
lines = [l for l in err.getvalue().splitlines() if l.strip()]
print(json.dumps(dict(wall=end_wall - wall, cpu=end_cpu - cpu, close=report_s, lines=len(lines), sample=lines[:40])))
"""


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files)


def run_child(mode: str, count: int, kernel: str, cores: str | None) -> dict:
    trace_dir = tempfile.mkdtemp(prefix="lt-sweep-")
    try:
        code = CHILD.format(testing=os.path.join(HERE, "..", "testing"), here=HERE, mode=mode, count=count, kernel=kernel, trace_dir=trace_dir)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
        env["TILELANG_DISABLE_CACHE"] = "1"
        env["TL_LOWER_TRACE_BUILTIN"] = "1"  # its module stays TileLang's own (lower-trace drives it otherwise, see startup/seed_shims.py)
        command = [sys.executable, "-c", code]
        if cores is not None:
            command = ["taskset", "-c", cores, *command]
        before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
        after, ended = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        if proc.returncode != 0:
            raise RuntimeError(f"{mode} failed:\n{proc.stderr[-3000:]}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        result["bytes"] = dir_bytes(trace_dir)
        # The whole process, as the user sees it: interpreter start, imports, compiles, exit.
        result["process_wall"] = ended - started
        result["process_cpu"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        return result
    finally:
        shutil.rmtree(trace_dir, ignore_errors=True)


def _median(runs: list[dict]) -> dict:
    """Per field, the median over the rounds (the stderr sample of the first)."""
    out = dict(runs[0])
    for key in ("wall", "cpu", "close", "lines", "bytes", "process_wall", "process_cpu"):
        out[key] = statistics.median(r[key] for r in runs)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--kernel", default="scaled_add", choices=("scaled_add", "gemm"))
    parser.add_argument("--cores", help="pin every child to these cores (taskset -c), e.g. 0")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of taking turns; the median is printed")
    parser.add_argument("--builtin-count", type=int, default=30, help="variants for TileLang's built-in tracer (0: skip)")
    parser.add_argument("--no-floor", action="store_true", help="leave out the print floor (benchmarks/print_floor.py)")
    parser.add_argument("--show-stderr", action="store_true", help="print what lower-trace said on stderr")
    args = parser.parse_args()

    pinned = f", pinned to core {args.cores}" if args.cores is not None else ""
    print(f"{args.count} variants of {args.kernel}, CUDA sm_90a source on the CPU{pinned}; each configuration in a fresh process\n")
    print("'sweep': from enable() to disable() (final report included); 'process': the whole child process, imports included.\n")
    print(
        f"{'configuration':<20} {'kernels':>7} {'sweep wall s':>12} {'x':>6} {'sweep CPU s':>11} {'x':>6}"
        f" {'process wall x':>14} {'process CPU x':>13} {'stderr lines':>12} {'MB on disk':>10} {'close s':>8} {'close %':>8}"
    )
    configs = [("untraced", "untraced", args.count)]
    if not args.no_floor:
        configs.append(("print floor", "print floor", args.count))  # benchmarks/print_floor.py: only printing
    configs.append(("lower-trace html", "lower-trace", args.count))
    if args.builtin_count:
        configs.append(("tilelang built-in", "built-in", args.builtin_count))
    results: dict[str, list[dict]] = {label: [] for label, _, _ in configs}
    for _ in range(args.rounds):
        for label, mode, count in configs:
            results[label].append(run_child(mode, count, args.kernel, args.cores))
    rows = [(label, count, _median(results[label])) for label, _, count in configs]
    base = rows[0][2]
    for label, count, r in rows:
        scale = args.count / count  # per-variant ratios for a shorter run
        wall_x = r["wall"] * scale / base["wall"]
        cpu_x = r["cpu"] * scale / base["cpu"]
        # The process ratio keeps the untraced process's fixed part (start, imports) as it is.
        fixed_wall, fixed_cpu = base["process_wall"] - base["wall"], base["process_cpu"] - base["cpu"]
        process_wall_x = (fixed_wall + r["wall"] * scale) / base["process_wall"]
        process_cpu_x = (fixed_cpu + r["cpu"] * scale) / base["process_cpu"]
        print(
            f"{label:<20} {count:>7} {r['wall']:>12.2f} {wall_x:>5.2f}x {r['cpu']:>11.2f} {cpu_x:>5.2f}x"
            f" {process_wall_x:>13.2f}x {process_cpu_x:>12.2f}x {r['lines']:>12.0f}"
            f" {r['bytes'] / 2**20:>10.1f} {r['close']:>8.3f} {100 * r['close'] / r['wall']:>7.2f}%"
        )
    if args.show_stderr:
        print("\nlower-trace's stderr (first 40 lines):")
        for line in next(r for label, _, r in rows if label == "lower-trace html")["sample"]:
            print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
