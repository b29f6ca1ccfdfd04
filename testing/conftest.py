"""Fixtures of every tier. The tiers: unit/ (no TileLang, no browser: seconds; runs in a venv
with only the `test` extra), integration/ (real compiles), browser/ (the report in Chromium).

Nothing here imports TileLang, TVM or playwright at import time: the unit tier runs without
them. The compile fixtures below, shared by the integration and browser tiers, import TileLang
when a test asks for them.

Where something optional is missing, its tests are skipped, loudly: a test module
that imports TileLang (directly or through kernels.py) is skipped where TileLang
is not installed, and the browser tests where Chromium or playwright is not.
The header and the summary of the run say which and why.
"""

import os
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # support.py, kernels.py, report_fixtures.py

from support import browser_missing, installed, pythonpath

# What a test module may need that a venv of the support matrix may lack (tvm-0.27 has no TileLang).
OPTIONAL = ("tilelang", "tvm", "torch", "hypothesis", "playwright")


class _Module(pytest.Module):
    """A test module that cannot be imported because an optional package is absent is skipped,
    with the reason, instead of failing collection. Any other import error still fails."""

    def collect(self):
        try:
            return super().collect()
        except self.CollectError as error:
            cause = error.__cause__
            missing = getattr(cause, "name", None) or ""
            if isinstance(cause, ModuleNotFoundError) and missing.split(".")[0] in OPTIONAL:
                _skipped_modules.append((self.path.name, missing))
                pytest.skip(f"needs {missing}, which is not installed here", allow_module_level=True)
            raise


_skipped_modules = []


def pytest_pycollect_makemodule(module_path, parent):
    if module_path.name == "__init__.py":
        return None
    return _Module.from_parent(parent, path=module_path)


_BROWSER_SKIP = "browser test skipped: "


def pytest_collection_modifyitems(config, items):
    reason = browser_missing()
    if reason is None:
        return
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.skip(reason=_BROWSER_SKIP + reason))


def pytest_report_header(config):
    missing = [module for module in ("tilelang", "hypothesis", "playwright") if not installed(module)]
    return [f"lower-trace: not installed here: {', '.join(missing)} (the tests that need them are skipped)"] if missing else []


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if _BROWSER_SKIP in str(getattr(r, "longrepr", ""))]
    if skipped:
        terminalreporter.write_line(f"lower-trace: {len(skipped)} BROWSER TESTS SKIPPED: {browser_missing()}", yellow=True, bold=True)
    for name, missing in _skipped_modules:
        terminalreporter.write_line(f"lower-trace: {name} skipped: needs {missing}, which is not installed here", yellow=True)


# The tracer's own fault (capture/run.py, tracer_fault): the user's compile goes on, so a test that
# checks only the compile would pass over it. Seen in this process's captured stderr, it fails the
# test, unless the test provokes the fault on purpose and says so (@pytest.mark.tracer_fault_expected).
# Faults in a child process are that test's to check (run_python hands back the child's stderr).
TRACER_FAULT = "lower-trace: internal error"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.passed or item.get_closest_marker("tracer_fault_expected") is not None:
        return
    # This phase's stderr only (a report carries the earlier phases' sections too); what a test
    # read with capsys/capfd itself is not here, and that test checks it.
    said = "".join(text for name, text in report.sections if name == f"Captured stderr {report.when}")
    faults = [line for line in said.splitlines() if TRACER_FAULT in line]
    if faults:
        report.outcome = "failed"
        report.longrepr = (
            f"lower-trace reported a fault of its own during {report.when} (mark the test "
            "@pytest.mark.tracer_fault_expected if it provokes one on purpose):\n  " + "\n  ".join(faults)
        )


@pytest.fixture
def tilelang():
    """TileLang 0.1.15+ (the tests written against its pass pipeline); see test_legacy_tilelang.py for older."""
    module = pytest.importorskip("tilelang")
    pytest.importorskip("tilelang.instrumentation", reason="needs TileLang 0.1.15+ (older ones: test_legacy_tilelang.py)")
    return module


@pytest.fixture
def cuda_target(tilelang):
    from tilelang import tvm

    return tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})


@pytest.fixture
def lower_cuda(tilelang, cuda_target):
    """lower(prim_func) -> CompiledArtifact, to CUDA source for sm_90a."""

    def lower(func):
        with cuda_target:
            return tilelang.lower(func, target=cuda_target)

    return lower


@pytest.fixture(autouse=True)
def tracing_off_after():
    """Every test leaves tracing off and TileLang's state as it found it."""
    yield
    import lower_trace

    lower_trace.disable()


def _script_environment():
    """The environment a test's script runs in, before the test's own variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "PYTEST_"))}
    # A PYTHONPATH the tests run under (a checkout named on it) reaches the script too: it
    # imports the lower_trace this process tests, not whichever the venv has installed.
    env["PYTHONPATH"] = pythonpath()
    return env


@pytest.fixture(scope="session")
def warm_python():
    """Where run_python's scripts fork from: a Python of this venv that imported torch and TileLang
    once (about 3.3 s a script saved), through lower-trace's own fork server (rerun/warm_children.py;
    each child runs lower-trace's startup hook under its own environment, as `lower-trace bisect`'s
    warm checks do, held to cold runs by test_check_runs.py). Older TileLang (hooks patched in at
    import, not held to cold runs) gets torch only; without torch, or if the server dies, the
    scripts run cold."""
    from importlib.util import find_spec

    from lower_trace.rerun.warm_children import WarmChildren

    env = _script_environment()
    modules = ["torch"]
    try:
        if find_spec("tilelang.instrumentation") is not None:
            modules.append("tilelang")
    except ImportError:  # no TileLang: torch only
        pass
    warm = WarmChildren(modules, 1, env)
    yield warm, env
    warm.close(kill=True)


@pytest.fixture
def run_python(tmp_path, request, warm_python):
    """Run a Python snippet in a fresh interpreter of this venv (startup hook included): forked
    from warm_python unless the test is marked cold_python (what happens at an interpreter's start,
    or at TileLang's import, is what it tests) or sets a PYTHON* variable of its own (sys.path is
    made at the start)."""
    warm, warm_env = warm_python
    cold = request.node.get_closest_marker("cold_python") is not None

    def run(code, env=None, cwd=None, args=(), timeout=300, check=True):
        script = tmp_path / "user_kernel.py"
        script.write_text(textwrap.dedent(code))
        full_env = {**_script_environment(), **(env or {})}
        python_vars = {k for k in (*full_env, *warm_env) if k.startswith("PYTHON")}
        if cold or any(full_env.get(k) != warm_env.get(k) for k in python_vars):
            command = [sys.executable, str(script), *args]
            proc = subprocess.run(command, cwd=str(cwd or tmp_path), env=full_env, capture_output=True, text=True, timeout=timeout)
        else:
            proc = warm.run(str(script), str(cwd or tmp_path), timeout, args, full_env)
        if check and proc.returncode != 0:
            raise AssertionError(f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return proc

    return run


@pytest.fixture
def run_script(warm_python):
    """run(path, cwd): `python path` as a fresh interpreter of this venv runs it (its own environment,
    the test's PYTHONPATH), forked from warm_python: for checks run many times over (a reproducer
    against each one-statement-smaller module) where a cold start is not what the test is about."""
    warm, _ = warm_python

    def run(path, cwd, timeout=300):
        return warm.run(str(path), str(cwd), timeout, (), _script_environment())

    return run


@pytest.fixture(scope="session")
def real_trace(tmp_path_factory):
    pytest.importorskip("tilelang")
    from lower_trace import load_trace
    from report_fixtures import real_run

    return load_trace(real_run(str(tmp_path_factory.mktemp("report"))))


# --- real runs several modules and tiers only read: made once per test process ---------------


@pytest.fixture(scope="session")
def layouts_traced(tmp_path_factory):
    """(the trace of gemm, row_sum and flash attention, TileLang's own Fragments of each): shared_runs.py."""
    pytest.importorskip("tilelang")
    pytest.importorskip("tilelang.instrumentation")  # 0.1.15: the modules after each pass, for the ground truth
    from shared_runs import layouts_run

    return layouts_run(str(tmp_path_factory.mktemp("layouts")))


@pytest.fixture(scope="session")
def killed(tmp_path_factory):
    """(the killed run's folder, its trace, the seconds it ran, a normal trace of the same kernel): shared_runs.py."""
    pytest.importorskip("tilelang")
    from shared_runs import killed_run

    return killed_run(tmp_path_factory.mktemp("killed"))
