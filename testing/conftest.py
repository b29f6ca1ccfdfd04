"""Shared fixtures. Integration tests lower real TileLang kernels (CUDA source is
generated on the CPU); they are skipped only where TileLang is not installed.

Where something optional is missing, its tests are skipped, loudly: a test module
that imports TileLang (directly or through kernels.py) is skipped where TileLang
is not installed, and the browser tests where Chromium or playwright is not.
The header and the summary of the run say which and why.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)  # testing/kernels.py
CHROMIUM = "/usr/bin/chromium"

# What a test module may need that a venv of the support matrix may lack (tvm-0.27 has no TileLang).
OPTIONAL = ("tilelang", "tvm", "torch", "hypothesis", "playwright")


def _installed(module):
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def browser_missing():
    """Why the report's browser tests cannot run here, or None. scripts/test.sh passes on why
    the browser could not be installed (LOWER_TRACE_NO_BROWSER_REASON)."""
    reason = os.environ.get("LOWER_TRACE_NO_BROWSER_REASON", "").strip()
    if reason:
        return reason
    if not os.path.exists(CHROMIUM):
        return f"{CHROMIUM} is not installed (scripts/test.sh installs Debian's chromium)"
    if not _installed("playwright"):
        return "the playwright package is not installed (scripts/env.sh installs it)"
    return None


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
    missing = [module for module in ("tilelang", "hypothesis", "playwright") if not _installed(module)]
    return [f"lower-trace: not installed here: {', '.join(missing)} (the tests that need them are skipped)"] if missing else []


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if _BROWSER_SKIP in str(getattr(r, "longrepr", ""))]
    if skipped:
        terminalreporter.write_line(f"lower-trace: {len(skipped)} BROWSER TESTS SKIPPED: {browser_missing()}", yellow=True, bold=True)
    for name, missing in _skipped_modules:
        terminalreporter.write_line(f"lower-trace: {name} skipped: needs {missing}, which is not installed here", yellow=True)


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


@pytest.fixture
def run_python(tmp_path):
    """Run a Python snippet in a fresh interpreter of this venv (startup hook included)."""

    def run(code, env=None, cwd=None, args=(), timeout=300, check=True):
        script = tmp_path / "user_kernel.py"
        script.write_text(textwrap.dedent(code))
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "PYTEST_"))}
        # A PYTHONPATH the tests run under (a checkout named on it) reaches the script too: it
        # imports the lower_trace this process tests, not whichever the venv has installed.
        full_env["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH", "")) if p)
        full_env.update(env or {})
        proc = subprocess.run(
            [sys.executable, str(script), *args],
            cwd=str(cwd or tmp_path),
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return proc

    return run


def lower_trace_cli():
    """The installed console script, next to this interpreter."""
    path = os.path.join(os.path.dirname(sys.executable), "lower-trace")
    return path if os.path.exists(path) else shutil.which("lower-trace")


# --- the report in a browser (Debian's chromium, driven by playwright) ---


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM) and not os.environ.get("CI"):
        pytest.skip("Debian chromium is not installed (scripts/test.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api") if not os.environ.get("CI") else __import__("playwright.sync_api").sync_api
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def real_trace(tmp_path_factory):
    pytest.importorskip("tilelang")
    from lower_trace import load_trace
    from report_fixtures import real_run

    return load_trace(real_run(str(tmp_path_factory.mktemp("report"))))
