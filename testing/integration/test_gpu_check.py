"""scripts/gpu_check.sh --dry-run: what the GPU check does that needs no GPU, really done here.

The wheelhouse is built (PyPI, once; reused from build/gpu-wheelhouse while its pins hold) and must
fit what travels to the GPU machine; it installs with pip --no-index into a fresh venv; the steps run
against target "c" (gcc, CPU tensors) and CUDA compile-only: a traced compile matches torch, an edited
working copy is compiled (PATCHED) and doubles every number while an untraced run does not, the
device stage's registers / local frame / shared memory equal the cubin's own ELF records, and
bisect with a numeric check names the miscompiling pass the check slipped in, and a launch kept with
its tensors is repro'd (its edit caught), seen as "results differ" by regress --run against a head with
the miscompile, and bisect --launch names the pass. The driver's numbers
and the CUDA runs themselves wait for a GPU (docs/support.md, "GPU check")."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from support import ROOT

pytest.importorskip("tilelang")
pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="the dry run compiles CUDA (compile-only) with nvcc")


def test_the_dry_run_passes_every_step():
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    env["PYTHON"] = sys.executable
    done = subprocess.run(["bash", os.path.join(ROOT, "scripts", "gpu_check.sh"), "--dry-run"], capture_output=True, text=True, env=env, timeout=1200)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    lines = [line for line in done.stdout.splitlines() if line.startswith(("PASS ", "FAIL "))]
    assert not [line for line in lines if line.startswith("FAIL")], out
    passed = {line.split(":")[0][5:] for line in lines}
    assert {
        "wheelhouse",
        "traced compile runs and matches torch",
        "edited working copy runs (PATCHED), numbers as the edit says, untraced unaffected",
        "device stage = the loaded cubin's attributes",
        "bisect with a numeric check finds the injected pass",
        "launches kept, repro'd, regress --run and bisect --launch on the injected miscompile",
    } <= passed, out
    assert any(step.startswith("install from the wheelhouse") for step in passed), out
    # It fits in what travels, and says what it left out.
    size = re.search(r"= ([\d.]+) MiB of the 64 MiB that travel", done.stdout)
    assert size and float(size.group(1)) <= 64, out
    assert "left out of the wheelhouse:" in done.stdout and "torch" in done.stdout.split("left out of the wheelhouse:")[1]
    # The edit doubled the numbers; the device stage held against the cubin, spills included; bisect named the pass.
    assert "PATCHED, every number exactly twice" in out and "untraced: the first run's numbers" in out
    assert re.search(r"\(spills\): \d+ regs, [1-9]\d* B local frame", out), out
    assert "first bad pass: tl.BuggyConstantFold" in out
    # Issue 40: the launch's repro matched and caught its edit; regress --run and bisect --launch saw the miscompile.
    assert "its edit (3.0 -> 4.0) is caught (exit 1)" in out and "regress --run: results differ" in out
    assert "bisect --launch: first bad pass: tl.BuggyConstantFold" in out
    assert re.search(r"gpu_check --dry-run: \d+ passed, 0 failed", done.stdout), out
