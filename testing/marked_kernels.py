"""Kernels whose lines carry marker comments (``# @name``): the source-map tests find each
marker's line number in this file itself, so the expected lines never come from lower-trace.
(No ``from __future__ import annotations``: TileLang evaluates the annotations.)"""

import inspect
import re

import tilelang.language as T

_CPU_FLAG = "is_cpu" in inspect.signature(T.Kernel).parameters


def markers(path: str = __file__) -> dict[str, int]:
    """{marker name: its line in the file} (this one, or another kept the same way: example_kernels.py)."""
    found = {}
    with open(path, encoding="utf-8") as source:
        for number, line in enumerate(source, start=1):
            match = re.search(r"# @([a-z0-9_]+)\s*$", line)
            if match:
                found[match.group(1)] = number
    return found


def gemm_ws(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32):
    """Lowered for sm_90a: warp-specialised, TMA loads, wgmma, a 3-stage pipeline."""

    @T.prim_func
    def gemm_ws(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):  # @kernel
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float")  # @alloc_c
            T.clear(C_local)  # @clear
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):  # @pipelined
                T.copy(A[by * block_M, k * block_K], A_shared)  # @copy_a
                T.copy(B[k * block_K, bx * block_N], B_shared)  # @copy_b
                T.gemm(A_shared, B_shared, C_local)  # @gemm
            T.copy(C_local, C[by * block_M, bx * block_N])  # @epilogue

    return gemm_ws


def flash_attention(batch=1, heads=4, seq_len=256, dim=64, block_M=64, block_N=64):
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    shape = [batch, seq_len, heads, dim]

    @T.prim_func
    def flash_fwd(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"), V: T.Tensor(shape, "float16"), Output: T.Tensor(shape, "float16")):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=128) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], "float16")
            K_shared = T.alloc_shared([block_N, dim], "float16")
            V_shared = T.alloc_shared([block_N, dim], "float16")
            acc_s = T.alloc_fragment([block_M, block_N], "float")
            acc_s_cast = T.alloc_fragment([block_M, block_N], "float16")
            acc_o = T.alloc_fragment([block_M, dim], "float")
            scores_max = T.alloc_fragment([block_M], "float")
            scores_max_prev = T.alloc_fragment([block_M], "float")
            scores_scale = T.alloc_fragment([block_M], "float")
            scores_sum = T.alloc_fragment([block_M], "float")
            logsum = T.alloc_fragment([block_M], "float")
            T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)  # @fa_copy_q
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity("float"))
            for k in T.Pipelined(T.ceildiv(seq_len, block_N), num_stages=2):  # @fa_pipelined
                T.copy(K[bz, k * block_N : (k + 1) * block_N, by, :], K_shared)  # @fa_copy_k
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)  # @fa_gemm_qk
                T.copy(scores_max, scores_max_prev)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)  # @fa_reduce_max
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)  # @fa_scale
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.copy(acc_s, acc_s_cast)
                T.copy(V[bz, k * block_N : (k + 1) * block_N, by, :], V_shared)  # @fa_copy_v
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)  # @fa_gemm_pv
                T.reduce_sum(acc_s, scores_sum, dim=1)  # @fa_reduce_sum
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]  # @fa_normalise
            T.copy(acc_o, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])  # @fa_epilogue

    return flash_fwd


def saxpy_c(N=64):
    """For target "c": compiled and run on the CPU."""
    flags = {"is_cpu": True} if _CPU_FLAG else {}

    @T.prim_func
    def saxpy(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), Out: T.Tensor((N,), "float32")):
        with T.Kernel(1, **flags) as _:
            for i in T.serial(N):  # @cpu_loop
                Out[i] = X[i] * T.float32(2.0) + Y[i]  # @cpu_body

    return saxpy


def transposed_fragment_marked(N=64):
    """Fails in tl.LayoutInference: one parallel loop reads a fragment as (i, j) and as (j, i).
    TVM's error names the fragment's allocation (``--> file:line``), from its span."""

    @T.prim_func
    def transposed_fragment(A: T.Tensor((N, N), "float32"), B: T.Tensor((N, N), "float32")):
        with T.Kernel(1, threads=128) as _:  # @tf_kernel
            frag = T.alloc_fragment((N, N), "float32")  # @tf_alloc
            for i, j in T.Parallel(N, N):  # @tf_fill_loop
                frag[i, j] = A[i, j]  # @tf_fill
            for i, j in T.Parallel(N, N):  # @tf_read_loop
                B[i, j] = frag[i, j] + frag[j, i]  # @tf_read

    return transposed_fragment


def thread_allreduce(N=1024, reduce_thread=32):
    """A row sum reduced across a warp by hand (``T.attr(..., "reduce_scope")`` around
    ``T.tvm_thread_allreduce``, as TileLang's dequantize GEMV writes it)."""

    @T.prim_func
    def thread_allreduce(A: T.Tensor((1, N), "float32"), C: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=reduce_thread) as _:
            acc = T.alloc_local((1,), "float32")
            reduced = T.alloc_local((1,), "float32")
            kr = T.get_thread_binding(0)
            T.clear(acc)
            for ko in T.serial(N // reduce_thread):
                acc[0] += A[0, ko * reduce_thread + kr]  # @ar_accumulate
            with T.attr(  # @ar_reduce_scope
                T.comm_reducer(lambda x, y: x + y, [T.cast(0, "float32")]),
                "reduce_scope",
                T.reinterpret(T.uint64(0), dtype="handle"),
            ):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, reduced[0], kr, dtype="handle"))  # @ar_allreduce
            if kr == 0:
                C[0] = reduced[0]  # @ar_store

    return thread_allreduce


def attention_backward(seq_len=256, heads=2, dim=64, block_M=64, block_N=64):
    """A flash-attention backward pass (dK, dV, and dQ by atomic adds): five T.gemm calls, several
    sharing an operand (K_tile in two, q_tile in two, do_tile in two), so a descriptor's buffers
    alone do not name its T.gemm."""
    shape = [1, seq_len, heads, dim]
    scale = (1.0 / dim) ** 0.5 * 1.44269504

    @T.prim_func
    def attn_bwd(
        Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"), V: T.Tensor(shape, "float16"), dO: T.Tensor(shape, "float16"),
        lse: T.Tensor([1, heads, seq_len], "float32"), Delta: T.Tensor([1, heads, seq_len], "float32"),
        dQ: T.Tensor(shape, "float32"), dK: T.Tensor(shape, "float16"), dV: T.Tensor(shape, "float16"),
    ):  # fmt: skip
        with T.Kernel(heads, T.ceildiv(seq_len, block_M), 1, threads=128) as (bx, by, bz):
            K_tile = T.alloc_shared([block_M, dim], "float16")
            V_tile = T.alloc_shared([block_M, dim], "float16")
            q_tile = T.alloc_shared([block_N, dim], "float16")
            do_tile = T.alloc_shared([block_N, dim], "float16")
            ds_tile = T.alloc_shared([block_M, block_N], "float16")
            lse_tile = T.alloc_shared([block_N], "float32")
            delta_tile = T.alloc_shared([block_N], "float32")
            p = T.alloc_fragment([block_M, block_N], "float32")
            p_half = T.alloc_fragment([block_M, block_N], "float16")
            dp = T.alloc_fragment([block_M, block_N], "float32")
            ds = T.alloc_fragment([block_M, block_N], "float16")
            dv_acc = T.alloc_fragment([block_M, dim], "float32")
            dk_acc = T.alloc_fragment([block_M, dim], "float32")
            dq_acc = T.alloc_fragment([block_N, dim], "float32")
            T.copy(K[bz, by * block_M : (by + 1) * block_M, bx, :], K_tile)  # @bw_copy_k
            T.copy(V[bz, by * block_M : (by + 1) * block_M, bx, :], V_tile)  # @bw_copy_v
            T.clear(dv_acc)  # @bw_clear_dv
            T.clear(dk_acc)  # @bw_clear_dk
            for k in T.Pipelined(T.ceildiv(seq_len, block_N), num_stages=2):  # @bw_loop
                T.copy(Q[bz, k * block_N : (k + 1) * block_N, bx, :], q_tile)  # @bw_copy_q
                T.clear(p)  # @bw_clear_p
                T.gemm(K_tile, q_tile, p, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)  # @bw_gemm_kq
                T.copy(lse[bz, bx, k * block_N : (k + 1) * block_N], lse_tile)  # @bw_copy_lse
                for i, j in T.Parallel(block_M, block_N):  # @bw_exp_loop
                    p[i, j] = T.exp2(p[i, j] * scale - lse_tile[j])  # @bw_exp
                T.copy(dO[bz, k * block_N : (k + 1) * block_N, bx, :], do_tile)  # @bw_copy_do
                T.clear(dp)  # @bw_clear_dp
                T.gemm(V_tile, do_tile, dp, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)  # @bw_gemm_vdo
                T.copy(p, p_half)  # @bw_cast_p
                T.gemm(p_half, do_tile, dv_acc, policy=T.GemmWarpPolicy.FullRow)  # @bw_gemm_dv
                T.copy(Delta[bz, bx, k * block_N : (k + 1) * block_N], delta_tile)  # @bw_copy_delta
                for i, j in T.Parallel(block_M, block_N):  # @bw_ds_loop
                    ds[i, j] = p[i, j] * (dp[i, j] - delta_tile[j])  # @bw_ds
                T.gemm(ds, q_tile, dk_acc, policy=T.GemmWarpPolicy.FullRow)  # @bw_gemm_dk
                T.copy(ds, ds_tile)  # @bw_store_ds
                T.clear(dq_acc)  # @bw_clear_dq
                T.gemm(ds_tile, K_tile, dq_acc, transpose_A=True)  # @bw_gemm_dq
                for i, j in T.Parallel(block_N, dim):  # @bw_dq_loop
                    T.atomic_add(dQ[bz, k * block_N + i, bx, j], dq_acc[i, j])  # @bw_dq_add
            T.copy(dv_acc, dV[bz, by * block_M : (by + 1) * block_M, bx, :])  # @bw_store_dv
            T.copy(dk_acc, dK[bz, by * block_M : (by + 1) * block_M, bx, :])  # @bw_store_dk

    return attn_bwd


def latent_attention(heads=64, seq_len=512, dim=256, pe_dim=64, block_H=64, block_N=64):
    """MLA decode in the style of DeepSeek's: two T.gemm per loop into one score (the latent and the
    rotary part), a row max and sum, and the output gemm; one query token, a block of heads."""
    scale = (1.0 / (dim + pe_dim)) ** 0.5 * 1.44269504

    @T.prim_func
    def mla_decode(
        Q: T.Tensor([1, heads, dim], "float16"), Q_pe: T.Tensor([1, heads, pe_dim], "float16"),
        KV: T.Tensor([1, seq_len, 1, dim], "float16"), K_pe: T.Tensor([1, seq_len, 1, pe_dim], "float16"),
        Output: T.Tensor([1, heads, dim], "float16"),
    ):  # fmt: skip
        with T.Kernel(heads // block_H, 1, threads=128) as (hx, bz):
            q_lat = T.alloc_shared([block_H, dim], "float16")
            q_rot = T.alloc_shared([block_H, pe_dim], "float16")
            kv_lat = T.alloc_shared([block_N, dim], "float16")
            k_rot = T.alloc_shared([block_N, pe_dim], "float16")
            out_tile = T.alloc_shared([block_H, dim], "float16")
            score = T.alloc_fragment([block_H, block_N], "float32")
            score_half = T.alloc_fragment([block_H, block_N], "float16")
            acc = T.alloc_fragment([block_H, dim], "float32")
            row_max = T.alloc_fragment([block_H], "float32")
            row_max_old = T.alloc_fragment([block_H], "float32")
            rescale = T.alloc_fragment([block_H], "float32")
            row_sum = T.alloc_fragment([block_H], "float32")
            total = T.alloc_fragment([block_H], "float32")
            T.copy(Q[bz, hx * block_H : (hx + 1) * block_H, :], q_lat)  # @mla_copy_q
            T.copy(Q_pe[bz, hx * block_H : (hx + 1) * block_H, :], q_rot)  # @mla_copy_qpe
            T.fill(acc, 0)  # @mla_fill_acc
            T.fill(total, 0)  # @mla_fill_total
            T.fill(row_max, -T.infinity("float32"))  # @mla_fill_max
            for n in T.Pipelined(T.ceildiv(seq_len, block_N), num_stages=2):  # @mla_loop
                T.copy(KV[bz, n * block_N : (n + 1) * block_N, 0, :], kv_lat)  # @mla_copy_kv
                T.copy(K_pe[bz, n * block_N : (n + 1) * block_N, 0, :], k_rot)  # @mla_copy_kpe
                T.clear(score)  # @mla_clear_score
                T.gemm(q_lat, kv_lat, score, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)  # @mla_gemm_lat
                T.gemm(q_rot, k_rot, score, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)  # @mla_gemm_rot
                T.copy(row_max, row_max_old)  # @mla_keep_max
                T.reduce_max(score, row_max, dim=1, clear=False)  # @mla_reduce_max
                for i in T.Parallel(block_H):  # @mla_rescale_loop
                    rescale[i] = T.exp2(row_max_old[i] * scale - row_max[i] * scale)  # @mla_rescale
                for i, j in T.Parallel(block_H, block_N):  # @mla_exp_loop
                    score[i, j] = T.exp2(score[i, j] * scale - row_max[i] * scale)  # @mla_exp
                T.reduce_sum(score, row_sum, dim=1)  # @mla_reduce_sum
                T.copy(score, score_half)  # @mla_cast
                for i, j in T.Parallel(block_H, dim):  # @mla_scale_loop
                    acc[i, j] *= rescale[i]  # @mla_scale_acc
                T.gemm(score_half, kv_lat, acc, policy=T.GemmWarpPolicy.FullRow)  # @mla_gemm_out
                for i in T.Parallel(block_H):  # @mla_total_loop
                    total[i] = total[i] * rescale[i] + row_sum[i]  # @mla_total
            for i, j in T.Parallel(block_H, dim):  # @mla_norm_loop
                acc[i, j] /= total[i]  # @mla_norm
            T.copy(acc, out_tile)  # @mla_to_shared
            T.copy(out_tile, Output[bz, hx * block_H : (hx + 1) * block_H, :])  # @mla_store

    return mla_decode


@T.macro
def scaled_exp(out, x, i, scale):
    out[i] = T.exp2(x[i] * scale)  # @macro_body


def macro_user(N=256):
    """Calls a T.macro defined above: TileLang attributes the macro's statements to the call."""

    @T.prim_func
    def macro_user(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(N // 128, threads=128) as bx:
            for i in T.Parallel(128):
                scaled_exp(Y, X, bx * 128 + i, 0.5)  # @macro_call

    return macro_user


def swizzled_copy(N=256, block=64):
    """T.use_swizzle: an attribute TVMScript prints concisely (``T.attr(None, ...)``) only without a comment."""

    @T.prim_func
    def swizzled(A: T.Tensor((N, N), "float16"), B: T.Tensor((N, N), "float16")):
        with T.Kernel(N // block, N // block, threads=128) as (bx, by):
            tile = T.alloc_shared((block, block), "float16")
            T.use_swizzle(10)  # @swizzle_call
            T.copy(A[by * block, bx * block], tile)  # @swizzle_load
            T.copy(tile, B[by * block, bx * block])  # @swizzle_store

    return swizzled
