"""lower-trace regress on real corpora: which kernels a pass config or another TileLang changes, at
which pass, which break -- each answer held to what this test works out itself: TileLang lowering
every corpus kernel on both sides (its sources compared), a PassInstrument recorder of its own
for the first pass that differs, the pytest node ids of the corpus's tests."""

import difflib
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")

from tilelang import tvm

import kernels
import recorder
from support import lower_trace_cli, pythonpath

TESTING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
# The corpus: a pipelined GEMM, a 16x16 add, a row sum (testing/kernels.py), lowered to CUDA.
BUILDS = {
    "gemm": lambda: kernels.gemm(),
    "elementwise_add": lambda: kernels.elementwise_add(M=16, N=16, block_M=8, block_N=8),
    "row_sum": lambda: kernels.row_sum(),
}
SCRIPT = f"""
import sys
sys.path.insert(0, {TESTING!r})
import kernels, tilelang
from tilelang import tvm
target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
for build in (lambda: kernels.gemm(), lambda: kernels.elementwise_add(M=16, N=16, block_M=8, block_N=8), lambda: kernels.row_sum()):
    try:
        with target:
            tilelang.lower(build(), target=target)
    except Exception as exc:  # a kernel that does not compile on this side: the others still do
        print("failed:", type(exc).__name__)
"""


def regress(folder, *args, cwd=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    env["PYTHONPATH"] = pythonpath()
    return subprocess.run([lower_trace_cli(), "regress", *args], cwd=str(cwd or folder), env=env, capture_output=True, text=True, timeout=900)


def lowered(name, config):
    """What TileLang itself makes of a corpus kernel under a config: its CUDA source, or the error."""
    try:
        with tvm.transform.PassContext(config=config), CUDA:
            return tilelang_lower(BUILDS[name]())
    except Exception as exc:
        return f"error: {type(exc).__name__}"


def tilelang_lower(func):
    import tilelang

    return tilelang.lower(func, target=CUDA).kernel_source


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("regress-corpus")
    (folder / "corpus.py").write_text(SCRIPT)
    return folder


@pytest.fixture(scope="module")
def warp_specialized(corpus):
    """The corpus with warp specialisation switched off on head."""
    out = corpus / "ws"
    proc = regress(corpus, "--dir", str(out), "--head-config", "tl.disable_warp_specialized=true", "--json", "--", "python", "corpus.py")
    return proc, out


def test_a_config_changes_the_kernels_tilelang_says_it_changes(warp_specialized):
    proc, out = warp_specialized
    assert proc.returncode == 1, proc.stderr
    found = json.loads(proc.stdout)
    assert found == json.loads((out / "regress.json").read_text())
    verdicts = {k["kernel"]: k["verdict"] for k in found["kernels"]}
    assert set(verdicts) == set(BUILDS)
    changed = {name for name in BUILDS if lowered(name, {}) != lowered(name, {"tl.disable_warp_specialized": True})}
    assert changed == {"gemm"}  # the corpus is built so: one changes, two do not
    assert {name for name, verdict in verdicts.items() if verdict != "identical"} == changed
    assert found["head"]["configs"] == {"tl.disable_warp_specialized": True} and found["base"]["configs"] == {}
    gemm = next(k for k in found["kernels"] if k["kernel"] == "gemm")
    assert os.path.isfile(gemm["compare_page"]) and gemm["severity"] < next(k for k in found["kernels"] if k["kernel"] == "row_sum")["severity"]


def first_difference(base, head):
    """The first pass that makes two recorded pipelines differ, worked out here: the pipelines are
    aligned by pass name (difflib), and in base's order the answer is the first aligned pass that got
    the same IR and made other IR, or the first pass of one side only that changed the IR."""
    names_a, names_b = [p.name.rsplit(".", 1)[-1] for p in base], [p.name.rsplit(".", 1)[-1] for p in head]
    pairs = {}
    for block in difflib.SequenceMatcher(None, names_a, names_b, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            pairs[block.a + k] = block.b + k
    for i, a in enumerate(base):
        j = pairs.get(i)
        if j is None:
            if a.after_text and a.after_text != a.before_text:
                return a.name
            continue
        b = head[j]
        if a.before_text == b.before_text and a.after_text != b.after_text:
            return a.name
    return None


def test_the_first_pass_that_differs_is_the_recorders(warp_specialized):
    proc, _ = warp_specialized
    gemm = next(k for k in json.loads(proc.stdout)["kernels"] if k["kernel"] == "gemm")
    base, error = recorder.record(BUILDS["gemm"](), CUDA)
    assert error is None
    head, error = recorder.record(BUILDS["gemm"](), CUDA, config={"tl.disable_warp_specialized": True})
    assert error is None
    named = gemm["first_difference"]["base"] or gemm["first_difference"]["head"]
    assert named["pass"] == first_difference(base, head)


def test_stored_sides_compare_to_the_same_verdicts(warp_specialized, corpus):
    proc, out = warp_specialized
    again = regress(corpus, "--compare", str(out / "base"), str(out / "head"), "--json")
    assert again.returncode == 1, again.stderr
    strip = lambda found: [{k: v for k, v in kernel.items() if k != "compare_page"} for kernel in found["kernels"]]  # noqa: E731
    assert strip(json.loads(again.stdout)) == strip(json.loads(proc.stdout))


def test_a_kernel_that_breaks_on_head_is_listed_first_and_gates(corpus):
    """16-bit indices: the 1024x1024 GEMM's offsets do not fit (TileLang refuses it), the 16x16 add
    compiles to other code. Terminal summary, most severe first; --fail-on picks what gates."""
    out = corpus / "bits"
    proc = regress(corpus, "--dir", str(out), "--head-config", "tl.config_index_bitwidth=16", "--", "python", "corpus.py")
    assert proc.returncode == 1, proc.stderr
    truth = {name: (lowered(name, {}), lowered(name, {"tl.config_index_bitwidth": 16})) for name in BUILDS}
    assert truth["gemm"][1].startswith("error:") and not truth["gemm"][0].startswith("error:")
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("  ")]
    assert rows[0][:3] == ["compile", "broken", "corpus"] and rows[0][3] == "gemm"
    found = json.loads((out / "regress.json").read_text())
    for kernel in found["kernels"]:
        base, head = truth[kernel["kernel"]]
        expected = "compile broken" if head.startswith("error:") else "identical" if base == head else "code differs"
        assert kernel["verdict"] == expected, kernel["kernel"]
    assert "3 kernels: 1 compile broken" in proc.stdout
    only_spills = regress(corpus, "--compare", str(out / "base"), str(out / "head"), "--fail-on", "spills,registers")
    assert only_spills.returncode == 0, only_spills.stdout  # no device stage here: nothing it gates on
    broken = regress(corpus, "--compare", str(out / "base"), str(out / "head"), "--fail-on", "broken", "--markdown")
    assert broken.returncode == 1 and "| compile broken | `corpus gemm` |" in broken.stdout


PYTEST_CORPUS = f"""
import sys
sys.path.insert(0, {TESTING!r})
import pytest, kernels, tilelang
from tilelang import tvm

BUILDS = {{
    "gemm-128": lambda: kernels.gemm(),
    "gemm-64": lambda: kernels.gemm(block_M=64, block_N=64),
    "add": lambda: kernels.elementwise_add(M=16, N=16, block_M=8, block_N=8),
    "row_sum": lambda: kernels.row_sum(),
    "add-big": lambda: kernels.elementwise_add(),
    "row_sum-256": lambda: kernels.row_sum(N=256),
}}

@pytest.mark.parametrize("name", list(BUILDS))
def test_lowers(name):
    target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
    with target:
        tilelang.lower(BUILDS[name](), target=target)
"""


def test_a_pytest_corpus_under_xdist_pairs_each_test_with_itself(corpus):
    """Six tests on two xdist workers, in whatever order they run: each kernel is paired by its
    test's node id, and each side's kernel comes from the run of that very test."""
    pytest.importorskip("xdist")
    (corpus / "test_corpus.py").write_text(PYTEST_CORPUS)
    out = corpus / "xdist"
    corpus_command = ["pytest", "test_corpus.py", "-n", "2", "-p", "no:cacheprovider", "-q"]
    proc = regress(corpus, "--dir", str(out), "--head-config", "tl.disable_warp_specialized=true", "--json", "--", *corpus_command)
    assert proc.returncode == 1, proc.stderr + proc.stdout
    found = json.loads(proc.stdout)
    node_ids = [f"test_corpus.py::test_lowers[{name}]" for name in ("gemm-128", "gemm-64", "add", "row_sum", "add-big", "row_sum-256")]
    assert sorted(k["origin"] for k in found["kernels"]) == sorted(node_ids)
    workers = {"base": set(), "head": set()}
    for kernel in found["kernels"]:
        for side in ("base", "head"):
            with open(os.path.join(kernel[side]["trace"], "trace.jsonl")) as manifest:
                header = json.loads(manifest.readline())
            assert header["title"] == kernel["origin"]  # not another test's run
            workers[side].add(header["pid"])
        changes = kernel["kernel"] == "gemm"  # warp specialisation: the GEMMs only
        assert (kernel["verdict"] != "identical") == changes, kernel["origin"]
    assert len(workers["base"]) == len(workers["head"]) == 2  # two xdist workers wrote each side


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--head", "/no/such/python", "--", "python", "corpus.py"], "--head /no/such/python: no such file"),
        (["--head", sys.base_prefix + "/bin/python3", "--", "python", "corpus.py"], "has no TileLang"),
        (["--head-config", "tl.no_such_switch=true", "--", "python", "corpus.py"], "--head-config tl.no_such_switch: TileLang"),
        (["--head-config", "tl.disable_tma_lower=true", "--", "python", "-c", "raise SystemExit(3)"], "no kernel was traced on either side"),
        (["--head-config", "tl.disable_tma_lower=true"], "give the corpus after --"),
        (["--", "python", "corpus.py"], "the two sides are the same"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_no_result(corpus, tmp_path, args, said):
    out = tmp_path / "out"
    proc = regress(corpus, "--dir", str(out), *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("lower-trace: error:")]
    assert len(errors) == 1 and said in errors[0], proc.stderr
    assert not (out / "regress.json").exists() and not (out / "summary.html").exists()
