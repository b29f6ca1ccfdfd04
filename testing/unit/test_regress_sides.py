"""lower-trace regress and bisect --versions without TileLang: the real console script on stored
traces (testing/fixtures) and bad input -- what is said, exit 2 and nothing written -- and release
numbers ordered as pip's own `packaging` orders them."""

import itertools
import json
import os
import random
import shutil
import subprocess

import pytest

from lower_trace.regress.releases import oldest_first, release_key
from support import FIXTURES, ROOT, lower_trace_cli

TRACE_13 = os.path.join(FIXTURES, "compare", "tilelang-0.1.13")  # elementwise_add traced by TileLang 0.1.13
TRACE_15 = os.path.join(FIXTURES, "compare", "tilelang-0.1.15")  # ... and by 0.1.15


def cli(cwd, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    env["PYTHONPATH"] = ROOT
    return subprocess.run([lower_trace_cli(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def one_error_line(proc):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("lower-trace: error: "), proc.stderr
    return lines[0]


def regress_output(folder, base_trace, head_trace):
    """A folder laid out as lower-trace regress --dir leaves it: base/ and head/ (one run each) and regress.json."""
    for side, trace in (("base", base_trace), ("head", head_trace)):
        shutil.copytree(trace, folder / side / "corpus" / "run-1")
    (folder / "regress.json").write_text("{}")
    return folder


def test_a_regress_output_folder_given_as_a_side_is_its_head(tmp_path):
    """Two earlier regress runs whose heads are the same trace (byte for byte) and whose bases are
    not: compared as folders, every kernel is identical -- which holds only if the heads were taken."""
    a = regress_output(tmp_path / "a", TRACE_13, TRACE_15)
    b = regress_output(tmp_path / "b", TRACE_15, TRACE_15)
    proc = cli(tmp_path, "regress", "--compare", str(a), str(b), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = json.loads(proc.stdout)
    assert found["base"]["folder"] == str(a / "head") and found["head"]["folder"] == str(b / "head")
    assert [k["verdict"] for k in found["kernels"]] == ["identical"]
    notes = proc.stderr.splitlines()
    assert notes == [
        f"lower-trace regress: --compare {a} is a regress output folder: comparing its head side, {a / 'head'}",
        f"lower-trace regress: --compare {b} is a regress output folder: comparing its head side, {b / 'head'}",
    ]
    # The heads' own folders, named as sides, give the same answer; the bases (0.1.13 against 0.1.15) do not.
    assert json.loads(cli(tmp_path, "regress", "--compare", str(a / "head"), str(b / "head"), "--json").stdout)["kernels"] == found["kernels"]
    bases = cli(tmp_path, "regress", "--compare", str(a / "base"), str(b / "base"), "--json")
    assert json.loads(bases.stdout)["kernels"][0]["verdict"] != "identical"  # same CUDA, other passes (exit 0 by the default gate)


@pytest.mark.parametrize("what", ["empty", "no traces", "missing"])
def test_compare_of_a_folder_that_holds_no_trace_is_one_line(tmp_path, what):
    """Before: every kernel 'missing on head' and exit 1. A folder of other files, an empty one, none at all."""
    folder = tmp_path / "head"
    if what == "empty":
        folder.mkdir()
    elif what == "no traces":
        shutil.copytree(os.path.join(FIXTURES, "edits-index"), folder)
    line = one_error_line(cli(tmp_path, "regress", "--compare", TRACE_15, str(folder), "--dir", str(tmp_path / "out")))
    assert f"--compare {folder}:" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--fail-on", ""], "--fail-on '': name what fails the gate"),
        (["--fail-on", " , "], "--fail-on ' , ': name what fails the gate"),
        (["--repeat", "--head-config", "tl.disable_tma_lower=true"], "--head-config with --repeat"),
        (["--repeat", "--head", "python3"], "--head with --repeat"),
    ],
)
def test_bad_regress_options_are_one_line_and_run_nothing(tmp_path, args, said):
    out = tmp_path / "out"
    line = one_error_line(cli(tmp_path, "regress", "--dir", str(out), *args, "--", "python", "-c", "open('ran', 'w')"))
    assert said in line, line
    assert not out.exists() and not (tmp_path / "ran").exists()


def test_repeat_with_compare_is_one_line(tmp_path):
    line = one_error_line(cli(tmp_path, "regress", "--repeat", "--compare", TRACE_13, TRACE_15))
    assert "leave out --repeat" in line


# Release numbers as TileLang and pip write them, each form PEP 440 orders specially.
RELEASES = ["0.1.9", "0.1.13", "0.1.15", "0.1.6.post1", "0.1.6", "0.2.0", "0.2.0rc1", "0.2.0.dev1", "0.2.0a1", "0.2.0b2", "0.2.0.post1", "1.0", "0.10.0"]
RELEASES += ["0.2.0a1.dev2", "0.2.0.post1.dev1"]


def test_releases_sort_as_pip_sorts_them():
    version = pytest.importorskip("packaging.version")
    truth = sorted(RELEASES, key=version.Version)
    shuffled = list(RELEASES)
    for seed in range(20):
        random.Random(seed).shuffle(shuffled)
        assert oldest_first(shuffled) == truth
    for a, b in itertools.combinations(RELEASES, 2):
        assert (release_key(a) < release_key(b)) == (version.Version(a) < version.Version(b)), (a, b)
    assert release_key("1.0") == release_key("1.0.0") and version.Version("1.0") == version.Version("1.0.0")


@pytest.mark.parametrize(
    ("versions", "said"),
    [
        (["0.1.15", "latest"], "--versions latest: not a release number"),
        (["0.1.13", "0.1.13.0"], "a release is named twice"),
    ],
)
def test_bad_release_numbers_are_one_line(tmp_path, versions, said):
    line = one_error_line(cli(tmp_path, "bisect", "--versions", *versions, "--venvs", str(tmp_path / "venvs"), "--", "true"))
    assert said in line, line
    assert not (tmp_path / "venvs").exists()


def test_every_way_of_asking_xdist_for_workers_runs_the_sides_one_after_the_other():
    from lower_trace.regress.run_sides import uses_workers

    for spread in (["-n", "2"], ["-n2"], ["-nauto"], ["--numprocesses=2"], ["--tx", "2*popen", "--dist", "load"], ["-d", "--tx", "popen"]):
        assert uses_workers(["pytest", "tests/", *spread]), spread
    assert not uses_workers(["pytest", "tests/", "-k", "nightly"]) and not uses_workers(["python", "kernels.py"])
