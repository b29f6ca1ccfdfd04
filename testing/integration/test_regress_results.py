"""regress --run on real compiles and real runs (target "c", CPU tensors): the head side is this venv's
Python with a miscompile slipped into TileLang's pipeline (testing/miscompile.py: 3.0 becomes 3.5, and
x * 2.0 becomes x + x, other code with the same numbers). The truth is the test's own: which kernel's
numbers the injected passes change and by how much, worked out with torch from the inputs the sides
kept; what the gate does with each verdict."""

import json
import os
import subprocess
import sys

import numpy
import pytest

pytest.importorskip("tilelang")
torch = pytest.importorskip("torch")

from support import TESTING, lower_trace_cli, pythonpath  # noqa: E402

CORPUS = f"""
import os, sys
sys.path.insert(0, {TESTING!r})
import torch, tilelang, tilelang.language as T
import miscompile
if os.environ.get("INJECT_MISCOMPILE"):
    miscompile.inject_both(os.environ["INJECT_MISCOMPILE"], os.environ.get("INJECT_WHICH", "buggy,harmless").split(","))


def scaled(name, factor, N=64):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(1) as _:
            for i in T.serial(N):
                C[i] = A[i] * T.float32(factor)

    return main.with_attr("global_symbol", name)


a = torch.arange(64, dtype=torch.float32) if os.environ.get("SEEDED") else torch.randn(64)
for name, factor in (("triple", 3.0), ("double", 2.0), ("half", 0.5)):
    kernel = tilelang.compile(scaled(name, factor), target="c", execution_backend="cython")
    kernel(a, torch.zeros(64))
"""


def buggy_python(folder, which="buggy,harmless"):
    """An interpreter that is this one with TileLang's pipeline miscompiling (the head side)."""
    path = folder / f"python-{which.replace(',', '-')}"
    path.write_text(f"#!/bin/sh\nexport INJECT_MISCOMPILE=LowerTileOp INJECT_WHICH={which}\nexec {sys.executable} \"$@\"\n")
    path.chmod(0o755)
    return path


def regress(folder, *options, seeded=True):
    (folder / "corpus.py").write_text(CORPUS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")} | {"PYTHONPATH": pythonpath()}
    if seeded:
        env["SEEDED"] = "1"
    corpus = [] if "--compare" in options else ["--", "python", "corpus.py"]
    command = [lower_trace_cli(), "regress", *map(str, options), "--json", *corpus]
    done = subprocess.run(command, cwd=str(folder), env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    found = json.loads(done.stdout)
    return done.returncode, {k["kernel"]: k for k in found["kernels"]}, found["notes"]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("results")
    return folder, regress(folder, "--run", "--head", buggy_python(folder), "--dir", folder / "out")


def test_results_differ_where_the_miscompile_changes_numbers_and_rank_first(seeded):
    _, (code, kernels, _) = seeded
    assert code == 1
    assert {name: k["verdict"] for name, k in kernels.items()} == {
        "triple": "results differ", "double": "code differs, results identical", "half": "identical",
    }
    a = torch.arange(64, dtype=torch.float32)
    first = int(torch.nonzero(a * 3.0 != a * 3.5)[0])
    worst = float((a * 3.5 - a * 3.0).abs().max())
    (launch,) = kernels["triple"]["results"]
    assert launch["differs"] and launch["how"] == "head's launch 1, the same inputs"
    assert launch["outputs"]["C"].startswith(f"differs at [{first}]: {a[first] * 3:g} then, {a[first] * 3.5:g} now; 63 of 64 elements;")
    assert f"max abs error {worst:g}" in launch["outputs"]["C"]
    assert kernels["triple"]["evidence"][0].startswith(f"launch 1 (head's launch 1, the same inputs): C differs at [{first}]: 3 base, 3.5 head;")
    assert kernels["triple"]["severity"] == 0 and kernels["triple"]["reasons"] == ["results differ", "code differs"]
    assert kernels["double"]["results"][0]["outputs"] == {"A": "identical (bitwise)", "C": "identical (bitwise)"}


def test_the_gate_on_results_alone_and_on_stored_sides(seeded):
    folder, _ = seeded
    out = folder / "out"
    code, kernels, _ = regress(folder, "--compare", out / "base", out / "head", "--run", "--fail-on", "results")
    assert code == 1 and kernels["triple"]["verdict"] == "results differ"
    code, kernels, _ = regress(folder, "--compare", out / "base", out / "head")  # without --run: code only
    assert code == 1 and {k["verdict"] for k in kernels.values()} == {"code differs", "identical"}
    assert all("results" not in k for k in kernels.values())


def test_other_code_with_the_same_numbers_passes_a_gate_on_results(tmp_path):
    code, kernels, _ = regress(tmp_path, "--run", "--head", buggy_python(tmp_path, "harmless"), "--dir", tmp_path / "out", "--fail-on", "results")
    assert code == 0
    assert {name: k["verdict"] for name, k in kernels.items()} == {"triple": "identical", "double": "code differs, results identical", "half": "identical"}
    code, _, _ = regress(tmp_path, "--compare", tmp_path / "out" / "base", tmp_path / "out" / "head", "--run")  # the default gate: code
    assert code == 1


def test_other_inputs_on_head_are_replayed_with_base_s(tmp_path):
    code, kernels, notes = regress(tmp_path, "--run", "--head", buggy_python(tmp_path), "--dir", tmp_path / "out", seeded=False)
    assert code == 1
    assert {name: k["verdict"] for name, k in kernels.items()} == {
        "triple": "results differ", "double": "code differs, results identical", "half": "identical",
    }
    (launch,) = kernels["triple"]["results"]
    assert launch["how"] == "base's inputs on head's build"
    (replay,) = (tmp_path / "out" / "results").glob("*-triple/launch-1")
    a = torch.from_numpy(numpy.load(replay / "inputs" / "in-A.npy", allow_pickle=False))
    assert torch.equal(a, torch.from_numpy(numpy.load(next((tmp_path / "out" / "base").rglob("in-A.npy")), allow_pickle=False)))  # base's inputs
    worst = float((a * 3.5 - a * 3.0).abs().max())
    assert f"max abs error {worst:.6g}" in launch["outputs"]["C"]
    assert "half" not in {p.name.split("-", 1)[1] for p in (tmp_path / "out" / "results").iterdir()}  # identical code: not rebuilt
    assert notes[-1].endswith("1 with identical code and other inputs on head not replayed")
