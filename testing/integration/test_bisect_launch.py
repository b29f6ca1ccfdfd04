"""bisect --launch on real compiles and runs (target "c", CPU tensors): a launch recorded with its tensors
is the check, no script written. The miscompile is the test's own (testing/miscompile.py: 3.0 becomes 3.5
right after tl.LowerTileOp, put into every Python the search starts through a sitecustomize), so the pass
bisect must name is known beforehand: tl.BuggyConstantFold."""

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("tilelang")
torch = pytest.importorskip("torch")

import tilelang  # noqa: E402

import kernels  # noqa: E402
import lower_trace  # noqa: E402
from lower_trace.cli.main import main  # noqa: E402
from support import TESTING, lower_trace_cli, pythonpath  # noqa: E402

SITECUSTOMIZE = f"""
import os, sys
if os.environ.get("INJECT_MISCOMPILE"):
    sys.path.insert(0, {TESTING!r})
    import miscompile
    miscompile.inject(os.environ["INJECT_MISCOMPILE"])
"""


def traced_launch(folder, inject=""):
    """scale_c (C = A * 3.0) compiled and called once, traced with its tensors; the run's folder."""
    code = f"""
import sys
sys.path.insert(0, {TESTING!r})
import torch, tilelang, kernels
kernel = tilelang.compile(kernels.scale_c(factor=3.0), target="c", execution_backend="cython")
kernel(torch.arange(64, dtype=torch.float32), torch.zeros(64))
"""
    env = _env(folder, inject) | {"TL_LOWER_TRACE": "trace", "TL_LOWER_TRACE_DIR": str(folder / "traces"), "TL_LOWER_TRACE_LAUNCHES": "data"}
    done = subprocess.run([sys.executable, "-c", code], cwd=str(folder), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = (folder / "traces").glob("*/run-*")
    return run


def _env(folder, inject):
    site = folder / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "INJECT_"))}
    env["PYTHONPATH"] = os.pathsep.join((str(site), pythonpath()))
    return env | ({"INJECT_MISCOMPILE": inject} if inject else {})


def bisect(folder, *options, inject="LowerTileOp", relative=False):
    command = [lower_trace_cli(), "bisect", *map(str, options), "--work", "work" if relative else str(folder / "work")]
    return subprocess.run(command, cwd=str(folder), env=_env(folder, inject), capture_output=True, text=True, timeout=600)


def test_a_launch_recorded_before_the_bug_finds_the_pass_that_breaks_it(tmp_path):
    run = traced_launch(tmp_path)  # good numbers: 3 * A
    done = bisect(tmp_path, "--launch", f"{run}:k1")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "first bad pass: tl.BuggyConstantFold" in done.stdout
    assert "-                        C[i] = A[i] * T.float32(3.0)" in done.stdout and "+                        C[i] = A[i] * T.float32(3.5)" in done.stdout


def test_a_reference_release_stands_in_for_numbers_recorded_wrong(tmp_path):
    """Traced with the bug (3.5 * A recorded): the reference is the launch built by a Python without it,
    named as a user would, relative to the folder they are in (and the work folder too)."""
    run = traced_launch(tmp_path, inject="LowerTileOp")
    clean = tmp_path / "clean-python"
    clean.write_text(f"#!/bin/sh\nunset INJECT_MISCOMPILE\nexec {sys.executable} \"$@\"\n")
    clean.chmod(0o755)
    fake = tmp_path / "fake-python"  # exits 0 and records nothing: refused, not taken for a reference
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    refused = bisect(tmp_path, "--launch", f"{run}:k1", "--reference-python", "./fake-python", relative=True)
    assert refused.returncode == 2 and "exited 0 but recorded no outputs" in refused.stderr, refused.stderr
    shutil.rmtree(tmp_path / "work", ignore_errors=True)
    done = bisect(tmp_path, "--launch", f"{run}:k1:1", "--reference-python", "./clean-python", relative=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "first bad pass: tl.BuggyConstantFold" in done.stdout
    (tmp_path / "work").rename(tmp_path / "work-reference")
    recorded = bisect(tmp_path, "--launch", f"{run}:k1")  # against the wrong numbers themselves: the buggy build matches them
    assert recorded.returncode == 1 and "first bad pass" not in recorded.stdout


def test_what_bisect_launch_refuses_is_one_line(tmp_path, capsys):
    with lower_trace.trace(mode="html", trace_dir=tmp_path / "meta", launches="meta") as meta:
        tilelang.compile(kernels.scale_c(), target="c", execution_backend="cython")(torch.ones(64), torch.zeros(64))
    capsys.readouterr()
    cases = [
        (["--launch", f"{meta.run_dir}:k1"],
         "k1 (scale) launch 1 kept no tensors (traced with TL_LOWER_TRACE_LAUNCHES=meta); trace again with TL_LOWER_TRACE_LAUNCHES=data to keep them"),
        (["--launch", f"{meta.run_dir}:k9"], f"--launch {meta.run_dir}:k9: no kernel 'k9' in this trace; kernels: k1 (scale)"),
        (["--launch", f"{meta.run_dir}:k1", "--", "python", "check.py"],
         "--launch is the check (the launch against its reference): leave out the command after --"),
        (["--atol", "0.1", "--", "python", "check.py"], "--reference-config, --reference-python, --atol and --rtol go with --launch RUN:KERNEL[:N]"),
        (["--launch", f"{meta.run_dir}:k1", "--reference-python", "no-such-python-here"],
         "--reference-python no-such-python-here: no such interpreter (or not executable); name its path"),
    ]
    for options, said in cases:
        assert main(["bisect", *options, "--work", str(tmp_path / "work")]) == 2
        assert capsys.readouterr().err.strip() == f"lower-trace: error: {said}"
