"""The numeric check `lower-trace bisect` runs in the GPU check (exit 0: good, 3: wrong numbers).

    python bisect_check.py --target cuda|c [--arch sm_90a] [--inject VectorizeLoop]

It compiles C = A * 3.0 (CUDA on device 0, or C through gcc), runs it and compares with torch.
--inject slips a miscompiling pass into TileLang's pipeline right after the named pass (as
testing/miscompile.py, which the bisect tests use too): a stand-in for a compiler bug that turns 3.0 into 3.5.
"""

import argparse
import os
import sys

import tilelang
import tilelang.language as T
import tilelang.transform
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "testing"))
import kernels
from miscompile import inject


def scale_cuda(N=1024, factor=3.0):
    @T.prim_func
    def scale(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                C[bx * 128 + i] = A[bx * 128 + i] * T.float32(factor)

    return scale


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", choices=("cuda", "c"), required=True)
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--inject", default="")
    args = parser.parse_args()
    injected = args.inject or os.environ.get("INJECT_MISCOMPILE", "")  # the environment's: regress --run's head side
    if injected:
        inject(injected)
    if args.target == "cuda":
        kernel = tilelang.compile(scale_cuda(), target={"kind": "cuda", "arch": args.arch})
        a = torch.arange(1024, dtype=torch.float32, device="cuda") - 500.5
        c = torch.zeros(1024, dtype=torch.float32, device="cuda")
    else:
        kernel = tilelang.compile(kernels.scale_c(factor=3.0), target="c", execution_backend="cython")
        a = torch.arange(64, dtype=torch.float32) - 20.5
        c = torch.zeros(64, dtype=torch.float32)
    kernel(a, c)
    good = torch.equal(c, a * 3.0)
    print("good" if good else f"wrong numbers: {c[:3].tolist()} ... for {(a * 3.0)[:3].tolist()} ...")
    return 0 if good else 3


if __name__ == "__main__":
    sys.exit(main())
