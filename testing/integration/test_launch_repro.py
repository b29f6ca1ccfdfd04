"""Data mode and `lower-trace repro --launch` on real kernels compiled for target "c" and run on CPU
tensors. The kept tensors are held to torch's own (numpy reads each file with allow_pickle=False); each
repro folder is run in a fresh interpreter that cannot import lower_trace, and its answer is held to
torch's arithmetic: the kernel's outputs against the inputs' sum or product, an edit of the generated
source whose effect on the numbers is known beforehand, a call that raised."""

import json
import os
import subprocess
import sys

import numpy
import pytest

pytest.importorskip("tilelang")
torch = pytest.importorskip("torch")

import tilelang  # noqa: E402

import kernels  # noqa: E402
import lower_trace  # noqa: E402
from lower_trace.cli.main import main  # noqa: E402

# The user's program: a @tilelang.jit factory at two sizes, one at a 2-D int32 shape, an eager-style function
# (its output a T.empty: no factory call to repeat, rebuilt from its generated code only).
PROGRAM = """
import torch
import tilelang
import tilelang.language as T
import lower_trace  # imported by the kernel's file: the repro runs where it is not installed


@tilelang.jit(out_idx=[-1], target="c", execution_backend="cython")
def axpy(N, alpha, dtype=T.float32):
    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), Z: T.Tensor((N,), dtype)):
        with T.Kernel(1) as _:
            for i in T.serial(N):
                Z[i] = X[i] * alpha + Y[i]

    return main


@tilelang.jit(target="c", execution_backend="cython")
def transpose(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "int32"), B: T.Tensor((N, M), "int32")):
        with T.Kernel(1) as _:
            for i, j in T.grid(M, N):
                B[j, i] = A[i, j] * 3 - 1

    return main


@tilelang.jit(target="c", execution_backend="cython")
def negate(X, dtype: T.dtype = T.float32):  # eager style: called with its tensors, its output a T.empty
    N = T.const("N")
    X: T.Tensor((N,), dtype)
    Y = T.empty((N,), dtype)
    with T.Kernel(1) as _:
        for i in T.serial(N):
            Y[i] = -X[i]
    return Y


if __name__ == "__main__":
    torch.manual_seed(0)
    for n in (16, 40):
        x, y = torch.randn(n), torch.randn(n)
        assert torch.allclose(axpy(n, 2.5)(x, y), x * 2.5 + y)
    a = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    b = torch.zeros(4, 3, dtype=torch.int32)
    transpose(3, 4)(a, b)
    assert torch.equal(b, a.T * 3 - 1)
    x = torch.randn(8)
    assert torch.equal(negate(x), -x)
"""


def cli(*args):
    return main([*map(str, args)])


def run_repro(folder, *args):
    """The folder's run.py in a fresh interpreter of this venv, run from the folder, without PYTHONPATH (no
    checkout on sys.path) and with lower_trace unimportable (the venv has it installed: blocked in
    sys.modules); that no lower_trace module was imported is checked at its end."""
    blocker = (
        "import runpy, sys; sys.modules['lower_trace'] = None; "
        f"sys.argv = [{str(folder / 'run.py')!r}, *{list(args)!r}]; "
        "code = 0\ntry:\n    runpy.run_path(sys.argv[0], run_name='__main__')\nexcept SystemExit as exc:\n    code = exc.code\n"
        "assert not [m for m in sys.modules if m.startswith('lower_trace.')], 'lower_trace was imported'\nsys.exit(code)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "PYTHONPATH"))}
    return subprocess.run([sys.executable, "-c", blocker], cwd=str(folder), env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def traced_program(tmp_path_factory):
    """PROGRAM run traced in data mode: (the run's folder, its trace)."""
    root = tmp_path_factory.mktemp("launch_repro")
    (root / "my_kernels.py").write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    env |= {"TL_LOWER_TRACE": "trace", "TL_LOWER_TRACE_DIR": str(root / "traces"), "TL_LOWER_TRACE_LAUNCHES": "data", "TILELANG_DISABLE_CACHE": "1"}
    proc = subprocess.run([sys.executable, "my_kernels.py"], cwd=str(root), env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = (root / "traces" / "my_kernels").glob("run-*")
    return root, run_dir, lower_trace.load_trace(str(run_dir))


def test_data_mode_keeps_each_tensor_as_the_call_had_it(traced_program):
    _, run_dir, trace = traced_program
    assert [(k.name, len(k.launches)) for k in trace.kernels] == [("main", 1)] * 3 + [("negate", 1)]
    small, _, square, _ = trace.kernels
    (launch,) = small.launches
    x, y = (torch.from_numpy(numpy.load(run_dir / v.data, allow_pickle=False)) for v in launch.args)
    returned = next(v for v in launch.after if v.name == "return")
    z = torch.from_numpy(numpy.load(run_dir / returned.data, allow_pickle=False))
    assert torch.allclose(z, x * 2.5 + y) and z.dtype == torch.float32 and z.shape == (16,)
    assert {v.name: v.data for v in launch.after if v.name != "return"} == {v.name: v.data for v in launch.args}  # unchanged: the same file
    a, b_before = (numpy.load(run_dir / v.data, allow_pickle=False) for v in square.launches[0].args)
    b_after = numpy.load(run_dir / next(v.data for v in square.launches[0].after if v.name == "B"), allow_pickle=False)
    assert a.dtype == numpy.int32 and (b_before == 0).all() and (b_after == a.T * 3 - 1).all()


def test_the_rebuild_facts_name_the_factory_call(traced_program):
    root, _, trace = traced_program
    factories = [k.rebuild.factory for k in trace.kernels[:3]]
    assert trace.kernels[3].rebuild.factory == {} and "eager" in trace.kernels[3].rebuild.factory_note
    assert [(f["name"], f["args"], f["file"]) for f in factories] == [
        ("axpy", ["16", "2.5"], str(root / "my_kernels.py")), ("axpy", ["40", "2.5"], str(root / "my_kernels.py")),
        ("transpose", ["3", "4"], str(root / "my_kernels.py")),
    ]
    assert trace.kernels[0].rebuild.compile["out_idx"] == [2] and trace.kernels[0].rebuild.compile["execution_backend"] == "cython"
    assert all(k.rebuild.prim_func and trace.ir_json(k.rebuild.prim_func) for k in trace.kernels)


@pytest.mark.parametrize("rebuild", ["source", "generated"])
def test_each_launch_rebuilt_runs_where_lower_trace_is_not_and_matches(traced_program, tmp_path, rebuild):
    _, run_dir, trace = traced_program
    for kernel in trace.kernels if rebuild == "generated" else trace.kernels[:3]:
        folder = tmp_path / f"{kernel.kernel_id}-{rebuild}"
        assert cli("repro", run_dir, "--launch", kernel.kernel_id, "--rebuild", rebuild, "-o", folder) == 0
        done = run_repro(folder)
        assert done.returncode == 0, done.stdout + done.stderr[-3000:]
        assert "results match (bitwise): 0 of" in done.stdout
        assert ("kernel_source.py" in os.listdir(folder)) == (rebuild == "source")


def test_an_edit_of_the_generated_source_changes_the_numbers_by_what_it_changed(traced_program, tmp_path):
    """alpha 2.5 -> 3.5 in the code that is compiled: every z grows by x, the first where x is not 0."""
    _, run_dir, _ = traced_program
    folder = tmp_path / "edited"
    assert cli("repro", run_dir, "--launch", "k1:1", "--rebuild", "generated", "-o", folder) == 0
    (source,) = folder.glob("generated-*.c")
    text = source.read_text()
    assert text.count("2.500000e+00f") == 1
    source.write_text(text.replace("2.500000e+00f", "3.500000e+00f"))
    x = torch.from_numpy(numpy.load(folder / "inputs" / "in-X.npy", allow_pickle=False))
    done = run_repro(folder)
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    first = int(torch.nonzero(x != 0)[0])
    line = next(line for line in done.stdout.splitlines() if line.strip().startswith("return:"))
    assert line.strip().startswith(f"return: differs at [{first}]:")
    assert f"max abs error {x.abs().max().item():.6g}" in line  # |3.5x + y - (2.5x + y)| = |x|
    assert "results differ (bitwise): 1 of 3 outputs differ" in done.stdout
    within = run_repro(folder, "--atol", str(x.abs().max().item() * 1.01))
    assert within.returncode == 0 and "matches within tolerance" in within.stdout


def test_a_repro_under_another_tilelang_says_so_in_one_line(traced_program, tmp_path):
    _, run_dir, _ = traced_program
    folder = tmp_path / "other"
    assert cli("repro", run_dir, "--launch", "k3", "-o", folder) == 0
    spec = json.loads((folder / "launch.json").read_text())
    spec["versions"]["tilelang"] = "0.0.1"
    (folder / "launch.json").write_text(json.dumps(spec))
    refused = run_repro(folder)
    assert refused.returncode == 2
    assert refused.stdout.strip() == (
        f"this is TileLang {tilelang.__version__}, the launch was recorded with 0.0.1: results may differ for that alone;"
        " rerun with --any-version to run anyway"
    )
    assert run_repro(folder, "--any-version").returncode == 0


def test_what_cannot_be_written_is_one_line_and_writes_nothing(tmp_path, capsys):
    a, b = torch.arange(64, dtype=torch.float32), torch.ones(64)
    with lower_trace.trace(mode="html", trace_dir=tmp_path / "meta", launches="meta") as meta:
        tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")(a, b, torch.empty(64))
    with lower_trace.trace(mode="html", trace_dir=tmp_path / "data", launches="data") as data:
        tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")(a, b, torch.empty(64))
    capsys.readouterr()
    cases = [
        (meta.run_dir, "k1", "source",
         "k1 (vector_add) launch 1 kept no tensors (traced with TL_LOWER_TRACE_LAUNCHES=meta); trace again with TL_LOWER_TRACE_LAUNCHES=data to keep them"),
        (data.run_dir, "k1", "source",
         "k1 (vector_add) launch 1 cannot be rebuilt from its source: it was compiled by tilelang.compile, not by calling a @tilelang.jit function;"
         " use --rebuild generated"),
        (data.run_dir, "k1:2", "generated", "kernel k1 (vector_add) has no launch 2 recorded (recorded: 1); `lower-trace show --launches` lists them"),
    ]
    for run_dir, launch, rebuild, said in cases:
        assert cli("repro", run_dir, "--launch", launch, "--rebuild", rebuild, "-o", tmp_path / "out") == 2
        assert capsys.readouterr().err.strip() == f"lower-trace: error: {said}"
        assert not (tmp_path / "out").exists()
    assert cli("repro", data.run_dir, "--launch", "k1", "--rebuild", "generated", "-o", tmp_path / "out") == 0
    assert run_repro(tmp_path / "out").returncode == 0
    # A folder that holds anything (an earlier repro, the user's edit of it) is never written over.
    (tmp_path / "out" / "generated-device.c").write_text("// my edit")
    capsys.readouterr()
    assert cli("repro", data.run_dir, "--launch", "k1", "--rebuild", "generated", "-o", tmp_path / "out") == 2
    assert "not empty; name a new folder" in capsys.readouterr().err
    assert (tmp_path / "out" / "generated-device.c").read_text() == "// my edit"
    # show --launches names the way this kernel can be rebuilt: no @tilelang.jit call made it, so its generated code.
    assert cli("show", data.run_dir, "--launches") == 0
    assert f"repro: lower-trace repro {data.run_dir} --launch k1:1 --rebuild generated -o repro-k1-1" in capsys.readouterr().out


def test_a_call_that_raised_is_reproduced_raising(tmp_path):
    """A slice with stride 2 (TileLang wants contiguous): kept contiguous, laid out again as it was."""
    a = torch.arange(128, dtype=torch.float32)[::2]
    with lower_trace.trace(mode="html", trace_dir=tmp_path, launches="data") as run:
        add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
        with pytest.raises(ValueError) as raised:
            add(a, torch.ones(64), torch.empty(64))
    (launch,) = lower_trace.load_trace(run.run_dir).kernels[0].launches
    assert launch.error is not None and launch.error.type == "ValueError" and launch.args[0].strides == (2,)
    assert cli("repro", run.run_dir, "--launch", "k1", "--rebuild", "generated", "-o", tmp_path / "out") == 0
    done = run_repro(tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert f"when traced it raised ValueError: {str(raised.value).strip().splitlines()[0]}: the same error" in done.stdout


def test_the_caps_keep_what_fits_and_say_what_did_not(tmp_path, capsys):
    """256 bytes a tensor; 300 a launch: one tensor each; 700 a run: the third launch's first is over it."""
    a, b, c = torch.arange(64, dtype=torch.float32), torch.ones(64), torch.empty(64)
    with lower_trace.trace(mode="html", trace_dir=tmp_path, launches="data", launch_cap="300,700") as run:
        add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
        for _ in range(3):
            add(a, b, c)
    first, second, third = lower_trace.load_trace(run.run_dir).kernels[0].launches
    assert [bool(v.data) for v in first.args] == [True, False, False]
    assert first.args[1].note == "not kept: 256 bytes, over what is left of the launch's 300 bytes (TL_LOWER_TRACE_LAUNCH_CAP)"
    assert [bool(v.data) for v in second.args] == [True, False, False]
    assert not third.args[0].data and third.args[0].note == "not kept: 256 bytes, over what is left of the run's 700 bytes (TL_LOWER_TRACE_LAUNCH_CAP)"
    assert sorted(os.listdir(os.path.join(run.run_dir, "launches"))) == ["k1-1", "k1-2"]
    capsys.readouterr()
    assert cli("repro", run.run_dir, "--launch", "k1:3", "--rebuild", "generated", "-o", tmp_path / "out") == 2  # nothing of it kept: the cap said
    assert capsys.readouterr().err.strip() == (
        "lower-trace: error: k1 (vector_add) launch 3: input A was not kept (not kept: 256 bytes, over what is left of the run's 700 bytes"
        " (TL_LOWER_TRACE_LAUNCH_CAP)); trace again with a larger TL_LOWER_TRACE_LAUNCH_CAP"
    )
    assert not (tmp_path / "out").exists()
    for launch in (first, second):
        kept = numpy.load(os.path.join(run.run_dir, launch.args[0].data), allow_pickle=False)
        assert (kept == a.numpy()).all()
