"""Real TileLang kernels used by the tests, the benchmarks and the demo.

Each builder returns a fresh ``T.prim_func``. The CUDA ones are lowered to
CUDA source on the CPU; ``vector_add_c`` compiles for target "c" and runs.
(No ``from __future__ import annotations``: TileLang evaluates the annotations.)
"""

import inspect

import tilelang.language as T

# TileLang up to 0.1.9 marks CPU kernels with T.Kernel(..., is_cpu=True); later releases infer it.
_CPU_FLAG = "is_cpu" in inspect.signature(T.Kernel).parameters


def gemm(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32, dtype="float16", accum_dtype="float", num_stages=3):
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
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


def gemm_renamed(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32, dtype="float16", accum_dtype="float", num_stages=3):
    """gemm() as another author writes it: the same kernel with its own names for the shared
    buffers, the accumulator and the loop and block variables (the tensors keep theirs: TileLang
    orders a kernel's parameters by name, so other names there make another kernel)."""

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (tile_n, tile_m):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_acc = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[tile_m * block_M, ko * block_K], A_s)
                T.copy(B[ko * block_K, tile_n * block_N], B_s)
                T.gemm(A_s, B_s, C_acc)
            T.copy(C_acc, C[tile_m * block_M, tile_n * block_N])

    return gemm


def gemm_other_tensor_names(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32, dtype="float16", accum_dtype="float"):
    """gemm() with its tensors named X, W, Out: TileLang sorts the device kernel's parameters by
    name (Out, W_desc, X_desc instead of A_desc, B_desc, C), so this is another kernel, not a renaming."""

    @T.prim_func
    def gemm(X: T.Tensor((M, K), dtype), W: T.Tensor((K, N), dtype), Out: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(X[by * block_M, k * block_K], A_shared)
                T.copy(W[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, Out[by * block_M, bx * block_N])

    return gemm


def elementwise_add(M=1024, N=1024, block_M=32, block_N=32, dtype="float32"):
    @T.prim_func
    def elementwise_add(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j] + B[by * block_M + i, bx * block_N + j]

    return elementwise_add


def row_sum(M=1024, N=128, block_M=64, dtype="float32"):
    @T.prim_func
    def row_sum(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            A_local = T.alloc_fragment((block_M, N), dtype)
            B_local = T.alloc_fragment((block_M,), dtype)
            T.copy(A[bx * block_M, 0], A_local)
            T.reduce_sum(A_local, B_local, dim=1)
            T.copy(B_local, B[bx * block_M])

    return row_sum


def flash_attention(batch=1, heads=4, seq_len=256, dim=64, block_M=64, block_N=64):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, seq_len, heads, dim]
    dtype, accum = "float16", "float"

    @T.prim_func
    def flash_attention(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(shape, dtype),
        V: T.Tensor(shape, dtype),
        Output: T.Tensor(shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=128) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum)
            scores_max = T.alloc_fragment([block_M], accum)
            scores_max_prev = T.alloc_fragment([block_M], accum)
            scores_scale = T.alloc_fragment([block_M], accum)
            scores_sum = T.alloc_fragment([block_M], accum)
            logsum = T.alloc_fragment([block_M], accum)

            T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum))
            for k in T.Pipelined(T.ceildiv(seq_len, block_N), num_stages=2):
                T.copy(K[bz, k * block_N : (k + 1) * block_N, by, :], K_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.copy(acc_s, acc_s_cast)
                T.copy(V[bz, k * block_N : (k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return flash_attention


def vector_add_c(N=64, dtype="float32"):
    """A kernel for target "c": compiled by gcc through the cython backend and run on the CPU."""
    if _CPU_FLAG:

        @T.prim_func
        def vector_add(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
            with T.Kernel(1, is_cpu=True) as _:
                for i in T.serial(N):
                    C[i] = A[i] + B[i]

        return vector_add

    @T.prim_func
    def vector_add(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(1) as _:
            for i in T.serial(N):
                C[i] = A[i] + B[i]

    return vector_add


def scale_c(N=64, factor=3.0, dtype="float32"):
    """A second C-target kernel, to check that two kernels of one script are traced apart."""
    if _CPU_FLAG:

        @T.prim_func
        def scale(A: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
            with T.Kernel(1, is_cpu=True) as _:
                for i in T.serial(N):
                    C[i] = A[i] * T.float32(factor)

        return scale

    @T.prim_func
    def scale(A: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(1) as _:
            for i in T.serial(N):
                C[i] = A[i] * T.float32(factor)

    return scale


def scale_plus_c(N=64, factor=3.0, dtype="float32"):
    """scale_c after its author changed it (C = A * factor + 1): the same name and buffers, other code."""

    @T.prim_func
    def scale(A: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(1) as _:
            for i in T.serial(N):
                C[i] = A[i] * T.float32(factor) + T.float32(1)

    return scale


def nested_parallel(M=64, N=64):
    """Fails TileLang's first semantic check (a pass): a parallel loop inside a parallel loop's body."""

    @T.prim_func
    def nested_parallel(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(M):
                B[i, 0] = A[i, 0]
                for j in T.Parallel(N):
                    B[i, j] = A[i, j]

    return nested_parallel


def transposed_fragment(N=64):
    """Fails in tl.LayoutInference: one parallel loop reads a fragment as (i, j) and as (j, i)."""

    @T.prim_func
    def transposed_fragment(A: T.Tensor((N, N), "float32"), B: T.Tensor((N, N), "float32")):
        with T.Kernel(1, threads=128) as _:
            frag = T.alloc_fragment((N, N), "float32")
            for i, j in T.Parallel(N, N):
                frag[i, j] = A[i, j]
            for i, j in T.Parallel(N, N):
                B[i, j] = frag[i, j] + frag[j, i]

    return transposed_fragment


def shape_mismatch():
    """Fails in tl.LowerTileOp (a shared 32x48 tile copied to a 64x64 one), whose input holds layouts."""

    @T.prim_func
    def shape_mismatch(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            s = T.alloc_shared((32, 48), "float32")
            T.copy(A[0:32, 0:48], s)
            T.copy(s, B[0:64, 0:64])

    return shape_mismatch


def padded_transposed_fragment(N=64):
    """transposed_fragment's failure in tl.LayoutInference among statements it does not need (a
    row reduction, an epilogue, extra outputs): what `lower-trace reduce` must take away. The
    lines marked "padding" are those."""

    @T.prim_func
    def padded_transposed_fragment(
        A: T.Tensor((N, N), "float32"), B: T.Tensor((N, N), "float32"), C: T.Tensor((N,), "float32"), D: T.Tensor((N, N), "float32")
    ):
        with T.Kernel(1, threads=128) as _:
            frag = T.alloc_fragment((N, N), "float32")
            other = T.alloc_fragment((N, N), "float32")  # padding
            row = T.alloc_fragment((N,), "float32")  # padding
            T.copy(A, other)  # padding
            T.reduce_sum(other, row, dim=1)  # padding
            T.copy(row, C)  # padding
            for i, j in T.Parallel(N, N):
                frag[i, j] = A[i, j]
            for i, j in T.Parallel(N, N):  # padding
                D[i, j] = other[i, j] * 2.0  # padding
            for i, j in T.Parallel(N, N):
                B[i, j] = frag[i, j] + frag[j, i]

    return padded_transposed_fragment


def padded_shape_mismatch():
    """shape_mismatch's failure in tl.LowerTileOp among statements it does not need."""

    @T.prim_func
    def padded_shape_mismatch(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            s = T.alloc_shared((32, 48), "float32")
            t = T.alloc_shared((64, 64), "float32")  # padding
            f = T.alloc_fragment((64, 64), "float32")  # padding
            T.copy(A, t)  # padding
            T.copy(t, f)  # padding
            for i, j in T.Parallel(64, 64):  # padding
                f[i, j] = f[i, j] + 1.0  # padding
            T.copy(A[0:32, 0:48], s)
            T.copy(f, C)  # padding
            T.copy(s, B[0:64, 0:64])

    return padded_shape_mismatch


def padded_gemm_transposed_fragment(M=256, N=256, K=256, block=64):
    """The transposed fragment's failure (tl.LayoutInference) at the end of a pipelined GEMM with a
    row-max epilogue and extra outputs: a larger input for `lower-trace reduce` (benchmarks/reduce.py)."""

    @T.prim_func
    def padded_gemm_transposed_fragment(
        A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32"),
        D: T.Tensor((M,), "float32"), E: T.Tensor((M, N), "float32"),
    ):  # fmt: skip
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block, block), "float16")
            B_shared = T.alloc_shared((block, block), "float16")
            acc = T.alloc_fragment((block, block), "float32")
            frag = T.alloc_fragment((block, block), "float32")
            row = T.alloc_fragment((block,), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, block), num_stages=2):
                T.copy(A[by * block, k * block], A_shared)
                T.copy(B[k * block, bx * block], B_shared)
                T.gemm(A_shared, B_shared, acc)
            T.reduce_max(acc, row, dim=1)
            for i, j in T.Parallel(block, block):
                acc[i, j] = acc[i, j] - row[i]
            for i, j in T.Parallel(block, block):
                frag[i, j] = acc[i, j] * 2.0
            for i in T.Parallel(block):
                D[by * block + i] = row[i]
            for i, j in T.Parallel(block, block):
                E[by * block + i, bx * block + j] = frag[i, j] + frag[j, i]  # the bug: frag read transposed
            T.copy(acc, C[by * block, bx * block])

    return padded_gemm_transposed_fragment


CUDA_KERNELS = {
    "gemm": gemm,
    "elementwise": elementwise_add,
    "row_sum": row_sum,
    "flash_attention": flash_attention,
}


def scaled_add(M=1024, N=1024, factor=3.0, block_M=32, block_N=32, threads=128, dtype="float32"):
    """C = A * factor + B: one small kernel with many variants (constants and tiles), as a sweep makes."""

    @T.prim_func
    def scaled_add(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((M, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j] * T.cast(factor, dtype) + B[by * block_M + i, bx * block_N + j]

    return scaled_add


def sweep_variants(count):
    """`count` distinct variants of scaled_add (same name, same buffers): factor x tiles x threads."""
    tiles = [(32, 32), (16, 64), (64, 16), (32, 64), (64, 32), (16, 32)]
    threads = [128, 256]
    out = []
    for i in range(count):
        block_m, block_n = tiles[i % len(tiles)]
        factor = float(1 + i // (len(tiles) * len(threads)))
        out.append(dict(factor=factor, block_M=block_m, block_N=block_n, threads=threads[(i // len(tiles)) % len(threads)]))
    return out


# --- autotune-shaped compiles (test_autotune.py) ---------------------------------------------


def tiled_axpy(N=2520, block=24, factor=2.0, nested=False):
    """C = A * factor + B for target "c", in tiles of `block`: the variants an autotuning sweep
    compiles. Each block size leaves its own literals (`bx * 24`) in the TIR and the C source.
    nested=True is a variant that fails TileLang's first semantic check (NestedLoopChecker)."""
    if nested:

        @T.prim_func
        def tiled_axpy(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, block)) as bx:
                for i in T.Parallel(block):
                    C[bx * block + i] = A[bx * block + i]
                    for j in T.Parallel(block):
                        C[bx * block + j] = B[bx * block + j]

        return tiled_axpy

    @T.prim_func
    def tiled_axpy(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.serial(block):
                C[bx * block + i] = A[bx * block + i] * T.float32(factor) + B[bx * block + i]

    return tiled_axpy


def _lazy_axpy(N, factor, block=8):
    @T.prim_func
    def lazy_axpy(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.serial(block):
                C[bx * block + i] = A[bx * block + i] * T.float32(factor) + B[bx * block + i]

    return lazy_axpy


def eager_axpy(A, B, C, factor: float = 2.0, block: int = 8):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    C: T.Tensor[[N], T.float32]
    with T.Kernel(T.ceildiv(N, block)) as bx:
        for i in T.serial(block):
            C[bx * block + i] = A[bx * block + i] * T.float32(factor) + B[bx * block + i]


def jit_axpy(style):
    """A fresh `@tilelang.jit` wrapper (own kernel cache) for target "c" + cython, runnable with CPU
    torch tensors. "lazy": axpy(N, factor, block) returns the kernel, which returns C; "eager":
    axpy(A, B, C, factor=, block=) specialises on A's length and the scalars and runs at once."""
    import tilelang

    if style == "lazy":
        return tilelang.jit(target="c", execution_backend="cython", out_idx=[-1])(_lazy_axpy)
    return tilelang.jit(target="c", execution_backend="cython")(eager_axpy)
