"""The source map on real kernels: which line of the user's program each generated line comes from.

Ground truth is the marker comments of testing/marked_kernels.py, found in that file itself, and
TileLang's own ``#line`` output (codegen with ``tl.emit_line_directives``): where it names the right
line the two agree; where it does not (the cases the issue measured), ours is the marked line."""

import json
import os
import re
import subprocess

import pytest

tilelang = pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")  # 0.1.15: spans on statements

import lower_trace  # noqa: E402
import marked_kernels  # noqa: E402
from support import lower_trace_cli as _cli  # noqa: E402

MARKS = marked_kernels.markers()
HERE = os.path.abspath(marked_kernels.__file__)
SM90 = {"kind": "cuda", "arch": "sm_90a"}


@pytest.fixture(scope="module")
def marked_trace(tmp_path_factory):
    from tvm.target import Target

    with lower_trace.trace(mode="html", trace_dir=str(tmp_path_factory.mktemp("origins"))) as run:
        with Target(SM90) as target:
            tilelang.lower(marked_kernels.gemm_ws(), target=target)
            tilelang.lower(marked_kernels.flash_attention(), target=target)
            tilelang.lower(marked_kernels.thread_allreduce(), target=target)
        tilelang.lower(marked_kernels.saxpy_c(), target="c")
        with Target(SM90) as target, pytest.raises(Exception, match="frag"):
            tilelang.lower(marked_kernels.transposed_fragment_marked(), target=target)
    return lower_trace.load_trace(run.run_dir)


def lower_trace_cli(*args):
    """The installed command, as a user runs it."""
    return subprocess.run([_cli(), *args], capture_output=True, text=True, timeout=120)


def blamed(trace, name):
    """blame --source --json of a kernel, as the command prints it: [(text, origin line or None)]."""
    out = lower_trace_cli("blame", trace.path, "-k", name, "--source", "--json")
    assert out.returncode == 0, out.stderr
    (device, *_) = json.loads(out.stdout)
    return [(line["text"], line["origin"]["line"] if line["origin"] and line["origin"]["file"] == HERE else None) for line in device["lines"]]


def lines_with(lines, pattern):
    found = [origin for text, origin in lines if re.search(pattern, text)]
    assert found, pattern
    return found


def test_gemm_every_generated_line_names_its_python_line(marked_trace):
    lines = blamed(marked_trace, "gemm_ws")
    assert set(lines_with(lines, r"tl::tma_load\(A_desc")) == {MARKS["copy_a"]}
    assert set(lines_with(lines, r"tl::tma_load\(B_desc")) == {MARKS["copy_b"]}
    assert set(lines_with(lines, r"wgmma_ss|warpgroup_arrive|warpgroup_commit")) == {MARKS["gemm"]}
    assert set(lines_with(lines, r"for \(int k(_1)? = 0")) == {MARKS["pipelined"]}  # producer's and consumer's loop
    assert set(lines_with(lines, r"\*\(uint1\*\)\(C \+")) == {MARKS["epilogue"]}
    assert set(lines_with(lines, r"make_float4\(broadcast_var")) == {MARKS["clear"]}
    assert set(lines_with(lines, r"float C_local\[")) == {MARKS["alloc_c"]}  # an allocation: a block's field, no span of its own
    # The loop over the B tile's two TMA boxes, which the copy's lowering makes: the copy's line.
    box_loop = next(i for i, (text, _) in enumerate(lines) if "tl::tma_load(B_desc" in text) - 1
    assert re.search(r"for \(int i = 0; i < 2;", lines[box_loop][0]) and lines[box_loop][1] == MARKS["copy_b"]


def test_flash_attention_copies_and_gemms(marked_trace):
    lines = blamed(marked_trace, "flash_fwd")
    assert set(lines_with(lines, r"tl::tma_load\(Q_desc")) == {MARKS["fa_copy_q"]}
    assert set(lines_with(lines, r"tl::tma_load\(K_desc")) == {MARKS["fa_copy_k"]}
    assert set(lines_with(lines, r"tl::tma_load\(V_desc")) == {MARKS["fa_copy_v"]}
    assert set(lines_with(lines, r"wgmma_ss")) == {MARKS["fa_gemm_qk"]}
    assert set(lines_with(lines, r"wgmma_rs|initialize_wgmma_descriptor.*V_shared")) == {MARKS["fa_gemm_pv"]}
    assert set(lines_with(lines, r"initialize_wgmma_descriptor.*(Q|K)_shared")) == {MARKS["fa_gemm_qk"]}
    # T.reduce_max / T.reduce_sum are TileLang macros (their statements' spans are in reduce_op.py): the call's line.
    assert set(lines_with(lines, r"AllReduce<tl::MaxOp")) == {MARKS["fa_reduce_max"]}
    assert set(lines_with(lines, r"AllReduce<tl::SumOp")) == {MARKS["fa_reduce_sum"]}
    assert set(lines_with(lines, r"for \(int k(_1)? = 0")) == {MARKS["fa_pipelined"]}
    assert set(lines_with(lines, r"\*\(uint1\*\)\(Output \+")) == {MARKS["fa_epilogue"]}


def test_a_hand_written_warp_reduction(marked_trace):
    """tl.LowerThreadAllreduce lowers T.tvm_thread_allreduce (inside its reduce_scope T.attr) to
    shuffles: every one of them is the line of the T.tvm_thread_allreduce call they compute, not
    the `with T.attr(` block around it."""
    lines = blamed(marked_trace, "thread_allreduce")
    assert set(lines_with(lines, r"__shfl_(down_)?sync|red_buf0\[0\] = \(red_buf0|__activemask")) == {MARKS["ar_allreduce"]}
    assert set(lines_with(lines, r"acc\[0\] = \(acc\[0\] \+ A")) == {MARKS["ar_accumulate"]}
    assert set(lines_with(lines, r"C\[0\] = red_buf0")) == {MARKS["ar_store"]}


def test_cpu_kernel(marked_trace):
    lines = blamed(marked_trace, "saxpy")
    assert set(lines_with(lines, r"for \(int32_t i = 0")) == {MARKS["cpu_loop"]}
    assert set(lines_with(lines, r"Out\[i\] = ")) == {MARKS["cpu_body"]}


def tilelang_line_directives(func):
    """TileLang's own attribution: its codegen with #line directives, each line the last directive before it."""
    from tvm.target import Target

    with tilelang.transform.PassContext(config={"tl.emit_line_directives": True}), Target(SM90) as target:
        source = tilelang.lower(func, target=target).kernel_source
    current, out = None, []
    for line in source.split("\n"):
        directive = re.match(r'\s*#line (\d+) "([^"]*)"', line)
        if directive:
            current = int(directive.group(1)) if os.path.abspath(directive.group(2)) == HERE else None
            continue
        out.append((line, current))
    return out


def test_where_tilelang_is_right_we_agree_and_where_it_is_wrong_we_are_right(marked_trace):
    theirs = tilelang_line_directives(marked_kernels.gemm_ws())
    ours = dict(blamed(marked_trace, "gemm_ws"))
    expected = {
        r"tl::tma_load\(A_desc": MARKS["copy_a"],
        r"wgmma_ss": MARKS["gemm"],
        r"make_float4\(broadcast_var": MARKS["clear"],
        r"\*\(uint1\*\)\(C \+": MARKS["epilogue"],
    }
    right = wrong = 0
    for pattern, line in expected.items():
        for text, their_line in theirs:
            if re.search(pattern, text):
                assert ours[text] == line, text  # ours is the marked line, always
                if their_line == line:
                    right += 1
                else:
                    wrong += 1
    assert right and wrong  # TileLang gets some right (we agree there) and some wrong (ours right there)


def test_the_compiled_source_is_byte_identical_to_an_untraced_compile(marked_trace):
    from tvm.target import Target

    with Target(SM90) as target:
        untraced = tilelang.lower(marked_kernels.gemm_ws(), target=target).kernel_source
    kernel = next(k for k in marked_trace.kernels if k.name == "gemm_ws")
    device = next(c for c in kernel.codegen if c.role == "device")
    assert marked_trace.snapshot(device.source) == untraced
    assert device.line_map


def test_where_lists_lines_and_passes(marked_trace):
    out = lower_trace_cli("where", marked_trace.path, "-k", "gemm_ws", f"marked_kernels.py:{MARKS['copy_a']}", "--json")
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["file"] == HERE
    assert any("tma_load" in line["text"] for line in answer["final_tir"])
    # The copy's TMA load, the barrier expectation its lowering puts before it and the prefetch of
    # its descriptor: nothing else.
    texts = [line["text"].strip() for line in answer["sources"][0]["lines"]]
    assert any(text.startswith("tl::tma_load(A_desc") for text in texts)
    assert all(text.startswith(("tl::tma_load(A_desc", "mbarrier[(k % 3)].expect_transaction", "tl::prefetch_tma_descriptor(A_desc)")) for text in texts), texts
    names = [p["name"] for p in answer["passes"]]
    assert "tl.LowerTileOp" in names and "tl.ProducerConsumerWarpSpecialized" in names
    seqs = [p["seq"] for p in answer["passes"]]
    assert seqs == sorted(seqs)
    text = lower_trace_cli("where", marked_trace.path, "-k", "gemm_ws", f"marked_kernels.py:{MARKS['copy_a']}")
    assert "tl.LowerTileOp" in text.stdout and "tl::tma_load(A_desc" in text.stdout
    unused = lower_trace_cli("where", marked_trace.path, "-k", "gemm_ws", "marked_kernels.py:1")
    assert unused.returncode == 1
    bad = lower_trace_cli("where", marked_trace.path, "-k", "gemm_ws", "nowhere.py:3")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "comes from" in bad.stderr
    with open(HERE, encoding="utf-8") as source:
        length = len(source.read().splitlines())
    past = lower_trace_cli("where", marked_trace.path, "-k", "gemm_ws", f"marked_kernels.py:{length + 1}")
    assert past.returncode == 2 and f"had {length} lines" in past.stderr and len(past.stderr.strip().splitlines()) == 1


def test_show_origins_column_and_the_stored_source(marked_trace):
    kernel = next(k for k in marked_trace.kernels if k.name == "gemm_ws")
    first = kernel.passes[0]
    out = lower_trace_cli("show", marked_trace.path, "-k", "gemm_ws", "--ir", str(first.seq), "--origins")
    assert out.returncode == 0, out.stderr
    copy_line = next(line for line in out.stdout.splitlines() if "T.copy(T.region(A[" in line)
    assert copy_line.startswith(f"marked_kernels.py:{MARKS['copy_a']} ")
    with open(HERE, encoding="utf-8") as source:
        assert marked_trace.source_text(HERE) == source.read()
    assert kernel.stack and kernel.stack[-1][0] == os.path.abspath(__file__)


def test_the_terminal_view_of_a_failure_names_the_users_lines(marked_trace):
    """TVM's error locates the fragment's allocation; the failing IR's lines carry their lines."""
    out = lower_trace_cli("show", marked_trace.path, "-k", "transposed_fragment")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert f"the error points at your line: marked_kernels.py:{MARKS['tf_alloc']}" in [line.strip() for line in lines]
    failing = lines[next(i for i, line in enumerate(lines) if "the IR this pass received" in line) + 1 :]

    def origin_of(pattern):
        (found,) = [line.split("|")[0].strip() for line in failing if "|" in line and re.search(pattern, line.split("|", 1)[1])]
        return found

    assert origin_of(r"frag\[i, j\] = A\[i, j\]") == f"marked_kernels.py:{MARKS['tf_fill']}"
    assert origin_of(r"B\[i, j\] = frag\[i, j\] \+ frag\[j, i\]") == f"marked_kernels.py:{MARKS['tf_read']}"
