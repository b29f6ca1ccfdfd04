"""The source map on kernels with several T.gemm calls that share operands: a flash-attention
backward (five gemms) and an MLA-style decode (two gemms into one score, then the output gemm).

Ground truth is the kernels' own text (testing/marked_kernels.py): each line's marker comment,
and each T.gemm's operands read off its line. A gemm's lowering is one brace block of the CUDA
source holding its wgmma; the blocks come in the order of the T.gemm lines. Every line of every
descriptor, wgmma, TMA load/store, reduction and element-wise body must map to its marker, and the
descriptors and wgmma calls must be known from the IR (certain), not guessed."""

import json
import re
import subprocess

import pytest

tilelang = pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")  # 0.1.15: spans on statements

import lower_trace  # noqa: E402
import marked_kernels  # noqa: E402
from support import lower_trace_cli  # noqa: E402

MARKS = marked_kernels.markers()
with open(marked_kernels.__file__, encoding="utf-8") as _source:
    SOURCE = _source.read().splitlines()
BACKWARD_GEMMS = ["bw_gemm_kq", "bw_gemm_vdo", "bw_gemm_dv", "bw_gemm_dk", "bw_gemm_dq"]
MLA_GEMMS = ["mla_gemm_lat", "mla_gemm_rot", "mla_gemm_out"]


@pytest.fixture(scope="module")
def multi_gemm_trace(tmp_path_factory):
    from tvm.target import Target

    with lower_trace.trace(mode="html", trace_dir=str(tmp_path_factory.mktemp("multi_gemm"))) as run, Target({"kind": "cuda", "arch": "sm_90a"}) as target:
        tilelang.lower(marked_kernels.attention_backward(), target=target)
        tilelang.lower(marked_kernels.latent_attention(), target=target)
    return run.run_dir


def blamed(run_dir, name):
    """[(text, marker name or line or None, certain)] of the kernel's CUDA, from `blame --source --json`."""
    out = subprocess.run([lower_trace_cli(), "blame", run_dir, "-k", name, "--source", "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    (device, *_) = json.loads(out.stdout)
    names = {line: name for name, line in MARKS.items()}
    found = []
    for line in device["lines"]:
        origin = line["origin"]
        mark = names.get(origin["line"], origin["line"]) if origin and origin["file"].endswith("marked_kernels.py") else None
        found.append((line["text"], mark, bool(origin and origin["certain"])))
    return found


def operands(marker):
    """The buffers of a T.gemm line, read off the kernel's text."""
    match = re.search(r"T\.gemm\((\w+), (\w+), (\w+)", SOURCE[MARKS[marker] - 1])
    assert match, marker
    return set(match.groups())


def gemm_blocks(lines):
    """The CUDA brace blocks (a `{` alone on its line) that hold a wgmma, in order, without their braces."""
    blocks, start = [], None
    for i, (text, _, _) in enumerate(lines):
        if text.strip() == "{":
            start = i
        elif text.strip() == "}" and start is not None:
            block = lines[start + 1 : i]
            if any("wgmma_" in t for t, _, _ in block):
                blocks.append(block)
            start = None
    return blocks


def check_gemms(lines, gemms):
    blocks = gemm_blocks(lines)
    assert len(blocks) == len(gemms)
    wrong = []
    for block, marker in zip(blocks, gemms, strict=True):
        for text, mark, certain in block:
            if text.strip() in ("", "}", "#pragma unroll") or text.strip().startswith("for ("):
                continue
            if mark != marker:
                wrong.append((marker, mark, text.strip()))
            descriptor = re.search(r"initialize_wgmma_descriptor<[^>]*>\(\w+, \(&\(\(\(half_t\*\)(\w+)\)", text)
            if descriptor:
                assert descriptor.group(1) in operands(marker), (marker, text)  # the block is this gemm's lowering
            if descriptor or "wgmma_" in text or "GmmaDescriptor" in text:
                assert certain, f"a guess: {text.strip()}"
    assert not wrong, wrong


def check_patterns(lines, expected):
    for pattern, marker in expected.items():
        found = {(mark, text.strip()[:60]) for text, mark, _ in lines if re.search(pattern, text)}
        assert found, pattern
        assert {mark for mark, _ in found} == {marker}, (pattern, found)


def test_backward_every_descriptor_and_wgmma_on_its_own_gemm(multi_gemm_trace):
    check_gemms(blamed(multi_gemm_trace, "attn_bwd"), BACKWARD_GEMMS)


def test_backward_copies_and_element_wise_bodies(multi_gemm_trace):
    lines = blamed(multi_gemm_trace, "attn_bwd")
    check_patterns(
        lines,
        {
            r"tl::tma_load\(K_desc": "bw_copy_k",
            r"tl::tma_load\(V_desc": "bw_copy_v",
            r"tl::tma_load\(Q_desc": "bw_copy_q",
            r"tl::tma_load\(dO_desc": "bw_copy_do",
            r"tl::tma_load\(.*lse_tile": "bw_copy_lse",  # a 1-D TMA copy: no descriptor, the shared buffer names it
            r"tl::tma_load\(.*delta_tile": "bw_copy_delta",
            r"exp2f\(": "bw_exp",
            r"\*\(float2\*\)\(dp \+|delta_tile_local_cast \+ 0\) = ": "bw_ds",  # the body line, not the T.Parallel line
            r"AtomicAdd": "bw_dq_add",
            r"ptx_stmatrix.*ds_tile": "bw_store_ds",
            r"\*\(uint1\*\)\(dV \+": "bw_store_dv",
            r"\*\(uint1\*\)\(dK \+": "bw_store_dk",
        },
    )
    certain = {mark for text, mark, sure in lines if "tma_load" in text and sure}
    assert certain == {"bw_copy_k", "bw_copy_v", "bw_copy_q", "bw_copy_do", "bw_copy_lse", "bw_copy_delta"}


def test_mla_two_gemms_into_one_score_and_the_output_gemm(multi_gemm_trace):
    check_gemms(blamed(multi_gemm_trace, "mla_decode"), MLA_GEMMS)


def test_mla_copies_reductions_and_element_wise_bodies(multi_gemm_trace):
    check_patterns(
        blamed(multi_gemm_trace, "mla_decode"),
        {
            r"tl::tma_load\(Q_desc": "mla_copy_q",
            r"tl::tma_load\(Q_pe_desc": "mla_copy_qpe",
            r"tl::tma_load\(KV_desc": "mla_copy_kv",
            r"tl::tma_load\(K_pe_desc": "mla_copy_kpe",
            r"tl::tma_store\(": "mla_store",
            r"AllReduce<tl::MaxOp": "mla_reduce_max",
            r"AllReduce<tl::SumOp": "mla_reduce_sum",
            r"row_sum\[\w+\] = \(row_sum": "mla_reduce_sum",
            r"\*\(float2\*\)\(rescale \+ 0\) = ": "mla_rescale",
            r"make_float2\(rescale\[": "mla_scale_acc",
            r"\.x/v_": "mla_norm",
            r"\*\(float2\*\)\(total \+ 0\) = __": "mla_total",
            r"\*\(uint2\*\)\(score_half \+": "mla_cast",
            r"ptx_stmatrix.*out_tile": "mla_to_shared",
        },
    )


def test_guesses_are_marked_in_the_terminal(multi_gemm_trace):
    """`blame --source` prints an inferred origin with a `?`; a descriptor's origin has none."""
    out = subprocess.run([lower_trace_cli(), "blame", multi_gemm_trace, "-k", "attn_bwd", "--source"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    descriptor = next(line for line in out.stdout.splitlines() if "initialize_wgmma_descriptor" in line)
    assert f"marked_kernels.py:{MARKS['bw_gemm_kq']} " in descriptor
    assert re.search(r"marked_kernels\.py:\d+\? ", out.stdout)  # some lines are guesses, and say so


def test_where_on_a_macro_and_its_call(tmp_path):
    """A T.macro's statement keeps its own line; `where` on the line that calls it says where its code went."""
    from tvm.target import Target

    with lower_trace.trace(mode="html", trace_dir=str(tmp_path)) as run, Target({"kind": "cuda", "arch": "sm_90a"}) as target:
        tilelang.lower(marked_kernels.macro_user(), target=target)

    def where(marker):
        out = subprocess.run([lower_trace_cli(), "where", run.run_dir, "-k", "macro_user", f"marked_kernels.py:{MARKS[marker]}", "--json"],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        return out.returncode, json.loads(out.stdout)

    code, body = where("macro_body")
    assert code == 0 and any("exp2f" in line["text"] for line in body["sources"][0]["lines"])
    code, call = where("macro_call")
    assert code == 1 and not call["final_tir"]
    assert call["calls"] == {"name": "scaled_exp", "lines": [MARKS["macro_body"]]}


def test_a_kernel_with_use_swizzle_keeps_its_source_map(tmp_path):
    """TileLang's examples call T.use_swizzle; its attribute once switched the spans off for the process."""
    from tvm.target import Target

    with lower_trace.trace(mode="html", trace_dir=str(tmp_path)) as run, Target({"kind": "cuda", "arch": "sm_90a"}) as target:
        tilelang.lower(marked_kernels.swizzled_copy(), target=target)
    lines = blamed(run.run_dir, "swizzled")
    assert {mark for text, mark, _ in lines if "tma_store(B_desc" in text} == {"swizzle_store"}
    assert {mark for text, mark, _ in lines if "*(uint4*)(tile +" in text} == {"swizzle_load"}
    # The swizzle's attribute prints without a span: its line is the T.use_swizzle call, read off the kernel's function.
    assert {(mark, sure) for text, mark, sure in lines if "rasterization2DRow" in text} == {("swizzle_call", True)}
