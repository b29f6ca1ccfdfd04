"""TileLang releases without tilelang.instrumentation (0.1.13, 0.1.9): the legacy adapter.

Runs in the venvs scripts/test.sh makes for those versions; skipped elsewhere.
"""

import os
import sys
from collections import Counter

import pytest

tilelang = pytest.importorskip("tilelang")
try:
    import tilelang.instrumentation

    pytest.skip("this TileLang has the instrumentation API (tested by the other modules)", allow_module_level=True)
except ImportError:
    pass

import tvm_ffi  # noqa: E402
from tilelang import tvm  # noqa: E402

import kernels  # noqa: E402
import lower_trace  # noqa: E402
import lower_trace.store.layout  # noqa: E402
from lower_trace.model import KernelStatus, PassStatus  # noqa: E402
from support import pythonpath  # noqa: E402

CUDA = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
KNOWN_PHASES = {
    "semantic_check", "pipeline_cuda", "pipeline_c", "LowerAndLegalize", "OptimizeForTarget",
    "host_device_split", "device_codegen_prep", "host_codegen_prep",
}


def lower_cuda(func, **kwargs):
    with CUDA:
        return tilelang.lower(func, target=CUDA, **kwargs)


def hook_points():
    """Every object the adapter replaces, as TileLang holds it."""
    lower_module = sys.modules["tilelang.engine.lower"]
    points = {
        "tilelang.lower": tilelang.lower,
        "tilelang.engine.lower.lower": lower_module.lower,
    }
    points["JITKernel._compile_and_create_adapter"] = sys.modules["tilelang.jit.kernel"].JITKernel.__dict__["_compile_and_create_adapter"]
    points["tilelang.contrib.nvcc.compile_cuda"] = sys.modules["tilelang.contrib.nvcc"].compile_cuda
    pipeline = sys.modules.get("tilelang.backend.pass_pipeline.pipeline")
    if pipeline is not None:
        points["PassPipeline.lower"] = pipeline.PassPipeline.__dict__["lower"]
    phase = sys.modules.get("tilelang.engine.phase")
    for name in ("LowerAndLegalize", "OptimizeForTarget"):
        if phase is not None and hasattr(phase, name):
            points[f"phase.{name}"] = getattr(phase, name)
            points[f"lower.{name}"] = getattr(lower_module, name)
    return points


def codegen_functions():
    return {n: tvm_ffi.get_global_func(n) for n in tvm_ffi.registry.list_global_func_names() if n.startswith("target.build.tilelang_")}


def test_gemm_every_pass_nested_phases_codegen(tmp_path):
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        artifact = lower_cuda(kernels.gemm())
    trace = lower_trace.load_trace(run.run_dir)
    (kernel,) = trace.kernels
    assert kernel.name == "gemm" and kernel.status is KernelStatus.OK
    assert trace.run.versions["tilelang"] == tilelang.__version__
    # A PassInstrument sees 76-77 passes here; patching Pass.__call__ alone would see fewer.
    assert len(kernel.passes) >= 70
    nested = [p for p in kernel.passes if p.depth > 0]
    assert nested and all(kernel.passes[[q.seq for q in kernel.passes].index(p.parent)].depth == p.depth - 1 for p in nested)
    assert {p.phase for p in kernel.passes} <= KNOWN_PHASES
    assert "pass_fn" not in {p.name for p in kernel.passes}
    (codegen,) = kernel.codegen
    assert codegen.role == "device" and codegen.language == "cuda"
    assert trace.snapshot(codegen.source) == artifact.kernel_source
    for record in kernel.passes:
        assert (record.status is PassStatus.CHANGED) == (trace.snapshot(record.before) != trace.snapshot(record.after))
    # The accumulator's layout, read off this TileLang's Fragment: 128x128 over 128 threads, 128 each.
    (inference,) = [p for p in kernel.passes if p.layouts]
    assert inference.name == "tl.LayoutInference"
    (acc,) = inference.layouts
    assert (acc.buffer, acc.shape, acc.vars, acc.replicate) == ("C_local", (128, 128), ("_i", "_j"), 1)
    held = Counter(eval(acc.thread, {"_i": i, "_j": j}) for i in range(128) for j in range(128))  # // and % as TVM's
    assert sorted(held) == list(range(128)) and set(held.values()) == {128}


def test_disable_restores_every_original_exactly(tmp_path):
    before, functions = hook_points(), codegen_functions()
    lower_trace.enable(mode="html", trace_dir=tmp_path)
    during = hook_points()
    assert all(during[name] is not before[name] for name in before), "every hook point is wrapped while tracing"
    lower_trace.disable()
    after = hook_points()
    assert all(after[name] is before[name] for name in before)
    restored = codegen_functions()
    assert restored.keys() == functions.keys()
    assert all(restored[name].same_as(functions[name]) for name in functions)


def test_a_failing_pass_is_recorded_and_reaches_the_caller(tmp_path):
    with pytest.raises(Exception) as untraced:
        lower_cuda(kernels.nested_parallel())
    with pytest.raises(Exception) as traced, lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        lower_cuda(kernels.nested_parallel())
    assert type(traced.value) is type(untraced.value) and str(traced.value) == str(untraced.value)
    (kernel,) = lower_trace.load_trace(run.run_dir).kernels
    assert kernel.status is KernelStatus.FAILED
    (failed,) = [p for p in kernel.passes if p.status is PassStatus.FAILED]
    assert "Nested parallel" in failed.error.message and failed.before
    # Its reproducer, run in a fresh interpreter, raises the error the untraced compile raised.
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    done = subprocess.run([sys.executable, os.path.join(failed.repro, "repro.py")], capture_output=True, text=True, timeout=300, cwd=str(tmp_path), env=env)
    assert done.returncode != 0 and type(untraced.value).__name__ in done.stderr
    assert str(untraced.value).strip().splitlines()[0] in done.stderr, done.stderr[-1500:]


def test_c_kernel_runs_traced_and_an_edit_takes_effect(run_python, tmp_path):
    script = """
import tilelang, torch, kernels
k = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
a = torch.arange(64, dtype=torch.float32); c = torch.empty(64)
k(a, torch.ones(64), c)
print("RESULT", c[:4].tolist())
"""
    first = run_python(script, env={"TL_LOWER_TRACE": "html"})
    assert "RESULT [1.0, 2.0, 3.0, 4.0]" in first.stdout and "report: file://" in first.stderr
    import importlib.util

    has_builtin = importlib.util.find_spec("tilelang.tools.lower_trace") is not None  # 0.1.13 has one, 0.1.9 not
    assert ("TileLang's built-in lower_trace is off" in first.stderr) == has_builtin
    assert "[lower_trace]" not in first.stdout
    working = tmp_path / "tmp" / "lower_trace_dir" / "user_kernel" / "edits" / "vector_add.c"
    text = working.read_text()
    assert "(A[i] + B[i])" in text
    working.write_text(text.replace("(A[i] + B[i])", "(A[i] - B[i])"))
    patched = run_python(script, env={"TL_LOWER_TRACE": "html"})
    assert "RESULT [-1.0, 0.0, 1.0, 2.0]" in patched.stdout and "PATCHED" in patched.stderr
    untraced = run_python(script)
    assert "RESULT [1.0, 2.0, 3.0, 4.0]" in untraced.stdout
    # A bad edit: gcc runs after lower() returned, still within the traced compile.
    working.write_text(text.replace("(A[i] + B[i]);", "(A[i] + B[i]) oops;"))
    bad = run_python(script, env={"TL_LOWER_TRACE": "html"}, check=False)
    assert bad.returncode != 0 and f"{working}:" in bad.stderr
    assert "the compile failed while using your edit of" in bad.stderr and "1 failed to compile" in bad.stderr
    working.write_text(text.replace("(A[i] + B[i])", "(A[i] - B[i])"))
    runs = lower_trace.store.layout.list_runs(str(tmp_path / "tmp" / "lower_trace_dir"))
    (kernel,) = lower_trace.load_trace(runs[1]).kernels  # the PATCHED run
    assert kernel.codegen[0].edit_status == "PATCHED" and kernel.codegen[0].language == "c"
    assert len(kernel.passes) > 40 and kernel.entry == "jit"


def test_lower_trace_run_and_terminal_mode(tmp_path):
    import subprocess

    from support import lower_trace_cli

    script = tmp_path / "kern.py"
    script.write_text(
        "import tilelang, kernels\nfrom tilelang import tvm\n"
        "t = tvm.target.Target({'kind': 'cuda', 'arch': 'sm_90a'})\n"
        "with t:\n    tilelang.lower(kernels.elementwise_add(), target=t)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    env.update(PYTHONPATH=pythonpath(), NO_COLOR="1")
    proc = subprocess.run([lower_trace_cli(), "run", "--mode", "terminal", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "== lower-trace: kernel k1 elementwise_add" in proc.stderr and "changed  +" in proc.stderr
    assert not (tmp_path / "tmp").exists()


def test_layouts_come_back_exactly_and_replay_says_what_it_cannot_restore(tmp_path):
    """Pass inputs holding layouts, loaded from TVM's JSON, are the same graph with TileLang's own
    placeholders (ground truth: the modules TileLang handed the passes, kept by TVM's own
    PassInstrument). TileLang 0.1.9 does not reflect a fragment's thread range, so nothing can
    bring it back: replay says so when that changes what tl.LowerTileOp makes."""
    import subprocess

    import recorder
    from lower_trace.integrations.reruns.replay import load_module
    from support import lower_trace_cli

    passes, _ = recorder.record(kernels.gemm(), CUDA)
    held = [p for p in passes if recorder.layouts_in(p.before)]
    assert held
    reflected = "thread_range" in dir(recorder.layouts_in(held[0].before)[-1])
    for record in held:
        text = tvm.ir.save_json(record.before)
        restored, note = load_module(text)
        assert tvm.ir.save_json(restored) == text
        assert tvm.ir.structural_hash(restored) == tvm.ir.structural_hash(record.before) != tvm.ir.structural_hash(tvm.ir.load_json(text))
        for mine, real in zip(recorder.layouts_in(restored), recorder.layouts_in(record.before), strict=False):
            assert tvm.ir.structural_equal(mine, real)
        assert ("thread range" in note) == (not reflected)
    with lower_trace.trace(mode="html", trace_dir=tmp_path, replay=True) as run:
        lower_cuda(kernels.gemm())
    (kernel,) = lower_trace.load_trace(run.run_dir).kernels
    syncs = [p.call.expression for p in kernel.passes if p.name == "tl.ThreadSync"]
    assert syncs == ["tilelang.transform.ThreadSync('shared')", "tilelang.transform.ThreadSync('shared.dyn')"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    done = subprocess.run([lower_trace_cli(), "replay", run.run_dir, "-p", "tl.LowerTileOp"], capture_output=True, text=True, env=env, timeout=300)
    truth = next(p.after_text for p in passes if p.name == "tl.LowerTileOp")
    if reflected:
        assert done.returncode == 0 and "identical to the recorded output" in done.stdout, done.stdout + done.stderr
    else:
        # Without its thread range tl.LowerTileOp makes other code, and replay says why.
        assert done.returncode == 1 and "differs from the recorded output" in done.stdout and "thread range" in done.stdout
    assert truth == lower_trace.load_trace(run.run_dir).snapshot(next(p.after for p in kernel.passes if p.name == "tl.LowerTileOp"))


def test_tilelangs_nvcc_call_leaves_the_device_stage_nvcc_reports(tmp_path):
    """tilelang.compile for sm_90a runs nvcc inside codegen: the trace holds ptxas' numbers for the
    very source TileLang compiled, as nvcc --ptxas-options=--verbose gives them (run here)."""
    import re
    import subprocess

    from lower_trace.integrations.nvcc.toolchain import find_tool

    if not find_tool("nvcc"):
        pytest.skip("needs nvcc")
    target = "cuda -arch=sm_90a" if tilelang.__version__ == "0.1.9" else {"kind": "cuda", "arch": "sm_90a"}
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        tilelang.compile(kernels.gemm(M=512, N=512, K=512), target=target)
    trace = lower_trace.load_trace(run.run_dir)
    record = trace.kernels[0].device_stage
    assert record is not None and record.how == "capture" and record.arch == "sm_90a", trace.kernels[0]
    source = tmp_path / record.source_name
    source.write_text(trace.snapshot(record.source))
    command = [*record.command, "--ptxas-options=--verbose", "-o", str(tmp_path / "k.cubin"), str(source)]
    proc = subprocess.run(command, capture_output=True, text=True, check=True)
    text = proc.stdout + proc.stderr
    registers = int(re.search(r"Used (\d+) registers", text).group(1))
    stack, stores, loads = (int(n) for n in re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", text).groups())
    ours = record.function()
    assert (ours.registers, ours.stack, ours.spill_stores, ours.spill_loads) == (registers, stack, stores, loads)


def test_reduce_shrinks_a_failure_to_a_module_that_fails_the_same_way(tmp_path):
    """`lower-trace reduce` on this TileLang: the padded tl.LowerTileOp failure loses its padding,
    and the reduced reproducer, run from another folder in a fresh process, raises the same error."""
    import shutil
    import subprocess

    with lower_trace.trace(mode="html", trace_dir=str(tmp_path / "t")) as run, pytest.raises(Exception) as untraced:
        lower_cuda(kernels.padded_shape_mismatch())
    truth = str(untraced.value).strip().splitlines()[-1]
    cli = os.path.join(os.path.dirname(sys.executable), "lower-trace")
    done = subprocess.run([cli, "reduce", run.run_dir, "-o", str(tmp_path / "r")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    reduced = (tmp_path / "r" / "reduced.py").read_text()
    assert "t = " not in reduced and "C[" not in reduced and "f[" not in reduced, reduced  # the padding
    shutil.copytree(tmp_path / "r", tmp_path / "elsewhere")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    ran = subprocess.run([sys.executable, "repro.py"], cwd=str(tmp_path / "elsewhere"), capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode != 0 and truth.split(": ", 1)[-1] in ran.stderr, ran.stderr[-1000:]


LAUNCHED = """
import os, torch, tilelang, tilelang.language as T, kernels


@tilelang.jit(out_idx=[1], target="c", execution_backend="cython")
def scale(N, factor):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with (T.Kernel(1, is_cpu=True) if kernels._CPU_FLAG else T.Kernel(1)) as _:
            for i in T.serial(N):
                C[i] = A[i] * factor

    return main


print("RESULT", scale(16, 3.0)(torch.arange(16, dtype=torch.float32))[:3].tolist())
"""


def test_launches_are_kept_and_a_launch_rebuilt_from_its_source_or_its_tir_matches(run_python, tmp_path):
    """The legacy adapter joins a kernel object where its wrapped compile returns: its calls are recorded
    as on 0.1.15; repro --launch rebuilds from the @jit call or the PrimFunc (no instrumentation API to hand
    the recorded source to: --rebuild generated says so in one line, exit 2)."""
    import subprocess

    first = run_python(LAUNCHED, env={"TL_LOWER_TRACE": "trace", "TL_LOWER_TRACE_LAUNCHES": "data"})
    assert "RESULT [0.0, 3.0, 6.0]" in first.stdout
    (run,) = lower_trace.store.layout.list_runs(str(tmp_path / "tmp" / "lower_trace_dir"))
    (kernel,) = lower_trace.load_trace(run).kernels
    (launch,) = kernel.launches
    assert [(v.name, v.shape, bool(v.data)) for v in launch.args] == [("A", (16,), True)] and kernel.rebuild.factory["args"] == ["16", "3.0"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")} | {"PYTHONPATH": pythonpath()}
    cases = (("source", 0, "results match (bitwise)"), ("tir", 0, "results match (bitwise)"), ("generated", 2, "has no instrumentation API"))
    for rebuild, code, said in cases:
        folder = tmp_path / f"repro-{rebuild}"
        from lower_trace.cli.main import main

        assert main(["repro", run, "--launch", "k1", "--rebuild", rebuild, "-o", str(folder)]) == 0
        done = subprocess.run([sys.executable, str(folder / "run.py")], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == code and said in done.stdout, done.stdout + done.stderr[-2000:]
