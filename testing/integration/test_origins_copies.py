"""The source map where a pass copies a statement: the software pipeliner (2 and 3 stages, with
scalar statements and a guard in the loop's body), per-statement guards, a loop nest printed as
one ``T.grid``, ``T.use_swizzle``'s attribute, lets TileLang inlines (codegen's ``condval`` blocks),
a store TileLang guards anew, and the lines a TMA copy adds (shared memory carved for a buffer, the
descriptor's prefetch, the one-thread ``elect`` around the load).

Ground truth is the kernels' own text (testing/copied_kernels.py's marker comments): each
generated line is classified by what it does -- it binds ``block`` from ``Blocks``, it tests
``block``, it moves ``A`` into ``A_shared``, it runs the mma -- and that names the user's line it
must map to. Every copy is checked, with its certainty: a copy of a statement whose origin is a
fact is certain; a wrong answer is never certain."""

import json
import re
import subprocess

import pytest

tilelang = pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")  # 0.1.15: spans on statements

import copied_kernels  # noqa: E402
import lower_trace  # noqa: E402
from copies_truth import brace_blocks, guarded_store_problems, lets_problems, pipelined_problems, truth_of_pipelined  # noqa: E402
from marked_kernels import markers  # noqa: E402
from support import lower_trace_cli  # noqa: E402

MARKS = markers(copied_kernels.__file__)
NAMES = {line: name for name, line in MARKS.items()}
SM80 = {"kind": "cuda", "arch": "sm_80"}
SM90 = {"kind": "cuda", "arch": "sm_90a"}
NO_TMA = {"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True}
# The kernels, in compile order: the trace numbers them k1, k2, ...
COMPILES = [
    ("pipelined 2 stages, sm_80", lambda: copied_kernels.guarded_pipeline(2), SM80, {}),
    ("pipelined 3 stages, sm_80", lambda: copied_kernels.guarded_pipeline(3), SM80, {}),
    ("pipelined 2 stages, sm_90a TMA", lambda: copied_kernels.guarded_pipeline(2), SM90, {}),
    ("pipelined 3 stages, sm_90a no TMA", lambda: copied_kernels.guarded_pipeline(3), SM90, NO_TMA),
    ("swizzle", copied_kernels.swizzled_gemm, SM80, {}),
    ("loop nest", copied_kernels.loop_nest, SM80, {}),
    ("guarded statements", copied_kernels.guarded_statements, SM80, {}),
    ("two kernels", copied_kernels.two_kernels, SM80, {}),
    ("inlined lets", copied_kernels.inlined_lets, SM80, {}),
    ("guarded store", copied_kernels.guarded_store, SM90, {}),
]
PIPELINED = [name for name, *_ in COMPILES if name.startswith("pipelined")]


@pytest.fixture(scope="module")
def copies_trace(tmp_path_factory):
    import tvm
    from tvm.target import Target

    with lower_trace.trace(mode="html", trace_dir=str(tmp_path_factory.mktemp("copies"))) as run:
        for _, make, target, configs in COMPILES:
            with Target(target) as built_for, tvm.transform.PassContext(config=configs):
                tilelang.lower(make(), target=built_for)
    return run.run_dir


def kernel_id(name):
    return f"k{[compile_name for compile_name, *_ in COMPILES].index(name) + 1}"


def blamed(run_dir, name):
    """[(text, marker name or line or None, certain)] of the kernel's CUDA, as `blame --source --json` gives it."""
    out = subprocess.run([lower_trace_cli(), "blame", run_dir, "-k", kernel_id(name), "--source", "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    (device, *_) = json.loads(out.stdout)
    found = []
    for line in device["lines"]:
        origin = line["origin"]
        mark = NAMES.get(origin["line"], origin["line"]) if origin and origin["file"].endswith("copied_kernels.py") else None
        found.append((line["text"], mark, bool(origin and origin["certain"])))
    return found


@pytest.mark.parametrize("name", PIPELINED)
def test_every_pipelined_copy_keeps_its_line(copies_trace, name):
    problems = pipelined_problems(blamed(copies_trace, name))
    assert not problems, problems


def test_where_on_a_pipelined_statement_lists_all_its_copies_and_none_of_its_neighbours(copies_trace):
    name = "pipelined 2 stages, sm_80"
    expected = truth_of_pipelined(blamed(copies_trace, name))
    source = copied_kernels.__file__
    for marker in ("gp_block", "gp_guard"):
        out = subprocess.run(
            [lower_trace_cli(), "where", copies_trace, f"{source}:{MARKS[marker]}", "-k", kernel_id(name), "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        answer = json.loads(out.stdout)
        device = [entry for entry in answer["sources"] if entry["role"] == "device"]
        listed = [line["text"].strip() for entry in device for line in entry["lines"]]
        assert len(listed) == expected.count(marker), (marker, listed)
        pattern = r"int block\w* = Blocks\[" if marker == "gp_block" else r"if \(0 <= block\w*\) \{"
        assert all(re.match(pattern, text) for text in listed), listed


def test_an_if_is_never_given_its_loop_line_as_certain(copies_trace):
    for name, *_ in COMPILES:
        lines = blamed(copies_trace, name)
        for text, mark, certain in lines:
            if re.match(r"\s*if \(", text) and certain and isinstance(mark, str):
                assert not mark.endswith(("_loop", "_outer", "_inner", "_kernel")), (name, text.strip(), mark)


def test_use_swizzle_is_its_own_line(copies_trace):
    lines = blamed(copies_trace, "swizzle")
    swizzle = [(mark, certain) for text, mark, certain in lines if "rasterization2D" in text]
    assert swizzle == [("sw_swizzle", True)]


def test_each_loop_of_a_nest_is_its_own_line(copies_trace):
    lines = blamed(copies_trace, "loop nest")
    loops = [(re.match(r"\s*for \(int (\w+)", text).group(1), mark, certain) for text, mark, certain in lines if re.match(r"\s*for \(int ", text)]
    assert loops == [("i", "nest_outer", True), ("j", "nest_inner", True)]
    body = [(mark, certain) for text, mark, certain in lines if re.match(r"\s*B\[", text)]
    assert body == [("nest_body", True)]


def test_each_copy_of_a_guard_is_the_users_if_and_each_statement_its_own(copies_trace):
    lines = blamed(copies_trace, "guarded statements")
    guards = [(mark, certain) for text, mark, certain in lines if re.match(r"\s*if \(0 < Flag\[", text)]
    assert len(guards) == 3 and set(guards) == {("if_guard", True)}, guards  # one per statement, each the user's if
    blocks = brace_blocks(lines)
    guarded = {}  # per copy of the if (its line), what it guards, read off the moves in its block
    for i, (text, mark, certain) in enumerate(lines):
        guard = next((b for b in blocks[i] if "Flag[" in lines[b][0]), None)
        if guard is not None and re.search(r"[^=!<>]=[^=]", text):
            guarded.setdefault(guard, []).append((text, mark, certain))
    assert len(guarded) == 3
    for statements in guarded.values():
        texts = " ".join(text for text, _, _ in statements)
        want = "if_load" if "(A + " in texts else "if_store" if "(B + " in texts else "if_scale"
        # The moves a reader checks: the load from A, the scaled store to frag, the store to B.
        moves = [(text.strip()[:60], mark, certain) for text, mark, certain in statements if re.search(r"\(A \+ |\(B \+ |\(frag \+ .*\) = ", text)]
        assert moves and all(mark == want and certain for _, mark, certain in moves), (want, moves)


def test_a_second_kernels_signature_is_no_statement_of_the_first(copies_trace):
    lines = blamed(copies_trace, "two kernels")
    signatures = [mark for text, mark, _ in lines if "__global__" in text and text.rstrip().endswith("{")]
    assert signatures == [None, None]
    assert [(mark, certain) for text, mark, certain in lines if re.match(r"\s*B\[", text)] == [("first_store", True)]
    assert [(mark, certain) for text, mark, certain in lines if re.match(r"\s*C\[", text)] == [("second_store", True)]


def test_each_inlined_let_is_the_line_that_assigns_it(copies_trace):
    problems = lets_problems(blamed(copies_trace, "inlined lets"))
    assert not problems, problems


def test_a_store_guarded_anew_is_the_store_and_its_loop_the_users_loop(copies_trace):
    problems = guarded_store_problems(blamed(copies_trace, "guarded store"))
    assert not problems, problems


def test_the_lines_a_tma_copy_adds_are_that_copys(copies_trace):
    lines = blamed(copies_trace, "pipelined 2 stages, sm_90a TMA")
    for buffer in ("A", "B"):
        carved = [(mark, certain) for text, mark, certain in lines if re.match(rf"\s*void\* {buffer}_shared = \(\(void\*\)\(\(char\*\)buf_dyn_shmem", text)]
        assert carved == [(f"gp_alloc_{buffer.lower()}", True)], carved
        prefetch = [(mark, certain) for text, mark, certain in lines if f"prefetch_tma_descriptor({buffer}_desc)" in text]
        assert prefetch and all(mark == f"gp_copy_{buffer.lower()}" for mark, _ in prefetch), prefetch
    blocks = brace_blocks(lines)
    elected = {}  # each one-thread guard, with the buffers whose TMA loads it holds
    for i, (text, _, _) in enumerate(lines):
        for b in blocks[i]:
            if "tl_shuffle_elect" in lines[b][0]:
                loads = re.findall(r"tma_load\((\w)_desc", text)
                elected.setdefault(b, set()).update(loads)
    assert any(elected.values()), elected
    for b, loads in elected.items():
        mark, certain = lines[b][1], lines[b][2]
        if len(loads) == 1:  # the one copy it issues
            assert mark == f"gp_copy_{next(iter(loads)).lower()}", (lines[b][0], mark, loads)
        elif loads:  # one thread issues both copies' loads: neither copy's for certain
            assert not certain, (lines[b][0], mark, loads)
