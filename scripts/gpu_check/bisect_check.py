"""The numeric check `lower-trace bisect` runs in the GPU check (exit 0: good, 3: wrong numbers).

    python bisect_check.py --target cuda|c [--arch sm_90a] [--inject VectorizeLoop]

It compiles C = A * 3.0 (CUDA on device 0, or C through gcc), runs it and compares with torch.
--inject slips a miscompiling pass into TileLang's pipeline right after the named pass (as
testing/integration/test_bisect.py does): a stand-in for a compiler bug that turns 3.0 into 3.5.
"""

import argparse
import os
import sys

import tilelang
import tilelang.language as T
import tilelang.transform
import torch
from tilelang import tvm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "testing"))
import kernels


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tl.BuggyConstantFold")
def buggy(func, mod, ctx):
    def change(node):
        if isinstance(node, tvm.tirx.FloatImm) and node.value == 3.0:
            return tvm.tirx.FloatImm(node.dtype, 3.5)
        return None

    return func.with_body(tvm.tirx.stmt_functor.ir_transform(func.body, None, change))


def inject(name):
    real = getattr(tilelang.transform, name)

    def wrapped(*args, **kwargs):
        return tvm.transform.Sequential([real(*args, **kwargs), buggy], name="tl." + name)

    setattr(tilelang.transform, name, wrapped)


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
    if args.inject:
        inject(args.inject)
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
