"""Comparing two compiles pass by pass (analysis/compare.py) on real TileLang kernels.

Ground truth is computed here, independently of the alignment: on pipelines with the
same pass list, the first pass whose input texts are equal and output texts differ.
"""

import collections

import pytest

import lower_trace
from lower_trace.analysis.compare import Side, align, compare

pytest.importorskip("tilelang")

import kernels  # noqa: E402


@pytest.fixture
def traced(tmp_path, tilelang, cuda_target):
    """traced(func, config) -> (kernel, trace): one real lower to CUDA under a PassContext config."""
    from tilelang import tvm

    count = [0]

    def run(func, config=None):
        count[0] += 1
        with lower_trace.trace(mode="html", trace_dir=tmp_path / f"t{count[0]}") as run_:
            with tvm.transform.PassContext(config=config or {}), cuda_target:
                tilelang.lower(func, target=cuda_target)
        trace = lower_trace.load_trace(run_.run_dir)
        (kernel,) = trace.kernels
        return kernel, trace

    return run


def side(kernel, trace):
    return Side(kernel, trace.snapshot)


def first_behaving_differently(ka, ta, kb, tb):
    for pa, pb in zip(ka.passes, kb.passes):
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

    from conftest import lower_trace_cli

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


def test_two_tilelang_versions_with_other_pass_lists():
    """Fixtures traced with TileLang 0.1.13 and 0.1.15 (testing/fixtures/compare): the passes one
    version runs and the other does not are exactly the difference of their pass lists."""
    import os

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "compare")
    old, new = (lower_trace.load_trace(os.path.join(here, f"tilelang-{v}")) for v in ("0.1.13", "0.1.15"))
    (ka,), (kb,) = old.kernels, new.kernels
    assert len(ka.passes) != len(kb.passes)
    result = compare(Side(ka, old.snapshot), Side(kb, new.snapshot))
    def short(name):  # without the namespace, which versions change (tir. -> tirx.)
        return name.rsplit(".", 1)[-1]

    names_a, names_b = collections.Counter(short(p.name) for p in ka.passes), collections.Counter(short(p.name) for p in kb.passes)
    aligned = [row for row in result.rows if not row.one_sided]
    assert all(short(row.a.name) == short(row.b.name) for row in aligned)
    assert any(row.a.name != row.b.name for row in aligned)  # AddWrapperForSingleBufStore became tl.AddWrapperForSingleBufStore
    # What stands alone on one side is at least the difference of the pass lists.
    assert not (names_a - names_b) - collections.Counter(short(p.name) for p in result.only_a)
    assert not (names_b - names_a) - collections.Counter(short(p.name) for p in result.only_b)
    assert len(aligned) + len(result.only_a) == len(ka.passes) and len(aligned) + len(result.only_b) == len(kb.passes)
    assert result.divergence is not None and not result.identical
