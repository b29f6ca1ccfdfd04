"""Compile errors read as the compiler wrote them, on real compiles: gcc rejecting an edited C
kernel under `lower-trace run`, nvcc rejecting an edited CUDA kernel. (The same views on records
made by hand: unit/test_cli_and_terminal.py.)"""

import os
import shutil
import subprocess

import pytest

from lower_trace.cli.main import main
from support import lower_trace_cli, pythonpath

BROKEN_C = """
import tilelang
import kernels
tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
print("COMPILED")
"""



def test_a_compile_error_shows_the_compilers_text_and_the_scripts_traceback(tilelang, tmp_path):
    """A C kernel whose edited working copy gcc rejects, run with `lower-trace run --mode both`:
    the terminal view and `lower-trace show` print the error as lines; the user sees their own traceback."""
    script = tmp_path / "user_kernel.py"
    script.write_text(BROKEN_C)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "PYTEST_"))}
    env.update(PYTHONPATH=pythonpath(), NO_COLOR="1")
    run = [lower_trace_cli(), "run", "--mode", "both", "user_kernel.py"]
    first = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0 and "COMPILED" in first.stdout, first.stderr
    working = tmp_path / "tmp" / "lower_trace_dir" / "user_kernel" / "edits" / "vector_add.c"
    working.write_text(working.read_text().replace("C[i] = (A[i] + B[i]);", "C[i] = (A[i] + B[i]) oops;"))
    broken = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert broken.returncode == 1 and "COMPILED" not in broken.stdout  # as `python user_kernel.py` exits
    assert f"{working}:13:" in broken.stderr and "error: expected" in broken.stderr  # gcc, on the user's file
    # The live terminal view: the stored message is shown line by line.
    err = broken.stderr.splitlines()
    assert "\\u000a" not in broken.stderr
    assert any(line.startswith("   compile failed: RuntimeError: Compilation Failed! ['") for line in err)
    assert any(line == "           C[i] = (A[i] + B[i]) oops;" for line in err), broken.stderr
    # The user's traceback starts in the user's script: no lower-trace or runpy frames.
    tb = broken.stderr[broken.stderr.index("Traceback (most recent call last):") :]
    assert tb.splitlines()[1] == f'  File "{script}", line 4, in <module>'
    assert "lower_trace" not in tb.split("RuntimeError: Compilation Failed!")[0] and "runpy" not in tb
    # `lower-trace show` of the stored trace: the same lines.
    show = subprocess.run([lower_trace_cli(), "show", "--no-diff", "--no-source"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert show.returncode == 0, show.stderr
    out = show.stdout.splitlines()
    assert "\\u000a" not in show.stdout and "           C[i] = (A[i] + B[i]) oops;" in out
    assert out[0].startswith("== lower-trace: kernel k1 vector_add  [c]  ") and "compile failed" in out[0] and "0 failed" not in out[0]
    listing = subprocess.run([lower_trace_cli(), "list"], cwd=tmp_path, env=env, capture_output=True, text=True)
    row = listing.stdout.splitlines()[1]
    assert "compile failed" in row and "0 failed" not in row and "passes" in row


def test_an_nvcc_error_reads_as_nvcc_wrote_it(tmp_path, lower_cuda, tilelang, cuda_target, capsys):
    import kernels
    import lower_trace

    nvcc = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + os.path.dirname(nvcc)
    with lower_trace.trace(mode="html", trace_dir=tmp_path):
        lower_cuda(kernels.elementwise_add())
    (working,) = (tmp_path / folder / "edits" / "elementwise_add.cu" for folder in os.listdir(tmp_path))
    source = working.read_text()
    working.write_text(source.replace('extern "C" __global__', 'int lower_trace_marker = oops;\nextern "C" __global__', 1))
    with pytest.raises(Exception), lower_trace.trace(mode="html", trace_dir=tmp_path) as run, cuda_target:
        tilelang.lower(kernels.elementwise_add(), target=cuda_target, enable_device_compile=True)
    capsys.readouterr()
    assert main(["show", run.run_dir, "--no-diff", "--no-source", "--color", "never"]) == 0
    out = capsys.readouterr().out
    (error,) = [line for line in out.splitlines() if 'error: identifier "oops" is undefined' in line]
    assert error.lstrip().startswith(f"{working}(")  # nvcc's own line, not part of one escaped line
    assert "       int lower_trace_marker = oops;" in out.splitlines() and "\\u000a" not in out
