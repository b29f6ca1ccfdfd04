"""Demo: lower a pipelined 1024x1024x1024 GEMM to CUDA source for sm_90a.

Runs on a machine without a GPU (TileLang generates CUDA source on the CPU).

    TL_LOWER_TRACE=html python examples/gemm.py
    lower-trace run examples/gemm.py
"""

import tilelang
import tilelang.language as T
from tilelang import tvm


def matmul(M, N, K, block_M=128, block_N=128, block_K=32, dtype="float16", accum_dtype="float"):
    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


def main():
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    with target:
        artifact = tilelang.lower(matmul(1024, 1024, 1024), target=target)
    print(f"generated {len(artifact.kernel_source.splitlines())} lines of CUDA")


if __name__ == "__main__":
    main()
