"""Edit the generated source and rerun, end to end: real kernels compiled (gcc for
target "c", nvcc for CUDA) and executed, each run a fresh interpreter as a user runs it."""

import glob
import json
import os
import shutil
import subprocess

import pytest

from conftest import lower_trace_cli
from lower_trace.override import EditStatus, EditStore

TWO_KERNELS = """
import sys
import tilelang, torch
import kernels
factor = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
scale = tilelang.compile(kernels.scale_c(factor=factor), target="c", execution_backend="cython")
a = torch.arange(64, dtype=torch.float32)
c, d = torch.empty(64), torch.empty(64)
add(a, torch.ones(64), c)
scale(a, d)
print("ADD", c[:4].tolist())
print("SCALE", d[:4].tolist())
"""


@pytest.fixture
def user(run_python, tmp_path):
    """Run the two-kernel script traced or untraced, with TileLang's kernel cache on."""
    cache = {"TILELANG_CACHE_DIR": str(tmp_path / "kernel-cache"), "TILELANG_DISABLE_CACHE": "0"}

    def run(*args, traced=True, check=True):
        env = dict(cache, TL_LOWER_TRACE="html") if traced else dict(cache)
        proc = run_python(TWO_KERNELS, env=env, args=args, check=check)
        lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line.startswith(("ADD", "SCALE")))
        return proc, lines

    return run


def edits_dir(tmp_path):
    return tmp_path / "tmp" / "lower_trace_dir" / "user_kernel" / "edits"


def replace_in(path, old, new):
    text = path.read_text()
    assert old in text, (old, text)
    path.write_text(text.replace(old, new))


def latest_codegen(tmp_path):
    import lower_trace

    trace = lower_trace.load_trace(str(tmp_path / "tmp" / "lower_trace_dir"))
    return {k.name: k.codegen[0] for k in trace.kernels}, trace


def test_edit_two_kernels_rerun_and_the_result_follows(user, tmp_path):
    first, out = user()
    assert out == {"ADD": "[1.0, 2.0, 3.0, 4.0]", "SCALE": "[0.0, 3.0, 6.0, 9.0]"}
    folder = edits_dir(tmp_path)
    add, scale = folder / "vector_add.c", folder / "scale.c"
    assert f"vector_add: generated source saved to {os.path.relpath(add, tmp_path)}" in first.stderr
    # Each kernel has its own file, holding exactly what was compiled.
    steps, trace = latest_codegen(tmp_path)
    assert add.read_text() == trace.snapshot(steps["vector_add"].source)
    assert scale.read_text() == trace.snapshot(steps["scale"].source)
    assert steps["vector_add"].edit_status == "SYNCED"

    replace_in(add, "C[i] = (A[i] + B[i]);", "C[i] = (A[i] - B[i]);")
    replace_in(scale, "3.000000e+00f", "1.000000e+01f")
    patched, out = user()
    assert out == {"ADD": "[-1.0, 0.0, 1.0, 2.0]", "SCALE": "[0.0, 10.0, 20.0, 30.0]"}
    assert "vector_add: PATCHED, compiling your edit of" in patched.stderr
    assert "scale: PATCHED" in patched.stderr
    steps, trace = latest_codegen(tmp_path)
    for name in ("vector_add", "scale"):
        step = steps[name]
        assert step.edit_status == "PATCHED" and step.edit_path.endswith(f"edits/{name}.c")
        assert trace.snapshot(step.source) == (folder / f"{name}.c").read_text()  # what was compiled
        assert "C[i]" in trace.snapshot(step.generated) and step.generated != step.source

    # Untraced, with the kernel cache on, twice (a cache hit the second time): the originals.
    for _ in range(2):
        _, out = user(traced=False)
        assert out == {"ADD": "[1.0, 2.0, 3.0, 4.0]", "SCALE": "[0.0, 3.0, 6.0, 9.0]"}
    # ... and a cached original never masks the edit on a traced rerun.
    _, out = user()
    assert out == {"ADD": "[-1.0, 0.0, 1.0, 2.0]", "SCALE": "[0.0, 10.0, 20.0, 30.0]"}


def test_conflict_keeps_the_edit_and_says_how_to_bring_it_back(user, tmp_path):
    user()
    folder = edits_dir(tmp_path)
    scale = folder / "scale.c"
    replace_in(scale, "3.000000e+00f", "1.000000e+01f")
    edited = scale.read_text()
    conflict, out = user("5.0")  # the kernel changed: codegen differs from the baseline
    assert out["SCALE"] == "[0.0, 5.0, 10.0, 15.0]"  # the new codegen is compiled
    (backup,) = glob.glob(str(folder / "scale.c.*.edit"))
    (base,) = glob.glob(str(folder / "scale.c.*.base"))
    assert open(backup).read() == edited  # the edit, preserved
    assert "3.000000e+00f" in open(base).read()  # what it was made against
    assert "5.000000e+00f" in scale.read_text()  # the working copy holds the new codegen
    message = next(line for line in conflict.stderr.splitlines() if "CONFLICT" in line)
    assert os.path.relpath(backup, tmp_path) in message
    assert f"diff -u {os.path.relpath(base, tmp_path)} {os.path.relpath(backup, tmp_path)} | patch" in message
    steps, _ = latest_codegen(tmp_path)
    assert steps["scale"].edit_status == "CONFLICT" and steps["scale"].edit_backup == backup
    assert steps["vector_add"].edit_status == "SYNCED"
    # Changed again with no edit in between: the working copy is simply refreshed.
    regenerated, out = user("7.0")
    assert out["SCALE"] == "[0.0, 7.0, 14.0, 21.0]"
    assert "scale: REGENERATED" in regenerated.stderr and "7.000000e+00f" in scale.read_text()
    assert len(glob.glob(str(folder / "scale.c.*.edit"))) == 1


def test_a_bad_edit_shows_the_compiler_error_in_the_users_file_and_is_kept(user, tmp_path):
    user()
    add = edits_dir(tmp_path) / "vector_add.c"
    replace_in(add, "C[i] = (A[i] + B[i]);", "C[i] = (A[i] + B[i]) oops;")
    broken = add.read_text()
    proc, _ = user(check=False)
    assert proc.returncode != 0
    line = next(n for n, text in enumerate(broken.splitlines(), 1) if "oops" in text)
    assert f"{add}:{line}:" in proc.stderr  # gcc points into the working copy
    assert "the compile failed while using your edit of" in proc.stderr and "lower-trace edits --reset vector_add" in proc.stderr
    assert add.read_text() == broken
    # Fixing it is all it takes.
    add.write_text(broken.replace(" oops", ""))
    _, out = user()
    assert out["ADD"] == "[1.0, 2.0, 3.0, 4.0]"


def test_edits_command_lists_and_resets(user, tmp_path):
    user()
    add = edits_dir(tmp_path) / "vector_add.c"
    replace_in(add, "C[i] = (A[i] + B[i]);", "C[i] = (A[i] * B[i]);")
    cli = lower_trace_cli()
    listing = subprocess.run([cli, "edits"], cwd=tmp_path, capture_output=True, text=True)
    assert listing.returncode == 0
    rows = {line.split()[0]: line.split() for line in listing.stdout.splitlines()[1:]}
    assert rows["vector_add.c"][1:4] == ["vector_add", "device", "edited"]
    assert rows["scale.c"][1:5] == ["scale", "device", "as", "generated"]
    assert "C:[64]:float32" in rows["scale.c"][-1]  # the signature tells same-named kernels apart
    reset = subprocess.run([cli, "edits", "--reset", "vector_add"], cwd=tmp_path, capture_output=True, text=True)
    assert reset.returncode == 0 and "your edit is saved in" in reset.stdout
    (backup,) = glob.glob(str(edits_dir(tmp_path) / "vector_add.c.*.edit"))
    assert "(A[i] * B[i])" in open(backup).read()
    _, out = user()
    assert out["ADD"] == "[1.0, 2.0, 3.0, 4.0]"
    missing = subprocess.run([cli, "edits", "--reset", "nope"], cwd=tmp_path, capture_output=True, text=True)
    assert missing.returncode == 2 and "no working copy for 'nope'; kernels: scale, vector_add" in missing.stderr


def test_cuda_edit_reaches_nvcc(tmp_path, lower_cuda, tilelang, cuda_target):
    """The working .cu gets an #error; nvcc compiling it must report the marker, in the user's file."""
    import kernels
    import lower_trace

    if not shutil.which("nvcc") and not os.path.exists("/usr/local/bin/nvcc"):
        pytest.skip("nvcc is not installed")
    os.environ["PATH"] = os.environ.get("PATH", "") + ":/usr/local/bin"
    with lower_trace.trace(mode="html", trace_dir=tmp_path):
        lower_cuda(kernels.elementwise_add())
    # <dir>/<script>/edits/: the script here is the test runner.
    (working,) = map(type(tmp_path), glob.glob(str(tmp_path / "*" / "edits" / "elementwise_add.cu")))
    source = working.read_text()
    marker = "#error LOWER_TRACE_EDIT_MARKER"
    working.write_text(source.replace('extern "C" __global__ void __launch_bounds__', marker + '\nextern "C" __global__ void __launch_bounds__', 1))
    with pytest.raises(Exception) as err:
        with lower_trace.trace(mode="html", trace_dir=tmp_path):
            with cuda_target:
                tilelang.lower(kernels.elementwise_add(), target=cuda_target, enable_device_compile=True)
    text = str(err.value)
    assert f"{working}:" in text and "error: #error LOWER_TRACE_EDIT_MARKER" in text
    # With the edit undone, nvcc compiles the kernel.
    working.write_text(source)
    with lower_trace.trace(mode="html", trace_dir=tmp_path):
        with cuda_target:
            artifact = tilelang.lower(kernels.elementwise_add(), target=cuda_target, enable_device_compile=True)
    assert "__global__" in artifact.kernel_source


def test_three_way_decisions_on_files(tmp_path):
    store = EditStore(str(tmp_path))
    first = store.resolve("gemm", "sig-a", "device", "cuda", "v1")
    assert first.status is EditStatus.SYNCED and first.created and first.compile_text == "v1"
    assert store.resolve("gemm", "sig-a", "device", "cuda", "v1").status is EditStatus.SYNCED
    path = first.path
    open(path, "w").write("mine")
    patched = store.resolve("gemm", "sig-a", "device", "cuda", "v1")
    assert (patched.status, patched.compile_text) == (EditStatus.PATCHED, "mine")
    regenerated = store.resolve("gemm", "sig-b", "device", "cuda", "v1")  # other shapes: its own file
    assert regenerated.path != path and os.path.basename(regenerated.path).startswith("gemm-")
    conflict = store.resolve("gemm", "sig-a", "device", "cuda", "v2")
    assert conflict.status is EditStatus.CONFLICT and conflict.compile_text == "v2"
    assert open(conflict.backup).read() == "mine" and open(conflict.backup_base).read() == "v1"
    assert open(path).read() == "v2"
    open(path, "w").write("v3")  # the user's edit equals what codegen produces next
    assert store.resolve("gemm", "sig-a", "device", "cuda", "v3").status is EditStatus.SYNCED
    assert store.resolve("gemm", "sig-a", "device", "cuda", "v4").status is EditStatus.REGENERATED
    os.remove(path)  # a deleted working copy is recreated
    assert store.resolve("gemm", "sig-a", "device", "cuda", "v4").created
    host = store.resolve("gemm", "sig-a", "host", "c", "h1")
    assert os.path.basename(host.path) == "gemm.host.c"
    index = json.load(open(tmp_path / "edits" / "index.json"))
    assert sorted(entry["file"] for entry in index.values()) == sorted(["gemm.cu", os.path.basename(regenerated.path), "gemm.host.c"])


def test_terminal_mode_says_edits_are_not_used_and_still_traces(user, run_python, tmp_path):
    user()
    replace_in(edits_dir(tmp_path) / "vector_add.c", "C[i] = (A[i] + B[i]);", "C[i] = (A[i] - B[i]);")
    proc = run_python(TWO_KERNELS, env={"TL_LOWER_TRACE": "terminal", "NO_COLOR": "1"})
    assert "ADD [1.0, 2.0, 3.0, 4.0]" in proc.stdout  # terminal mode compiles TileLang's own source
    assert "edited working copies in" in proc.stderr and "are not used: terminal mode writes nothing" in proc.stderr
    assert "== lower-trace: kernel k1 vector_add" in proc.stderr and "could not switch tracing on" not in proc.stderr
    assert "[lower_trace]" not in proc.stdout  # TileLang's own tracer did not start in our place
