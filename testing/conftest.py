"""Shared fixtures. Integration tests lower real TileLang kernels (CUDA source is
generated on the CPU); they are skipped only where TileLang is not installed."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)  # testing/kernels.py


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
        full_env["PYTHONPATH"] = HERE
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
