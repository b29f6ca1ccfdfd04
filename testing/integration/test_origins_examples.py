"""The source map on kernels from TileLang's own examples (testing/example_kernels.py), where a
statement TileLang's code builds shares its buffers with a user's line beside it: the two
T.reduce_max of a top-k (the user's masking loop uses the same logits_frag and max_val), an
implicit-GEMM convolution (T.im2col and T.gemm share data_shared; warp specialisation rebuilds
the im2col with a barrier) and a per-token fp8 cast (T.reduce_absmax zeroes y_amax_local, which
the next line also stores to).

Ground truth is the kernels' text: each asked line's marker comment, and what a reader derives
from it -- a reduction's lowering (its init, its update loop, its all-reduce) writes the
reduction's output buffer from its input buffer; an im2col's TMA load is the only im2col load."""

import json
import re
import subprocess

import pytest

tilelang = pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")  # 0.1.15: spans on statements

import example_kernels  # noqa: E402
import lower_trace  # noqa: E402
from support import lower_trace_cli  # noqa: E402

MARKS = example_kernels.markers()
with open(example_kernels.__file__, encoding="utf-8") as _source:
    SOURCE = _source.read().splitlines()


@pytest.fixture(scope="module")
def example_trace(tmp_path_factory):
    from tvm.target import Target

    with lower_trace.trace(mode="html", trace_dir=str(tmp_path_factory.mktemp("examples"))) as run, Target({"kind": "cuda", "arch": "sm_90a"}) as target:
        tilelang.lower(example_kernels.tl_topk_tir(), target=target)
        tilelang.lower(example_kernels.convolution_tir(), target=target)
        tilelang.lower(example_kernels.per_token_cast_to_fp8_tir(), target=target)
        tilelang.lower(example_kernels.layernorm_bwd_tir(), target=target)
        tilelang.lower(example_kernels.warp_specialize_tir(), target=target)
    return run.run_dir


def cli(*args):
    out = subprocess.run([lower_trace_cli(), *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def blamed(run_dir, name):
    """[(CUDA text, origin line in example_kernels.py or None, certain)], from `blame --source --json`."""
    (device, *_) = cli("blame", run_dir, "-k", name, "--source", "--json")
    found = []
    for line in device["lines"]:
        origin = line["origin"]
        mine = origin is not None and origin["file"].endswith("example_kernels.py")
        found.append((line["text"], origin["line"] if mine else None, bool(mine and origin["certain"])))
    return found


def where(run_dir, name, marker):
    """The generated device lines `where` lists for a marked line."""
    answer = cli("where", run_dir, "-k", name, f"example_kernels.py:{MARKS[marker]}", "--json")
    return [line["text"] for source in answer["sources"] if source["role"] == "device" for line in source["lines"]]


def reduce_buffers(marker):
    """(input, output) of a T.reduce_* line, read off the kernel's text."""
    match = re.search(r"T\.reduce_\w+\((\w+), (\w+)", SOURCE[MARKS[marker] - 1])
    assert match, marker
    return match.groups()


def updates(lines, output, source):
    """The CUDA lines that fold `source` into `output`: ``output[i] = max(output[i], ...source...)``."""
    pattern = re.compile(rf"^\s*{output}\[[^\]]*\] = max\({output}\[[^\]]*\], .*\b{source}\[")
    return [line for line in lines if pattern.search(line[0])]


def test_each_topk_reduce_owns_its_update_loop(example_trace):
    lines = blamed(example_trace, "tl_topk")
    for marker in ("topk_reduce_val", "topk_reduce_idx"):
        source, output = reduce_buffers(marker)
        found = updates(lines, output, source)
        assert found, marker
        assert all(line == MARKS[marker] and certain for _, line, certain in found), (marker, found)


def test_a_user_line_sharing_the_reduce_buffers_gets_none_of_its_lowering(example_trace):
    """The masking loop reads max_val and writes logits_frag, as the reduce's update does; its
    lines are its own select, not the reduction's max."""
    source, output = reduce_buffers("topk_reduce_val")
    mask = where(example_trace, "tl_topk", "topk_mask")
    assert mask
    assert not [text for text in mask if re.search(rf"\b{output}\[[^\]]*\] = max\(", text)], mask
    reduce = where(example_trace, "tl_topk", "topk_reduce_val")
    assert any(re.search(rf"= max\({output}\[.*\b{source}\[", text) for text in reduce), reduce


def test_im2col_owns_its_tma_load(example_trace):
    lines = blamed(example_trace, "convolution")
    loads = [(text, line, certain) for text, line, certain in lines if "tma_load_im2col" in text]
    assert loads
    assert all(line == MARKS["conv_im2col"] and certain for _, line, certain in loads), loads
    # The transaction count armed right before the load is the load's.
    index = next(i for i, (text, _, _) in enumerate(lines) if "tma_load_im2col" in text)
    armed = lines[index - 1]
    assert "expect_transaction" in armed[0] and armed[1] == MARKS["conv_im2col"], armed


def test_where_im2col_lists_its_load_and_the_gemm_does_not(example_trace):
    im2col = where(example_trace, "convolution", "conv_im2col")
    assert any("tma_load_im2col" in text for text in im2col), im2col
    gemm = where(example_trace, "convolution", "conv_gemm")
    assert any("wgmma" in text for text in gemm), gemm
    assert not [text for text in gemm if "tma_load" in text], gemm


def test_reduce_absmax_owns_its_init(example_trace):
    """T.reduce_absmax zeroes its output before the loop that folds the input in: the first store
    to the output in the CUDA is the reduction's, not the next line's (which also stores to it)."""
    source, output = reduce_buffers("cast_absmax")
    lines = blamed(example_trace, "per_token_cast_to_fp8")
    stores = [(text, line, certain) for text, line, certain in lines if re.match(rf"\s*{output}\[[^\]]*\] = ", text)]
    assert len(stores) >= 3, stores
    init, update = stores[0], stores[1]
    assert not re.search(rf"\b{output}\[", init[0].split("=", 1)[1]), init  # a constant: the init
    assert re.search(rf"\b{source}\[", update[0]), update
    for text, line, certain in (init, update):
        assert line == MARKS["cast_absmax"] and certain, text
    clamp = where(example_trace, "per_token_cast_to_fp8", "cast_clamp_amax")
    assert init[0] not in clamp and clamp, clamp


def test_two_reductions_in_a_row_each_own_their_lowering(example_trace):
    # Both T.reduce_sum are TileLang's macro: their statements' spans name reduce_op.py, so which of
    # the two user lines built a statement is not in its span. Each lowering (init, add, all-reduce)
    # writes the reduction's output buffer from its input buffer: read off the kernel's text.
    lines = blamed(example_trace, "main")
    for marker in ("ln_reduce_dx_hat", "ln_reduce_dx_hat_x_hat"):
        source, output = reduce_buffers(marker)
        writes = [line for line in lines if re.match(rf"^\s*{output}\[", line[0])]
        assert len(writes) >= 3, (marker, writes)  # the init, the add, the all-reduce
        assert all(origin == MARKS[marker] and certain for _, origin, certain in writes), (marker, writes)
        assert any(re.search(rf"\b{source}\[", text) for text, _, _ in writes)
        listed = where(example_trace, "main", marker)
        assert [text for text, _, _ in writes] == [text for text in listed if re.match(rf"^\s*{output}\[", text)]


def test_where_marks_what_it_inferred(example_trace):
    # where and blame --source answer from the same source map by different code: every line where
    # lists is marked as blame marks it (certain or inferred), and the terminal puts ? on the inferred.
    location = f"example_kernels.py:{MARKS['conv_im2col']}"
    answer = cli("where", example_trace, "-k", "convolution", location, "--json")
    (device,) = [source for source in answer["sources"] if source["role"] == "device"]
    (blame, *_) = cli("blame", example_trace, "-k", "convolution", "--source", "--json")
    by_line = {line["line"]: line["origin"] for line in blame["lines"]}
    assert device["lines"] and any(not line["certain"] for line in device["lines"])  # the expect_transaction beside the load
    for line in device["lines"]:
        assert by_line[line["line"]]["certain"] == line["certain"] and by_line[line["line"]]["how"] == line["how"]
    out = subprocess.run([lower_trace_cli(), "where", example_trace, "-k", "convolution", location], capture_output=True, text=True, timeout=120).stdout
    section = out.split("generated source (device):", 1)[1].split("passes that changed", 1)[0]
    marked = {int(m.group(1)): m.group(2) == "?" for m in re.finditer(r"^\s+(\d+)([ ?])\| ", section, re.MULTILINE)}
    assert marked == {line["line"]: not line["certain"] for line in device["lines"]}
    assert f"({sum(not line['certain'] for line in device['lines'])} inferred: ?)" in section.splitlines()[0]


def test_a_gemm_in_a_users_warp_specialized_block_is_not_the_blocks_line(example_trace):
    # TileLang spans what it builds for a statement of a `with T.ws(0):` body to that `with` line,
    # the gemm's expansion block included: that span says which block, not which statement. The
    # wgmma lines (its descriptors, its wgmma_ss) are the T.gemm's, by the kernel's text; never the
    # `with` line's as a fact.
    lines = blamed(example_trace, "matmul_warp_specialize_copy_1_gemm_0")
    wgmma = [line for line in lines if re.search(r"\bwgmma_ss<|initialize_wgmma_descriptor<", line[0])]
    assert wgmma
    assert all(origin == MARKS["ws_gemm"] for _, origin, _ in wgmma), wgmma
    assert not [line for line in lines if line[1] == MARKS["ws_consumer"] and line[2] and re.search(r"wgmma", line[0])]
    listed = where(example_trace, "matmul_warp_specialize_copy_1_gemm_0", "ws_gemm")
    assert any("wgmma_ss<" in text for text in listed)
