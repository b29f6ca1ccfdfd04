"""lower-trace regress's command line on real compiles: a pass config value TVM would refuse is
refused before anything runs, a corpus with a test that fails on both sides is still compared,
--repeat runs one side twice, and bisect --versions takes releases in any order and writes a
summary page. Each answer is held to what this test works out itself: TVM's own PassContext on
the values, TileLang lowering the corpus kernels in processes of its own, the corpus run untraced
under pytest for its exit status, the check run untraced in each release's venv."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("tilelang")

from tilelang import tvm

from support import ROOT, TESTING, lower_trace_cli, pythonpath

CORPUS = f"""
import sys
sys.path.insert(0, {TESTING!r})
import kernels, tilelang
from tilelang import tvm


def lower(func):
    with tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}}) as target:
        return tilelang.lower(func, target=target)


def test_gemm():
    lower(kernels.gemm())


def test_add():
    lower(kernels.elementwise_add(M=16, N=16, block_M=8, block_N=8))


def test_broken():  # TileLang refuses it on every side (tl.LowerTileOp: shape mismatch)
    lower(kernels.shape_mismatch())
"""
BUILDS = {
    "gemm": "kernels.gemm()",
    "elementwise_add": "kernels.elementwise_add(M=16, N=16, block_M=8, block_N=8)",
    "shape_mismatch": "kernels.shape_mismatch()",
    "row_sum": "kernels.row_sum()",
}
LOWER_EACH = """
import json, sys
sys.path.insert(0, {testing!r})
import kernels, tilelang
from tilelang import tvm
builds = {builds}
out = []
for name, config in json.loads(sys.argv[1]):
    try:
        with tvm.transform.PassContext(config=config), tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}}) as target:
            out.append(tilelang.lower(eval(builds[name]), target=target).kernel_source)
    except Exception as exc:
        out.append("error: " + type(exc).__name__)
print(json.dumps(out))
"""


def env():
    out = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    return {**out, "PYTHONPATH": pythonpath(), "TILELANG_DISABLE_CACHE": "1"}


def regress(cwd, *args):
    return subprocess.run([lower_trace_cli(), "regress", *args], cwd=cwd, env=env(), capture_output=True, text=True, timeout=900)


def lowered(*wanted):
    """TileLang's own CUDA for each (corpus kernel, config) (or its error), lowered one after another
    in one process of its own."""
    script = LOWER_EACH.format(testing=TESTING, builds=BUILDS)
    done = subprocess.run([sys.executable, "-c", script, json.dumps(wanted)], env=env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def error_line(proc):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("lower-trace: error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


@pytest.mark.parametrize(
    ("key", "written", "value"),
    [("tl.disable_tma_lower", "maybe", "maybe"), ("tl.config_index_bitwidth", '"16"', "16"), ("tl.config_index_bitwidth", "1.5", 1.5)],
)
def test_a_config_value_tvm_refuses_is_one_line_before_anything_runs(tmp_path, key, written, value):
    declared = tvm.transform.PassContext.list_configs()[key]["type"]
    with pytest.raises(Exception, match="Expect config"):  # the truth: TVM itself refuses the value
        tvm.transform.PassContext(config={key: value})
    line = error_line(regress(tmp_path, "--dir", str(tmp_path / "out"), "--head-config", f"{key}={written}", "--", "python", "-c", "open('ran', 'w')"))
    assert line.startswith(f"lower-trace: error: --head-config {key}={written}: "), line
    assert f"as {declared} " in line, line
    assert not (tmp_path / "ran").exists() and not (tmp_path / "out").exists()


def test_a_config_value_tvm_takes_is_taken(tmp_path):
    """2 for a bool config: TVM converts it, so it is no usage error (the corpus then traces nothing: that is)."""
    tvm.transform.PassContext(config={"tl.disable_tma_lower": 2})  # the truth: no error
    line = error_line(regress(tmp_path, "--dir", str(tmp_path / "out"), "--head-config", "tl.disable_tma_lower=2", "--", "python", "-c", "raise SystemExit(3)"))
    assert "no kernel was traced on either side" in line and "the corpus failed on the base side (exit 3" in line, line


def test_a_test_failing_on_both_sides_is_said_and_the_rest_compared(tmp_path):
    """Before: exit 2, 'the corpus failed on both sides'. Now the kernels are compared (the one that
    fails on both is 'fails on both'), each side's failure is said, and --fail-on decides."""
    (tmp_path / "test_corpus.py").write_text(CORPUS)
    corpus = ["pytest", "test_corpus.py", "-p", "no:cacheprovider", "-q"]
    untraced = subprocess.run([sys.executable, "-m", *corpus], cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=600)
    assert untraced.returncode == 1 and "1 failed, 2 passed" in untraced.stdout, untraced.stdout  # the corpus is built so
    head = {"tl.disable_warp_specialized": True}
    names = ("gemm", "elementwise_add", "shape_mismatch")
    sources = iter(lowered(*[(name, config) for name in names for config in ({}, head)]))
    truth = {name: (next(sources), next(sources)) for name in names}
    failing = {name for name, (a, b) in truth.items() if a.startswith("error:") and b.startswith("error:")}
    expected = {name: "fails on both" if name in failing else "identical" if a == b else "code differs" for name, (a, b) in truth.items()}
    assert expected == {"gemm": "code differs", "elementwise_add": "identical", "shape_mismatch": "fails on both"}, truth

    out = tmp_path / "out"
    proc = regress(tmp_path, "--dir", str(out), "--head-config", "tl.disable_warp_specialized=true", "--json", "--", *corpus)
    assert proc.returncode == 1, proc.stderr  # the default gate: code differs
    found = json.loads(proc.stdout)
    assert {k["kernel"]: k["verdict"] for k in found["kernels"]} == expected
    for side in ("base", "head"):
        said = [line for line in proc.stderr.splitlines() if line.startswith(f"lower-trace regress: the corpus failed on the {side} side")]
        assert len(said) == 1 and f"(exit {untraced.returncode}; log {out / side / 'command.log'})" in said[0], proc.stderr
        assert "FAILED test_corpus.py::test_broken" in said[0] and "1 failed, 2 passed" in said[0]
        assert found[side]["exit"] == untraced.returncode and "1 failed, 2 passed" in found[side]["log_tail"]
    again = regress(tmp_path, "--compare", str(out / "base"), str(out / "head"), "--json")
    assert {k["kernel"]: k["verdict"] for k in json.loads(again.stdout)["kernels"]} == expected  # the same answer as from the stored sides
    assert regress(tmp_path, "--compare", str(out / "base"), str(out / "head"), "--fail-on", "broken").returncode == 0
    assert regress(tmp_path, "--compare", str(out / "base"), str(out / "head"), "--fail-on", "code").returncode == 1


REPEAT_CORPUS = f"""
import sys
sys.path.insert(0, {TESTING!r})
import kernels, tilelang
from tilelang import tvm
with tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}}) as target:
    for func in ({BUILDS["elementwise_add"]}, {BUILDS["row_sum"]}):
        tilelang.lower(func, target=target)
"""


def test_repeat_runs_one_side_twice_into_base_and_head(tmp_path):
    (tmp_path / "corpus.py").write_text(REPEAT_CORPUS)
    out = tmp_path / "out"
    proc = regress(tmp_path, "--repeat", "--base-config", "tl.disable_warp_specialized=true", "--dir", str(out), "--json", "--", "python", "corpus.py")
    found = json.loads(proc.stdout)
    assert found["base"]["python"] == found["head"]["python"]
    assert found["base"]["configs"] == found["head"]["configs"] == {"tl.disable_warp_specialized": True}
    assert found["head"]["repeat"] is True and found["base"]["folder"] == str(out / "base") and found["head"]["folder"] == str(out / "head")
    # The truth: TileLang lowering the kernels in two processes of its own, under that config.
    names = ("elementwise_add", "row_sum")
    config = {"tl.disable_warp_specialized": True}
    first, second = (lowered(*[(name, config) for name in names]) for _ in range(2))
    truth = {name: "identical" if a == b else "code differs" for name, a, b in zip(names, first, second, strict=True)}
    assert {k["kernel"]: k["verdict"] for k in found["kernels"]} == truth
    assert proc.returncode == (0 if set(truth.values()) == {"identical"} else 1), proc.stderr
    assert "head: " in proc.stderr and "the same side again (--repeat)" in proc.stderr


VENVS = os.environ.get("LOWER_TRACE_TEST_VENVS") or os.path.join(ROOT, ".venvs")
CHECK = f"""
import sys
sys.path.insert(0, {TESTING!r})
import tilelang
from tilelang import tvm
from kernels import gemm
with tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}}) as target:
    source = tilelang.lower(gemm(), target=target).kernel_source
sys.exit(0 if source.count("tl::tma_load(B_desc") == 2 else 1)
"""


def test_bisect_takes_releases_newest_first_and_writes_a_summary_page(tmp_path):
    """--versions 0.1.15 0.1.13 (descending): before, 'the oldest is already bad'. The truth: the
    check run untraced in each release's venv."""
    versions = ["0.1.15", "0.1.13"]
    pythons = {v: os.path.join(VENVS, f"tilelang-{v}", "bin", "python") for v in versions}
    if not all(os.path.exists(p) for p in pythons.values()):
        pytest.skip(f"needs {VENVS}/tilelang-0.1.13 and 0.1.15 (bash scripts/env.sh builds them)")
    (tmp_path / "check.py").write_text(CHECK)
    clean = {k: v for k, v in env().items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    truth = {v: subprocess.run([p, "check.py"], cwd=tmp_path, env=clean, capture_output=True, timeout=300).returncode for v, p in pythons.items()}
    assert truth == {"0.1.13": 0, "0.1.15": 1}, truth  # good on the older, bad on the newer: the case this test is about
    work = tmp_path / "work"
    bisect_env = {**clean, "PYTHONPATH": ROOT}
    proc = subprocess.run(
        [lower_trace_cli(), "bisect", "--versions", *versions, "--venvs", VENVS, "--work", str(work), "--", "python", "check.py"],
        cwd=tmp_path, env=bisect_env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert lines[0] == "bisecting TileLang releases 0.1.13 0.1.15 (oldest first) with: python check.py"
    assert lines[1] == "(sorted as release numbers; given as 0.1.15 0.1.13)"
    assert lines[-1] == "first bad release: 0.1.15 (last good: 0.1.13)"
    assert lines[-2] == f"summary page: file://{work / 'summary.html'}" and (work / "summary.html").is_file()
    found = json.loads((work / "regress.json").read_text())
    assert (found["base"]["tilelang"], found["head"]["tilelang"]) == ("0.1.13", "0.1.15")
    assert (found["base"]["exit"], found["head"]["exit"]) == (truth["0.1.13"], truth["0.1.15"])
    assert [k["kernel"] for k in found["kernels"]] == ["gemm"]
