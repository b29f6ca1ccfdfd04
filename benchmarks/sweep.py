"""Sweeps: N variants of one small kernel compiled in one process, untraced vs traced.

    python benchmarks/sweep.py [--count 300] [--kernel scaled_add|gemm] [--cores 0] [--builtin-count 30]

Each configuration runs in a fresh interpreter (imports excluded from the timing):
it lowers --count distinct variants (same kernel name and buffers, other constants
and tiles: what an autotuning sweep compiles) to CUDA sm_90a source on the CPU,
then closes tracing (final report written). Printed per configuration: wall and
CPU seconds of that whole stretch and their ratio to untraced, the stderr lines the
tracer printed, bytes left on disk and the time of the final report write.
With --cores 0 every child runs pinned to that core (taskset), where a worker
thread cannot hide its cost on a spare core. TileLang's built-in tracer is much
slower, so it runs --builtin-count variants and its ratio is per variant.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import contextlib, io, json, os, sys, time
sys.path.insert(0, {testing!r})
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
    for build in builds:
        with target:
            tilelang.lower(build(), target=target)
    closing = time.perf_counter()
    if mode == "lower-trace":
        lower_trace.disable()
    elif mode == "built-in":
        builtin.disable()
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
        code = CHILD.format(testing=os.path.join(HERE, "..", "testing"), mode=mode, count=count, kernel=kernel, trace_dir=trace_dir)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
        env["TILELANG_DISABLE_CACHE"] = "1"
        command = [sys.executable, "-c", code]
        if cores is not None:
            command = ["taskset", "-c", cores, *command]
        proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
        if proc.returncode != 0:
            raise RuntimeError(f"{mode} failed:\n{proc.stderr[-3000:]}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        result["bytes"] = dir_bytes(trace_dir)
        return result
    finally:
        shutil.rmtree(trace_dir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--kernel", default="scaled_add", choices=("scaled_add", "gemm"))
    parser.add_argument("--cores", help="pin every child to these cores (taskset -c), e.g. 0")
    parser.add_argument("--builtin-count", type=int, default=30, help="variants for TileLang's built-in tracer (0: skip)")
    parser.add_argument("--show-stderr", action="store_true", help="print what lower-trace said on stderr")
    args = parser.parse_args()

    pinned = f", pinned to core {args.cores}" if args.cores is not None else ""
    print(f"{args.count} variants of {args.kernel}, CUDA sm_90a source on the CPU{pinned}; each configuration in a fresh process\n")
    print(f"{'configuration':<20} {'kernels':>7} {'wall s':>8} {'x':>6} {'CPU s':>8} {'x':>6} {'stderr lines':>12} {'MB on disk':>10} {'close s':>8} {'close %':>8}")
    base = run_child("untraced", args.count, args.kernel, args.cores)
    rows = [("untraced", args.count, base), ("lower-trace html", args.count, run_child("lower-trace", args.count, args.kernel, args.cores))]
    if args.builtin_count:
        rows.append(("tilelang built-in", args.builtin_count, run_child("built-in", args.builtin_count, args.kernel, args.cores)))
    for label, count, r in rows:
        scale = args.count / count  # per-variant ratios for a shorter run
        wall_x = r["wall"] * scale / base["wall"]
        cpu_x = r["cpu"] * scale / base["cpu"]
        print(
            f"{label:<20} {count:>7} {r['wall']:>8.2f} {wall_x:>5.2f}x {r['cpu']:>8.2f} {cpu_x:>5.2f}x {r['lines']:>12}"
            f" {r['bytes'] / 2**20:>10.1f} {r['close']:>8.2f} {100 * r['close'] / r['wall']:>7.1f}%"
        )
    if args.show_stderr:
        print("\nlower-trace's stderr (first 40 lines):")
        for line in rows[1][2]["sample"]:
            print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
