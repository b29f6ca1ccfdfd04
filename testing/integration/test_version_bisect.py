"""lower-trace bisect --versions on real TileLang releases: the project's own venvs (scripts/env.sh
builds .venvs/tilelang-0.1.9, 0.1.13, 0.1.15 next to the checkout; the cache layout is that folder's
naming) are the cache, and the check is decided by TileLang itself -- the GEMM of kernels.py lowered
for sm_90a, good while its B-tile TMA load is emitted as two straight tl::tma_load calls. The test
works out the first bad release by running the check in each venv itself, and reads each release's
CUDA source itself for what the comparison must find."""

import os
import subprocess

import pytest

from support import ROOT, TESTING, lower_trace_cli

VERSIONS = ["0.1.9", "0.1.13", "0.1.15"]
# Where scripts/env.sh puts the venvs; LOWER_TRACE_TEST_VENVS names another folder of the same layout.
VENVS = os.environ.get("LOWER_TRACE_TEST_VENVS") or os.path.join(ROOT, ".venvs")
CHECK = f"""
import sys
sys.path.insert(0, {TESTING!r})
import tilelang
from tilelang import tvm
from kernels import gemm
with tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}}) as target:
    source = tilelang.lower(gemm(), target=target).kernel_source
if len(sys.argv) > 1:
    open(sys.argv[1], "w").write(source)
sys.exit(0 if source.count("tl::tma_load(B_desc") == 2 else 1)
"""


def python_of(version):
    return os.path.join(VENVS, f"tilelang-{version}", "bin", "python")


def need_venvs(versions):
    missing = [v for v in versions if not os.path.exists(python_of(v))]
    if missing:
        pytest.skip(f"needs {VENVS}/tilelang-{{{','.join(missing)}}} (bash scripts/env.sh tilelang-VERSION builds them)")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "TILELANG_DISABLE_CACHE": "1", **extra}


def bisect(cwd, *args, env=None):
    return subprocess.run([lower_trace_cli(), "bisect", *args], cwd=cwd, env=env or clean_env(), capture_output=True, text=True, timeout=600)


def test_the_first_bad_release_is_the_one_the_check_says(tmp_path):
    need_venvs(VERSIONS)
    check = tmp_path / "check.py"
    check.write_text(CHECK)
    # The truth: the check run untraced in each release's venv, its CUDA source kept.
    runs = {
        v: subprocess.Popen(
            [python_of(v), str(check), str(tmp_path / f"gemm-{v}.cu")], cwd=tmp_path, env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for v in VERSIONS
    }
    truth = {v: "good" if run.wait(timeout=300) == 0 else "bad" for v, run in runs.items()}
    sources = {v: (tmp_path / f"gemm-{v}.cu").read_text() for v in VERSIONS}
    assert truth == {"0.1.9": "good", "0.1.13": "good", "0.1.15": "bad"}, truth  # the case this test is about
    first_bad = next(v for v in VERSIONS if truth[v] == "bad")
    last_good = VERSIONS[VERSIONS.index(first_bad) - 1]

    work = tmp_path / "work"
    proc = bisect(tmp_path, "--versions", *VERSIONS, "--venvs", VENVS, "--work", str(work), "--", "python", str(check))
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert f"first bad release: {first_bad} (last good: {last_good})" in out.splitlines()[-1]
    # The ends first, then the middle; each release's check traced into work/<version>.
    said = [line.split(":")[0] for line in out.splitlines() if line.split(":")[0] in VERSIONS and (": good" in line or ": bad" in line)]
    assert said == ["0.1.9", "0.1.15", "0.1.13"], out
    for version in VERSIONS:
        assert f"{version}: {truth[version]} (exit" in out
        assert list((work / version).rglob("trace.jsonl")), f"no trace in {work / version}"
    # The comparison of the last good and the first bad: the GEMM differs, as the sources say.
    assert sources[last_good] != sources[first_bad]
    assert f"base (last good): TileLang {last_good}" in out and f"head (first bad): TileLang {first_bad}" in out
    kernel_lines = [line for line in out.splitlines() if "gemm" in line and "differs" in line]
    assert kernel_lines, out


def test_a_release_pip_cannot_find_is_skipped(tmp_path):
    """An unknown release is skipped with pip's reason; with one usable release left: one line, exit 2.
    pip is kept off the network (no index, no links): it answers at once, and it is pip that says no."""
    need_venvs(["0.1.15"])
    cache = tmp_path / "cache"
    cache.mkdir()
    os.symlink(os.path.join(VENVS, "tilelang-0.1.15"), cache / "tilelang-0.1.15")
    (tmp_path / "no-links").mkdir()
    env = clean_env(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(tmp_path / "no-links"), PIP_CONFIG_FILE=os.devnull)
    proc = bisect(tmp_path, "--versions", "0.0.0", "0.1.15", "--venvs", str(cache), "--work", str(tmp_path / "w"), "--", "python", "-c", "pass", env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("0.0.0: skipped:")]
    assert len(skipped) == 1 and "tilelang==0.0.0" in skipped[0], proc.stdout
    assert "fewer than two" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (cache / "tilelang-0.0.0").exists()  # a venv that failed to build is not left looking like one


def test_a_check_good_on_the_newest_release_is_exit_0(tmp_path):
    """Good on the newest release too: one line, exit 0, nothing bisected (the search's other ends: unit tier)."""
    need_venvs(["0.1.13", "0.1.15"])
    proc = bisect(tmp_path, "--versions", "0.1.13", "0.1.15", "--venvs", VENVS, "--work", str(tmp_path / "w"), "--", "python", "-c", "pass")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "every release is good, the newest (0.1.15) included: no bad release to find", proc.stdout
    assert sorted(os.listdir(tmp_path / "w")) == ["0.1.13", "0.1.15"]  # both ends were run, nothing else
