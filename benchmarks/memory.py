"""Memory: RSS growth per traced compile, untraced vs lower-trace vs TileLang's built-in.

    python benchmarks/memory.py [--compiles 200] [--builtin-compiles 40]

Each configuration runs in a fresh interpreter: --warmup compiles (TileLang's and
lower-trace's bounded caches and the allocator's arenas fill), then --compiles more, every one a different variant of one kernel (as a sweep
compiles them: same name and buffers, other constants and tiles); the growth of
the resident set between the two points, divided by the compiles, is what a long
traced session keeps per compile. Target for lower-trace: <= 0.05 MB per compile.
TileLang's built-in tracer is slow at scale, so it runs --builtin-compiles.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import contextlib, gc, os, sys, tempfile
sys.path.insert(0, {testing!r})
import kernels, tilelang
from tilelang import tvm

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
mode, count, warmup = {mode!r}, {count}, {warmup}
variants = kernels.sweep_variants(count + warmup)
trace_dir = tempfile.mkdtemp()
with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
    if mode == "lower-trace":
        import lower_trace
        lower_trace.enable(mode="html", trace_dir=trace_dir)
    elif mode == "built-in":
        from tilelang.tools import lower_trace as builtin
        builtin.enable(mode="html", trace_dir=trace_dir)
    def compile_one(i):
        with target:
            tilelang.lower(kernels.scaled_add(**variants[i]), target=target)
    for i in range(warmup):
        compile_one(i)
    if mode == "lower-trace":
        lower_trace.current_run().worker.wait()
    gc.collect()
    start = rss_mb()
    for i in range(count):
        compile_one(warmup + i)
    if mode == "lower-trace":
        lower_trace.current_run().worker.wait()
    gc.collect()
    end = rss_mb()
import shutil
shutil.rmtree(trace_dir, ignore_errors=True)
print(f"{{start:.1f}} {{end:.1f}}")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compiles", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=80, help="compiles before the first measurement (caches and allocator arenas fill)")
    parser.add_argument("--builtin-compiles", type=int, default=40, help="compiles for TileLang's built-in tracer (0: skip)")
    args = parser.parse_args()
    print(f"{'configuration':<14} {'compiles':>8} {'RSS after warm-up':>18} {'RSS after':>10} {'growth/compile':>15}")
    for mode in ("untraced", "lower-trace", "built-in"):
        count = args.builtin_compiles if mode == "built-in" else args.compiles
        if not count:
            continue
        code = CHILD.format(testing=os.path.join(HERE, "..", "testing"), mode=mode, count=count, warmup=args.warmup)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
        env["TILELANG_DISABLE_CACHE"] = "1"  # every variant really compiles
        if mode == "built-in":  # its module stays TileLang's own (lower-trace drives it otherwise, see startup/seed_shims.py)
            env["TL_LOWER_TRACE_BUILTIN"] = "1"
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
        if proc.returncode != 0:
            print(f"{mode}: failed\n{proc.stderr[-2000:]}")
            return 1
        start, end = map(float, proc.stdout.split()[-2:])
        print(f"{mode:<14} {count:>8} {start:>15.1f} MB {end:>7.1f} MB {(end - start) / count:>12.3f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
