"""Kernels whose statements a pass copies: a software-pipelined loop whose body starts with scalar
statements and a guard (2 and 3 stages), ``T.use_swizzle``, a nest of loops written one per line,
and a user ``if`` over several statements (tl.IfStmtBinding gives each its own ``if``).

Each line the tests check carries a marker comment (``# @name``); the tests find each marker's
line in this file (marked_kernels.markers), so expected lines never come from lower-trace.
(No ``from __future__ import annotations``: TileLang evaluates the annotations.)"""

import tilelang.language as T


def guarded_pipeline(num_stages=2, M=128, N=128, K=512, block_M=64, block_N=64, block_K=32):
    """A block-sparse GEMM: each step of the pipelined loop reads its K block's index from a table
    (two scalar statements) and only loads and multiplies when the index is valid (the guard)."""
    steps = K // block_K

    @T.prim_func
    def guarded(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), Blocks: T.Tensor((steps,), "int32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")  # @gp_alloc_a
            B_shared = T.alloc_shared((block_K, block_N), "float16")  # @gp_alloc_b
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for k in T.Pipelined(steps, num_stages=num_stages):  # @gp_loop
                block = Blocks[k]  # @gp_block
                start = block * block_K  # @gp_start
                if block >= 0:  # @gp_guard
                    T.copy(A[by * block_M, start], A_shared)  # @gp_copy_a
                    T.copy(B[start, bx * block_N], B_shared)  # @gp_copy_b
                    T.gemm(A_shared, B_shared, C_local)  # @gp_gemm
            T.copy(C_local, C[by * block_M, bx * block_N])  # @gp_store

    return guarded


def swizzled_gemm(M=512, N=512, K=256, block_M=64, block_N=64, block_K=32):
    """A GEMM whose blocks are rasterised by T.use_swizzle (an attribute statement: no span)."""

    @T.prim_func
    def swizzled(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):  # @sw_kernel
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.use_swizzle(panel_size=4)  # @sw_swizzle
            T.clear(C_local)  # @sw_clear
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):  # @sw_loop
                T.copy(A[by * block_M, k * block_K], A_shared)  # @sw_copy_a
                T.copy(B[k * block_K, bx * block_N], B_shared)  # @sw_copy_b
                T.gemm(A_shared, B_shared, C_local)  # @sw_gemm
            T.copy(C_local, C[by * block_M, bx * block_N])  # @sw_store

    return swizzled


def loop_nest(M=64, N=32):
    """Loops written one per line, which TVMScript prints as one ``T.grid``; each generated ``for``
    is the user's loop of its variable."""

    @T.prim_func
    def nest(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(M):  # @nest_outer
                for j in T.serial(N):  # @nest_inner
                    B[i, j] = A[i, j] * 2.0 + 1.0  # @nest_body

    return nest


def guarded_statements(N=256, block=64):
    """A user ``if`` over several tile statements: tl.IfStmtBinding gives each statement its own copy
    of the ``if``. Each copy of the ``if`` is the user's ``if``; each statement under it is its own line."""

    @T.prim_func
    def guarded_tiles(A: T.Tensor((N, N), "float16"), Flag: T.Tensor((N // block,), "int32"), B: T.Tensor((N, N), "float16")):
        with T.Kernel(N // block, N // block, threads=128) as (bx, by):
            tile = T.alloc_shared((block, block), "float16")
            frag = T.alloc_fragment((block, block), "float32")
            if Flag[bx] > 0:  # @if_guard
                T.copy(A[by * block, bx * block], tile)  # @if_load
                for i, j in T.Parallel(block, block):
                    frag[i, j] = tile[i, j] * 2.0  # @if_scale
                T.copy(frag, B[by * block, bx * block])  # @if_store

    return guarded_tiles


def two_kernels(N=256, block=128):
    """One function, two ``T.Kernel`` blocks: two kernels in one generated source."""

    @T.prim_func
    def two_launches(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(N // block, threads=block) as bx:  # @first_kernel
            tx = T.get_thread_binding()
            B[bx * block + tx] = A[bx * block + tx] + 1.0  # @first_store
        with T.Kernel(N // block, threads=block) as bx:  # @second_kernel
            tx = T.get_thread_binding()
            C[bx * block + tx] = B[bx * block + tx] * 2.0  # @second_store

    return two_launches


def inlined_lets(N=256, block=64, region=2):
    """Scalars assigned a T.if_then_else that TileLang substitutes into the statements reading them
    (a loop's extent, an `if`, another let): codegen prints each as a ``condval`` block in front of
    the reading statement. The values tell the blocks apart: 2 / 1 steps, bx / bx - 2, 7 / 3."""

    @T.prim_func
    def lets(A: T.Tensor((N, N), "float16"), B: T.Tensor((N, N), "float16")):
        with T.Kernel(N // block, threads=128) as bx:
            tile = T.alloc_shared((block, block), "float16")
            steps = T.if_then_else(bx < region, bx + 2, bx - 1)  # @let_steps
            last = T.if_then_else(bx < region, bx, bx - region)  # @let_last
            for s in T.serial(steps):  # @let_loop
                late = T.if_then_else(s > last, 7, 3)  # @let_late
                if late != 3:  # @let_if
                    T.copy(A[s * block, bx * block], tile)  # @let_copy
                    T.copy(tile, B[s * block, bx * block])  # @let_store

    return lets


def guarded_store(rows=1024, dim=64, block=64, batch=4):
    """A store inside the user's `if` in a T.Parallel loop, at a row read from a table: TileLang adds
    bounds checks around it (tl.LegalizeSafeMemoryAccess) and rebuilds the store with the `if`'s span."""

    @T.prim_func
    def store_rows(Src: T.Tensor((block, dim), "float16"), Starts: T.Tensor((batch + 1,), "int32"), Out: T.Tensor((rows, dim), "float16")):
        with T.Kernel(T.ceildiv(rows, block), batch, threads=128) as (bx, b):
            tile = T.alloc_shared((block, dim), "float16")
            start = Starts[b]
            count = Starts[b + 1] - start
            T.copy(Src, tile)
            for i, d in T.Parallel(block, dim):  # @gs_loop
                if bx * block + i < count:  # @gs_if
                    Out[start + bx * block + i, d] = tile[i, d]  # @gs_store

    return store_rows
