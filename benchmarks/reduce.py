"""How long `lower-trace reduce` takes on real failing inputs (issue 22: minutes, not hours).

    python benchmarks/reduce.py [--jobs 1 2]

Traces testing/kernels.py's padded failures (tl.LayoutInference, tl.LowerTileOp; the GEMM one is a
31-statement input) once, then times `lower-trace reduce` on each, per --jobs value: statements
before and after, tries, seconds, and the seconds per try (a try is a process forked from a
Python that imported TileLang once, running the pass; the first try waits for that import).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRACE = r"""
import sys
sys.path.insert(0, {testing!r})
import tilelang, kernels
from tilelang import tvm
with tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}}) as target:
    for build in (kernels.padded_transposed_fragment, kernels.padded_shape_mismatch, kernels.padded_gemm_transposed_fragment):
        try:
            tilelang.lower(build(), target=target)
        except Exception:
            pass
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    cli = os.path.join(os.path.dirname(sys.executable), "lower-trace")
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_DIR": os.path.join(folder, "t"), "TILELANG_DISABLE_CACHE": "1"}
        subprocess.run([sys.executable, "-c", TRACE.format(testing=os.path.join(HERE, "..", "testing"))], env=env, check=True, capture_output=True)
        print(f"{'kernel':32} {'jobs':>4} {'statements':>12} {'tries':>6} {'seconds':>8} {'s/try':>6}")
        for kernel, name in (("k1", "padded_transposed_fragment"), ("k2", "padded_shape_mismatch"), ("k3", "padded_gemm_transposed_fragment")):
            for jobs in args.jobs:
                out = os.path.join(folder, f"r-{kernel}-{jobs}")
                started = time.perf_counter()
                command = [cli, "reduce", os.path.join(folder, "t"), "-k", kernel, "-o", out, "-j", str(jobs)]
                done = subprocess.run(command, capture_output=True, text=True, check=True)
                seconds = time.perf_counter() - started
                found = re.search(r"statements (\d+) → (\d+), (\d+) tries", done.stdout)
                assert found, done.stdout
                before, after, tries = (int(g) for g in found.groups())
                print(f"{name:32} {jobs:4} {before:>5} → {after:<4} {tries:6} {seconds:8.1f} {seconds / tries:6.1f}")


if __name__ == "__main__":
    main()
