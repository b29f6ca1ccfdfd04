"""pytest --lower-trace on a real suite of passing and failing tests (pytest in a subprocess, as a
user runs it): failing tests keep their traces and name the report, passing ones leave nothing."""

import json
import os
import re
import subprocess
import sys
import textwrap
from importlib import metadata

import pytest

pytest.importorskip("tilelang")

from lower_trace import load_trace

SUITE = '''
import tilelang
import tilelang.language as T
from tilelang import tvm


def add_one(N=256, block=64):
    @T.prim_func
    def add_one(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(N // block, threads=block) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] + 1.0
    return add_one


def lower():
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    with target:
        return tilelang.lower(add_one(), target=target)


def test_compiles_and_passes():
    lower()


def test_compiles_and_fails():
    lower()
    assert False, "wrong numbers"


def test_fails_without_compiling():
    assert 1 == 2


def test_passes_without_compiling():
    pass
'''


def plugin_args():
    """The plugin as installed (its pytest11 entry point); a development checkout names it."""
    found = [e for e in metadata.entry_points(group="pytest11") if e.name == "lower_trace"]
    if os.environ.get("CI"):
        assert found and found[0].value == "lower_trace.pytest_plugin"  # `pip install .` registers it
    return [] if found else ["-p", "lower_trace.pytest_plugin"]


def run_suite(tmp_path, *args, ini=""):
    (tmp_path / "test_kernels.py").write_text(SUITE)
    if ini:
        (tmp_path / "pytest.ini").write_text(textwrap.dedent(ini))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *plugin_args(), *args, "test_kernels.py"],
        cwd=str(tmp_path), capture_output=True, text=True, timeout=600, env=env,
    )
    return done, done.stdout + done.stderr


def kept(folder):
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def test_failing_tests_keep_their_traces_and_name_the_report(tmp_path):
    traces = tmp_path / "root" / "pytest"  # as under the default folder: <TL_LOWER_TRACE_DIR>/pytest
    # As the README has it: a bare --lower-trace right before the tests to run (html).
    done, out = run_suite(tmp_path, "--lower-trace-dir", str(traces), "--lower-trace")
    assert done.returncode == 1 and "2 failed, 2 passed" in out, out
    (folder,) = kept(traces)  # one test compiled and failed: only its trace is kept
    assert "test_compiles_and_fails" in folder
    trace = load_trace(str(traces / folder))
    assert [k.name for k in trace.kernels] == ["add_one"] and trace.run.script == folder  # the report is titled after the test
    assert load_trace(str(traces)).path == trace.path  # the folder the plugin names is a trace root the CLI reads
    listed = subprocess.run([sys.executable, "-m", "lower_trace", "list", "--runs", str(traces)], capture_output=True, text=True)
    assert listed.returncode == 0 and trace.path in listed.stdout
    # The trace root above it holds no script's trace: the error says where pytest's are.
    root = subprocess.run([sys.executable, "-m", "lower_trace", "list", str(tmp_path / "root")], capture_output=True, text=True)
    assert root.returncode == 2 and f"the traces pytest --lower-trace kept are in {traces} (lower-trace list --runs {traces})" in root.stderr
    report = os.path.join(trace.path, "report.html")
    assert os.path.isfile(report)
    first, second = out.index("_ test_compiles_and_fails _"), out.index("_ test_fails_without_compiling _")
    assert f"traced 1 kernel; report: file://{report}" in out[first:second]  # in that failure's section
    assert "this test compiled no kernel before it failed" in out[second:]
    assert f"lower-trace: traces of 1 test kept in {traces} (lower-trace list --runs {traces})" in out


def test_keep_all_the_ini_option_and_off_by_default(tmp_path):
    traces = tmp_path / "traces"
    done, out = run_suite(tmp_path, "--lower-trace-keep=all", "--lower-trace-dir", str(traces), ini="[pytest]\nlower_trace = html\n")
    assert done.returncode == 1
    assert len(kept(traces)) == 2 and all("compiles" in name for name in kept(traces))  # tests that compiled nothing leave nothing
    plain = tmp_path / "plain"
    plain.mkdir()
    done, out = run_suite(plain, "--lower-trace-dir", str(plain / "traces"), ini="[pytest]\n")
    # Off unless asked: no traces, no lower-trace section (the plugin only shows in pytest's "plugins:" header).
    assert done.returncode == 1 and not kept(plain / "traces") and "traced 1 kernel" not in out and "compiled no kernel" not in out


def test_works_under_xdist_workers(tmp_path):
    pytest.importorskip("xdist")
    traces = tmp_path / "traces"
    done, out = run_suite(tmp_path, "-n", "2", "--lower-trace", "--lower-trace-dir", str(traces))
    assert done.returncode == 1 and "2 failed, 2 passed" in out, out
    (folder,) = kept(traces)
    assert "test_compiles_and_fails" in folder and load_trace(str(traces / folder)).kernels
    assert "traced 1 kernel; report: file://" in out
    assert f"lower-trace: traces of 1 test kept in {traces}" in out  # counted on the controller


def test_a_bad_ini_value_is_a_usage_error(tmp_path):
    done, out = run_suite(tmp_path, ini="[pytest]\nlower_trace = sometimes\n")
    assert done.returncode == 4 and "lower_trace = 'sometimes'" in out
    (tmp_path / "off").mkdir()
    done, out = run_suite(tmp_path / "off", "--lower-trace-keep=all", ini="[pytest]\n")  # keep what? tracing is off
    assert done.returncode == 4 and "--lower-trace-keep needs --lower-trace" in out
    done, out = run_suite(tmp_path / "off", "--lower-trace", "sometimes", ini="[pytest]\n")  # neither a mode nor tests
    assert done.returncode == 4 and "--lower-trace 'sometimes': neither a mode nor a test file or folder that exists" in out


PARAMETRIZED = SUITE + '''

import pytest


@pytest.mark.parametrize("block", [64])
def test_axpy_wrong_reference(block):
    lower()
    assert False, "wrong reference"
'''


def test_the_report_and_the_cli_name_the_test_by_its_node_id(tmp_path):
    """The folder is a safe path part; the report's title, `list`, `list --runs` and the summary
    line say the node id as pytest does (its own `FAILED <node id>` line is the ground truth)."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_k.py").write_text(PARAMETRIZED)
    traces = tmp_path / "traces"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rf", *plugin_args(), "--lower-trace-dir", str(traces), "--lower-trace",
         "tests/test_k.py::test_axpy_wrong_reference"],
        cwd=str(tmp_path), capture_output=True, text=True, timeout=600, env=env,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    (nodeid,) = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("FAILED ")]
    assert nodeid == "tests/test_k.py::test_axpy_wrong_reference[64]"
    (folder,) = kept(traces)
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", folder), folder  # one harmless path part
    trace = load_trace(str(traces / folder))
    assert trace.run.title == nodeid and trace.run.script == folder
    page = open(os.path.join(trace.path, "report.html"), encoding="utf-8").read()
    assert f"<title>lower-trace: {nodeid}</title>" in page
    listed = subprocess.run([sys.executable, "-m", "lower_trace", "list", str(traces)], capture_output=True, text=True)
    assert listed.returncode == 0 and listed.stdout.splitlines()[0].split()[2] == nodeid, listed.stdout
    runs = subprocess.run([sys.executable, "-m", "lower_trace", "list", "--runs", str(traces)], capture_output=True, text=True)
    (line,) = runs.stdout.splitlines()
    assert f"  {nodeid}  {trace.path}" in line, line
    as_json = subprocess.run([sys.executable, "-m", "lower_trace", "list", "--runs", "--json", str(traces)], capture_output=True, text=True)
    assert [run["title"] for run in json.loads(as_json.stdout)["runs"]] == [nodeid]
    assert f"lower-trace: traces of 1 test kept in {traces} (lower-trace list --runs {traces}): {nodeid}" in out
