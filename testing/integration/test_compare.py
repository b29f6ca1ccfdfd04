"""Comparing two compiles pass by pass (analysis/compare.py) on real TileLang kernels.

Ground truth is computed here, independently of the alignment: on pipelines with the
same pass list, the first pass whose input texts are equal and output texts differ.
"""

import collections

import pytest

import lower_trace
from lower_trace.analysis.compare import Side, align, compare

pytest.importorskip("tilelang")

import kernels


@pytest.fixture
def traced(tmp_path, tilelang, cuda_target):
    """traced(func, config) -> (kernel, trace): one real lower to CUDA under a PassContext config."""
    from tilelang import tvm

    count = [0]

    def run(func, config=None):
        count[0] += 1
        with lower_trace.trace(mode="html", trace_dir=tmp_path / f"t{count[0]}") as run_, tvm.transform.PassContext(config=config or {}), cuda_target:
            tilelang.lower(func, target=cuda_target)
        trace = lower_trace.load_trace(run_.run_dir)
        (kernel,) = trace.kernels
        return kernel, trace

    return run


def side(kernel, trace):
    return Side(kernel, trace.snapshot)


def first_behaving_differently(ka, ta, kb, tb):
    for pa, pb in zip(ka.passes, kb.passes, strict=False):
        if ta.snapshot(pa.before) == tb.snapshot(pb.before) and ta.snapshot(pa.after) != tb.snapshot(pb.after):
            return pa.seq, pb.seq
    return None


def test_identical_compiles_are_identical(traced):
    a = traced(kernels.gemm())
    b = traced(kernels.gemm())
    result = compare(side(*a), side(*b))
    assert result.identical and result.divergence is None and not result.only_a and not result.only_b
    assert all(row.same_input and row.same_output for row in result.rows)


def test_a_pass_config_that_changes_one_pass_output_is_found(traced):
    a = traced(kernels.gemm())
    b = traced(kernels.gemm(), {"tl.disable_shuffle_elect": True})
    assert [p.name for p in a[0].passes] == [p.name for p in b[0].passes]  # the same pass list
    truth = first_behaving_differently(a[0], a[1], b[0], b[1])
    assert truth is not None
    result = compare(side(*a), side(*b))
    assert result.divergence is not None and result.divergence.kind == "behaves differently"
    assert (result.divergence.a.seq, result.divergence.b.seq) == truth
    assert not result.only_a and not result.only_b and not result.identical


def test_a_pass_config_that_removes_passes_shows_them_one_sided(traced):
    a = traced(kernels.gemm())
    b = traced(kernels.gemm(), {"tl.disable_warp_specialized": True})
    names_a = collections.Counter(p.name for p in a[0].passes)
    names_b = collections.Counter(p.name for p in b[0].passes)
    result = compare(side(*a), side(*b))
    assert collections.Counter(p.name for p in result.only_a) == names_a - names_b
    assert collections.Counter(p.name for p in result.only_b) == names_b - names_a
    assert result.only_a  # the config really removes a pass
    divergence = result.divergence
    assert divergence is not None
    if divergence.kind == "behaves differently":  # checked on the texts themselves
        assert a[1].snapshot(divergence.a.before) == b[1].snapshot(divergence.b.before)
        assert a[1].snapshot(divergence.a.after) != b[1].snapshot(divergence.b.after)
    else:
        assert divergence.kind == "one-sided" and (divergence.a or divergence.b) in result.only_a + result.only_b


def test_two_variants_differ_from_their_input(traced):
    a = traced(kernels.scaled_add(factor=3.0))
    b = traced(kernels.scaled_add(factor=5.0))
    assert a[1].snapshot(a[0].passes[0].before) != b[1].snapshot(b[0].passes[0].before)
    result = compare(side(*a), side(*b))
    assert result.divergence is not None and result.divergence.kind == "input" and not result.same_source


def test_the_kernel_name_is_not_a_difference_and_ignore_removes_noise(traced):
    a = traced(kernels.elementwise_add())
    b = traced(kernels.elementwise_add().with_attr("global_symbol", "renamed_add"))
    assert b[0].name == "renamed_add" and a[1].snapshot(a[0].passes[0].before) != b[1].snapshot(b[0].passes[0].before)
    assert compare(side(*a), side(*b)).identical
    c = traced(kernels.elementwise_add(block_M=64))
    assert not compare(side(*a), side(*c)).identical
    assert compare(side(*a), side(*c), ignore=[r"\b\d+\b"]).divergence is None  # every number ignored


def test_a_kernel_named_like_a_tilelang_op_compares_identical(traced):
    """The body of gemm compiled as `main` (the name almost every TileLang example uses) and as `gemm`
    (the name of the T.gemm op): identical compiles. Comparing renamed the kernel as a substring before:
    T.gemm( became T.main(, the answer was "differ before the first pass", and --ignore invented a
    divergence in tl.LowerTileOp."""
    from tilelang import tvm

    main_func, gemm_func = kernels.gemm().with_attr("global_symbol", "main"), kernels.gemm()
    assert tvm.ir.structural_equal(main_func.without_attr("global_symbol"), gemm_func.without_attr("global_symbol"))  # the same kernel
    a, b = traced(main_func), traced(gemm_func)
    assert (a[0].name, b[0].name) == ("main", "gemm")
    for first, second in ((a, b), (b, a)):
        result = compare(side(*first), side(*second))
        assert result.identical and result.verdict == "identical", result.divergence
        text = result.text(1, second[0].passes[0].before)
        assert "T.gemm(" in text and "T.main(" not in text  # TileLang's names are never the kernel's
        assert compare(side(*first), side(*second), ignore=[r"T\.bool\(\w+\)"]).identical
    # What the kernel's name became is renamed, whole identifiers only.
    import re

    raw = b[1].snapshot(b[0].codegen[-1].source)
    final = compare(side(*a), side(*b)).text(1, b[0].codegen[-1].source)
    assert "main_kernel" in final and "gemm_kernel" not in final and "gemm_kernel" in raw
    assert set(re.findall(r"tl::\w+", final)) == set(re.findall(r"tl::\w+", raw))  # TileLang's own names stay


def test_up_to_renaming_says_which_names_differ(traced, tmp_path):
    """The same GEMM written with other names for everything (buffers, loop and block variables):
    --up-to-renaming calls it the same up to renaming and names the renaming; a real difference stays
    a difference. Ground truth: TVM's structural equality of the PrimFuncs, which ignores names."""
    import json
    import subprocess

    from tilelang import tvm

    from support import lower_trace_cli

    plain, renamed, other = kernels.gemm(), kernels.gemm_renamed(), kernels.gemm_renamed(block_K=64)
    assert tvm.ir.structural_equal(plain, renamed) and not tvm.ir.structural_equal(plain, other)
    a, b, c = traced(plain), traced(renamed), traced(other)
    assert not compare(side(*a), side(*b)).equivalent  # by text, they differ
    result = compare(side(*a), side(*b), up_to_renaming=True)
    assert result.equivalent and not result.identical and result.verdict == "same up to renaming"
    renames = dict(result.renamed)
    assert renames["A_s"] == "A_shared" and renames["C_acc"] == "C_local" and renames["ko"] == "k"
    assert all(not old.startswith("T") for old in renames)  # no TileLang name was "renamed"
    assert compare(side(*a), side(*c), up_to_renaming=True).verdict == "differ"
    # Other names for the tensors are more than a renaming: TileLang orders the device kernel's
    # parameters by name, so the compiles part where it makes that kernel.
    d = traced(kernels.gemm_other_tensor_names())
    parted = compare(side(*a), side(*d), up_to_renaming=True)
    assert parted.verdict == "differ" and parted.divergence.a.name == "tl.SplitHostDevice"

    def cli(*args):
        return subprocess.run([lower_trace_cli(), "diff", *args, "--color", "never"], capture_output=True, text=True)

    done = cli(a[1].path, b[1].path, "--up-to-renaming")
    assert done.returncode == 0 and "the same up to renaming" in done.stdout and "A_s -> A_shared" in done.stdout, done.stdout
    assert cli(a[1].path, b[1].path).returncode == 1
    data = json.loads(cli(a[1].path, c[1].path, "--up-to-renaming", "--json").stdout)
    assert data["verdict"] == "differ" and data["identical"] is False


def test_variants_list_the_passes_that_changed_the_ir_on_one_side_only(traced):
    """Two variants differ from their input: the alignment also says which passes changed the IR
    on one side and did nothing on the other (checked on the records' own statuses)."""
    import subprocess

    from support import lower_trace_cli

    a, b = traced(kernels.elementwise_add()), traced(kernels.elementwise_add(block_N=1))  # block_N=1: nothing to vectorize
    result = compare(side(*a), side(*b))
    truth_a = [pa.seq for pa, pb in zip(a[0].passes, b[0].passes, strict=False) if (pa.status.value, pb.status.value) == ("changed", "unchanged")]
    truth_b = [pb.seq for pa, pb in zip(a[0].passes, b[0].passes, strict=False) if (pa.status.value, pb.status.value) == ("unchanged", "changed")]
    assert [p.name for p in a[0].passes] == [p.name for p in b[0].passes]
    assert [row.a.seq for row in result.changed_on_one_side(0)] == truth_a
    assert [row.b.seq for row in result.changed_on_one_side(1)] == truth_b
    assert truth_a or truth_b  # the variants do make passes behave differently
    out = subprocess.run([lower_trace_cli(), "diff", a[1].path, b[1].path, "--color", "never"], capture_output=True, text=True).stdout
    for label, truth in (("changed the IR in A, did nothing in B", truth_a), ("changed the IR in B, did nothing in A", truth_b)):
        if truth:
            (line,) = [x for x in out.splitlines() if x.startswith(label)]
            assert f"({len(truth)}):" in line


def test_align_keeps_order_and_pairs_equal_names():
    from lower_trace.model import PassRecord, PassStatus

    def passes(names):
        return [PassRecord("k", i, name, PassStatus.CHANGED) for i, name in enumerate(names)]

    rows = align(passes(["a", "b", "c", "d"]), passes(["a", "c", "x", "d"]))
    assert [(x and x.name, y and y.name) for x, y in rows] == [("a", "a"), ("b", None), ("c", "c"), (None, "x"), ("d", "d")]


def test_lower_trace_diff_on_two_runs(traced, tmp_path):
    """The command as a user types it: exit 0 identical, 1 differs; the divergence named; --json for tools."""
    import json
    import subprocess

    from support import lower_trace_cli

    a = traced(kernels.gemm())
    b = traced(kernels.gemm(), {"tl.disable_shuffle_elect": True})
    same = traced(kernels.gemm())

    def diff(*args):
        return subprocess.run([lower_trace_cli(), "diff", *args, "--color", "never"], capture_output=True, text=True)

    proc = diff(a[1].path, same[1].path)
    assert proc.returncode == 0 and "identical" in proc.stdout, proc.stderr
    proc = diff(a[1].path, b[1].path)
    truth = first_behaving_differently(a[0], a[1], b[0], b[1])
    name = next(p.name for p in a[0].passes if p.seq == truth[0])
    assert proc.returncode == 1
    (line,) = [text for text in proc.stdout.splitlines() if text.startswith("first divergence:")]
    assert f"A {truth[0]} {name}" in line and "got the same IR and made different IR" in line
    data = json.loads(diff(f"{a[1].path}:k1", f"{b[1].path}:gemm", "--json").stdout)
    assert data["identical"] is False and data["divergence"]["kind"] == "behaves differently"
    assert (data["divergence"]["a"]["seq"], data["divergence"]["b"]["seq"]) == truth
    assert len(data["rows"]) == len(a[0].passes) and data["only_a"] == [] == data["only_b"]
    bad = diff(f"{a[1].path}:nosuch", b[1].path)
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1 and "no kernel 'nosuch'" in bad.stderr
    bad = diff(a[1].path, b[1].path, "--ignore", "(")
    assert bad.returncode == 2 and "--ignore" in bad.stderr


def test_a_kernel_named_like_a_header_it_includes_compares_identical_both_ways(traced):
    """Flash attention's CUDA source includes <tl_templates/cuda/reduce.h>: a kernel named `reduce`
    compared with the same kernel named `main` is identical either way round (a path's words are
    never the kernel's name). Ground truth: the PrimFuncs are the same but for their name."""
    from tilelang import tvm

    named = kernels.flash_attention().with_attr("global_symbol", "reduce")
    assert tvm.ir.structural_equal(named.without_attr("global_symbol"), kernels.flash_attention().without_attr("global_symbol"))
    a, b = traced(kernels.flash_attention().with_attr("global_symbol", "main")), traced(named)
    assert "tl_templates/cuda/reduce.h" in b[1].snapshot(b[0].codegen[-1].source)
    assert compare(side(*a), side(*b)).identical and compare(side(*b), side(*a)).identical


def test_words_in_strings_are_not_free_to_rename():
    """--up-to-renaming on fixed texts: a loop variable `c` renamed does not make the target's
    "kind": "c" a renaming (both ways round), a reduction's "max" is never another's "sum", and map
    keys that are buffer names follow the buffers' renaming, in whatever order the printer sorted them."""
    from lower_trace.analysis.renaming import correspondence

    a = 'for c in T.serial(4):\n    T.func_attr({"target": T.target({"kind": "c"})})\n    x[c] = 1\n'
    b = a.replace("for c in", "for cc in").replace("x[c]", "x[cc]")
    assert correspondence(a, b) == {"cc": "c"} and correspondence(b, a) == {"c": "cc"}
    assert correspondence('T.reduce(x, "max")\n', 'T.reduce(x, "sum")\n') is None
    keyed = '"tl.smem_alignment_map": {"A_shared": 512, "B_shared": 1024}\nA_shared = 1\nB_shared = 2\n'
    other = '"tl.smem_alignment_map": {"W_s": 1024, "X_s": 512}\nX_s = 1\nW_s = 2\n'
    assert correspondence(keyed, other) == {"X_s": "A_shared", "W_s": "B_shared"}
    assert correspondence(keyed, other.replace("1024", "2048")) is None


def test_a_pass_that_fails_on_one_side_is_said_to_fail(tmp_path, tilelang, cuda_target):
    """The same kernel, once with a pass config tl.LayoutInference rejects: the compiles part where
    that pass got the same IR, and the answer says it failed in B and with what (not "made different
    IR" over a diff of the whole kernel against nothing). Ground truth: the untraced compile's error."""
    import subprocess

    from tilelang import tvm

    from support import lower_trace_cli

    bad = {"tl.layout_cost_model": "nonsense"}
    with pytest.raises(Exception) as untraced, tvm.transform.PassContext(config=bad), cuda_target:
        tilelang.lower(kernels.row_sum(), target=cuda_target)
    runs = []
    for name, config in (("good", {}), ("bad", bad)):
        with lower_trace.trace(mode="html", trace_dir=tmp_path / name) as run:
            try:
                with tvm.transform.PassContext(config=config), cuda_target:
                    tilelang.lower(kernels.row_sum(), target=cuda_target)
            except Exception:
                pass
        runs.append(run.run_dir)
    out = subprocess.run([lower_trace_cli(), "diff", *runs, "--color", "never"], capture_output=True, text=True).stdout
    (line,) = [x for x in out.splitlines() if x.startswith("first divergence:")]
    assert "tl.LayoutInference" in line and "it failed in B" in line and str(untraced.value).splitlines()[0][:40] in line, out
    assert "pass configs differ: tl.layout_cost_model: A unset, B 'nonsense'" in out


def test_diff_html_with_bad_input_is_one_line(real_trace, tmp_path):
    """`diff --html` of a run without a kernel named, or to a page it cannot write: one line, exit 2."""
    import subprocess

    from support import lower_trace_cli

    done = subprocess.run(
        [lower_trace_cli(), "diff", real_trace.path, real_trace.path, "--html", str(tmp_path / "x.html")],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "RUN:KERNEL" in done.stderr
    done = subprocess.run(
        [lower_trace_cli(), "diff", f"{real_trace.path}:k1", f"{real_trace.path}:k2", "--html", str(tmp_path / "no" / "such" / "x.html")],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and "cannot write the page" in done.stderr and len(done.stderr.strip().splitlines()) == 1
