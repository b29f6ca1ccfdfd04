"""What recording a launch costs (issue 40): calls of compiled kernels untraced against the same calls
recorded (TL_LOWER_TRACE_LAUNCHES=meta), with their tensors kept (data: .npy files in the trace), in one
process, on target "c" with CPU tensors.

    python benchmarks/launches.py [--calls 2000] [--sizes 64,65536,4194304]

For each size, vector_add (A + B -> C, float32) is compiled untraced and traced; the calls take turns in
rounds (untraced, recorded, ...) and the median per-call time of each is printed with the difference (the
capture's cost per launch: describing three tensors before the call and after it, their digests included,
and handing the record to the run's worker) and the ratio; "data" keeps every tensor too (A, B and C before
the call, C after it: A and B, unchanged, are not written twice), in fewer calls a round (at most 256 MiB
written a round). Pin it to one core (taskset -c 0) to count the worker's writing too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ["TILELANG_DISABLE_CACHE"] = "1"


def vector_add(n: int):
    import tilelang.language as T

    @T.prim_func
    def vector_add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(1) as _:
            for i in T.serial(n):
                C[i] = A[i] + B[i]

    return vector_add


def per_call_us(kernel, args, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        kernel(*args)
    return (time.perf_counter() - started) / calls * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000, help="calls per round (fewer for large sizes: at least 20)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="64,65536,4194304")
    args = parser.parse_args()
    import tilelang
    import torch

    import lower_trace

    print(f"median of {args.rounds} rounds; per call, microseconds")
    print(f"{'elements':>10} {'bytes/tensor':>13} {'untraced':>10} {'recorded':>10} {'cost':>9} {'ratio':>7} {'past the limit':>15} {'ratio':>7}"
          f" {'data':>10} {'cost':>9} {'ratio':>7}")
    for n in (int(s) for s in args.sizes.split(",")):
        calls = max(20, args.calls * 64 // max(n, 64)) if n > 65536 else args.calls
        plain = tilelang.compile(vector_add(n), target="c", execution_backend="cython")
        tensors = (torch.randn(n), torch.randn(n), torch.empty(n))
        data_calls = max(3, min(calls, (256 << 20) // (16 * n)))
        times: dict[str, list[float]] = {"untraced": [], "recorded": [], "past": [], "data": [], "untraced_data": []}
        # every call recorded; the default's first 8; every call's tensors kept (no cap)
        for setting, key in ((f"meta:{10**9}", "recorded"), ("meta", "past"), (f"data:{10**9}", "data")):
            count = data_calls if key == "data" else calls
            with tempfile.TemporaryDirectory() as folder, lower_trace.trace(mode="trace", trace_dir=folder, launches=setting, launch_cap="1024GiB,1024GiB"):
                traced = tilelang.compile(vector_add(n), target="c", execution_backend="cython")
                per_call_us(plain, tensors, 5), per_call_us(traced, tensors, 10)  # warm-up (past the default's 8)
                for _ in range(args.rounds):
                    times["untraced_data" if key == "data" else "untraced"].append(per_call_us(plain, tensors, count))
                    times[key].append(per_call_us(traced, tensors, count))
        untraced, recorded, past, data, untraced_data = (statistics.median(times[key]) for key in ("untraced", "recorded", "past", "data", "untraced_data"))
        print(f"{n:>10} {4 * n:>13} {untraced:>10.1f} {recorded:>10.1f} {recorded - untraced:>9.1f} {recorded / untraced:>6.2f}x"
              f" {past:>15.1f} {past / untraced:>6.2f}x {data:>10.1f} {data - untraced_data:>9.1f} {data / untraced_data:>6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
