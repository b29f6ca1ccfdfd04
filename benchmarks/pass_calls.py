"""What recording a pass's arguments costs (PassRecord.call: replay and reproducers rebuild passes
with them), timed inside real lowers, next to the lower's own time untraced and traced.

    python benchmarks/pass_calls.py [--repeat 5] [--kernels gemm,elementwise]
    taskset -c 0 python benchmarks/pass_calls.py

For each top-level pass, lower-trace looks at the line that ran it (parsed once per line and
cached) and, when the factory named there takes arguments, evaluates them again and writes
them down. The whole of that (TVMIR._call) is wrapped in perf_counter; the lowers themselves
are timed too, untraced and in html mode, taking turns, medians reported.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testing"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--kernels", default="gemm,elementwise")
    args = parser.parse_args()

    import tilelang
    from tilelang import tvm

    import kernels
    import lower_trace
    from lower_trace.integrations.ir_reading import tvm_ir

    spent = {"ms": 0.0, "calls": 0, "recorded": 0}
    original = tvm_ir.TVMIR._call

    def timed(self, *call_args):
        started = time.perf_counter()
        found = original(self, *call_args)
        spent["ms"] += (time.perf_counter() - started) * 1000.0
        spent["calls"] += 1
        spent["recorded"] += found is not None
        return found

    tvm_ir.TVMIR._call = timed
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    builders = {"gemm": kernels.gemm, "elementwise": kernels.elementwise_add}
    print(f"median of {args.repeat} lowers after one warm-up; CUDA sm_90a source generated on the CPU\n")
    print(f"{'kernel':<12} {'untraced ms':>11} {'html ms':>8} {'x':>6} {'arguments ms':>13} {'share of html':>14} {'passes looked at':>17} {'recorded':>9}")
    for name in args.kernels.split(","):
        build = builders[name]
        untraced, traced, costs = [], [], []
        looked = recorded = 0
        with tempfile.TemporaryDirectory() as folder, open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink), contextlib.redirect_stdout(sink):
            for round_ in range(args.repeat + 1):
                started = time.perf_counter()
                with target:
                    tilelang.lower(build(), target=target)
                plain = (time.perf_counter() - started) * 1000.0
                spent.update(ms=0.0, calls=0, recorded=0)
                with lower_trace.trace(mode="html", trace_dir=folder):
                    started = time.perf_counter()
                    with target:
                        tilelang.lower(build(), target=target)
                    html = (time.perf_counter() - started) * 1000.0
                if round_:  # the first round warms up (and parses each pipeline line once)
                    untraced.append(plain)
                    traced.append(html)
                    costs.append(spent["ms"])
                    looked, recorded = spent["calls"], spent["recorded"]
        u, h, c = statistics.median(untraced), statistics.median(traced), statistics.median(costs)
        print(f"{name:<12} {u:>11.1f} {h:>8.1f} {h / u:>5.2f}x {c:>13.3f} {100 * c / h:>13.2f}% {looked:>17} {recorded:>9}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
