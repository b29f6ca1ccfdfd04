"""Plain Apache TVM (apache-tvm 0.27, no TileLang): tvm.compile of TIR and Relax modules,
and the PassInstrument any PassContext can carry. Runs in the TVM venv scripts/test.sh makes."""

import os
import sys

import pytest

if "tilelang" in sys.modules:
    pytest.skip("TileLang's bundled TVM is traced through TileLang", allow_module_level=True)
try:
    import tilelang  # noqa: F401

    pytest.skip("TileLang is installed: its TVM is traced through TileLang", allow_module_level=True)
except ImportError:
    pass
tvm = pytest.importorskip("tvm")
if not hasattr(tvm, "compile"):
    pytest.skip("needs TVM with tvm.compile (0.20+)", allow_module_level=True)

import tvm_ffi  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402
from tvm.script import tirx as T  # noqa: E402

import lower_trace  # noqa: E402
from lower_trace.model import KernelStatus, PassStatus  # noqa: E402


@I.ir_module
class AddTIR:
    @T.prim_func
    def add(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
        T.func_attr({"global_symbol": "add", "tir.noalias": True})
        for i in range(64):
            C[i] = A[i] + B[i]


@I.ir_module
class AddRelax:
    @R.function
    def main(x: R.Tensor((4, 4), "float32"), y: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
        z = R.add(x, y)
        return z


def test_tir_module_compiled_with_tvm_compile(tmp_path):
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        executable = tvm.compile(AddTIR, target="c")
    trace = lower_trace.load_trace(run.run_dir)
    (kernel,) = trace.kernels
    assert kernel.name == "add" and kernel.entry == "tvm.compile" and kernel.status is KernelStatus.OK
    assert trace.run.versions["tvm"] == tvm.__version__
    assert len(kernel.passes) > 40
    nested = [p for p in kernel.passes if p.depth > 0]
    assert nested and all(p.parent is not None for p in nested)
    assert {p.phase for p in kernel.passes} == {"tir_pipeline", "host_device_split"}
    top = [p.name for p in kernel.passes if p.depth == 0]
    assert "pipeline" in top and "finalize_host_passes" in top  # TVM's anonymous Sequentials, named
    for record in kernel.passes:
        assert (record.status is PassStatus.CHANGED) == (trace.snapshot(record.before) != trace.snapshot(record.after))
    (codegen,) = kernel.codegen
    assert (codegen.function, codegen.language) == ("target.build.c", "c")
    source = trace.snapshot(codegen.source)
    assert "add" in source and source == executable.mod.inspect_source()


def test_relax_module_and_its_phases(tmp_path):
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        tvm.compile(AddRelax, target="llvm")
    (kernel,) = lower_trace.load_trace(run.run_dir).kernels
    assert kernel.name == "main" and kernel.status is KernelStatus.OK
    phases = {p.phase for p in kernel.passes}
    assert {"relax_pipeline", "tir_pipeline"} <= phases
    assert kernel.passes[0].name == "relax_pipeline" and any(p.parent == 0 for p in kernel.passes)
    (codegen,) = kernel.codegen
    assert codegen.language == "llvm" and codegen.source


def test_a_pass_instrument_any_pass_context_can_carry(tmp_path):
    lower_trace.enable(mode="html", trace_dir=tmp_path)
    lower_trace.disable()  # the instrument switches tracing on by itself
    with tvm.transform.PassContext(instruments=[lower_trace.instrument(mode="html", trace_dir=tmp_path / "i")]):
        tvm.tirx.build(AddTIR, target="llvm")
    run = lower_trace.current_run()
    lower_trace.disable()
    # The run went to the folder the instrument was given (<dir>/<script>/run-...), and only there:
    # the tracing switched off before wrote nothing.
    assert os.path.dirname(os.path.dirname(run.run_dir)) == str(tmp_path / "i")
    assert os.listdir(tmp_path) == ["i"]
    (kernel,) = lower_trace.load_trace(run.run_dir).kernels
    # The PassContext's own compile: entering it opened the session before tvm.tirx.build ran,
    # so the build (traced too while tracing is on) adds no second one inside it.
    assert kernel.entry == "PassContext" and kernel.name == "add" and kernel.status is KernelStatus.OK and len(kernel.passes) > 40


def test_a_failing_pass_is_recorded(tmp_path):
    @tvm.transform.module_pass(opt_level=0, name="BrokenPass")
    def broken(mod, ctx):
        raise ValueError("broken on purpose")

    pipeline = tvm.transform.Sequential([tvm.tirx.transform.RemoveNoOp(), broken], name="my_pipeline")
    with pytest.raises(Exception) as err, tvm.transform.PassContext(instruments=[lower_trace.instrument(mode="html", trace_dir=tmp_path)]):
        pipeline(AddTIR)
    run = lower_trace.current_run()
    lower_trace.disable()
    assert "broken on purpose" in str(err.value)
    (kernel,) = lower_trace.load_trace(run.run_dir).kernels
    assert kernel.status is KernelStatus.FAILED
    by_name = {p.name: p for p in kernel.passes}
    assert by_name["BrokenPass"].status is PassStatus.FAILED and "broken on purpose" in by_name["BrokenPass"].error.message
    assert by_name["my_pipeline"].status is PassStatus.INCOMPLETE  # the Sequential around it
    assert by_name["BrokenPass"].parent == by_name["my_pipeline"].seq


def _run_repro(folder, cwd):
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    return subprocess.run([sys.executable, os.path.join(folder, "repro.py")], capture_output=True, text=True, timeout=300, cwd=str(cwd), env=env)


def test_a_failing_tvm_pass_leaves_a_reproducer(tmp_path):
    """A real TIR pass that fails (BF16StorageLegalize before MakePackedAPI): its reproducer, copied
    away, raises the error the untraced pipeline raises; a Python-only pass's says it cannot."""
    import shutil

    pipeline = tvm.transform.Sequential([tvm.tirx.transform.RemoveNoOp(), tvm.tirx.transform.BF16StorageLegalize()], name="legalize")
    with pytest.raises(Exception) as untraced:
        pipeline(AddTIR)
    truth = str(untraced.value).strip().splitlines()[0]
    with pytest.raises(Exception), tvm.transform.PassContext(instruments=[lower_trace.instrument(mode="html", trace_dir=tmp_path / "t")]):
        pipeline(AddTIR)
    run = lower_trace.current_run()
    lower_trace.disable()
    (kernel,) = lower_trace.load_trace(run.run_dir).kernels
    (failed,) = [p for p in kernel.passes if p.status is PassStatus.FAILED]
    assert failed.name == "tirx.BF16StorageLegalize" and failed.repro
    shutil.copytree(failed.repro, tmp_path / "report")
    done = _run_repro(tmp_path / "report", tmp_path)
    assert done.returncode != 0 and type(untraced.value).__name__ in done.stderr and truth in done.stderr, done.stderr[-1500:]

    @tvm.transform.module_pass(opt_level=0, name="BrokenPass")
    def broken(mod, ctx):
        raise ValueError("broken on purpose")

    with pytest.raises(Exception), tvm.transform.PassContext(instruments=[lower_trace.instrument(mode="html", trace_dir=tmp_path / "b")]):
        broken(AddTIR)
    run = lower_trace.current_run()
    lower_trace.disable()
    (failed,) = [p for p in lower_trace.load_trace(run.run_dir).kernels[0].passes if p.status is PassStatus.FAILED]
    done = _run_repro(failed.repro, tmp_path)
    assert done.returncode != 0 and "no Python factory builds the pass 'BrokenPass'" in done.stderr


def test_reduce_says_in_one_line_that_this_tvm_cannot_and_repro_still_works(tmp_path):
    """apache-tvm 0.27's Python API has no TIR mutators (stmt_functor), which the reducer needs:
    `lower-trace reduce` says so in one line (exit 2) and `lower-trace repro` still gives a
    reproducer that raises the failure."""
    import subprocess

    pipeline = tvm.transform.Sequential([tvm.tirx.transform.RemoveNoOp(), tvm.tirx.transform.BF16StorageLegalize()], name="legalize")
    with pytest.raises(Exception), tvm.transform.PassContext(instruments=[lower_trace.instrument(mode="html", trace_dir=tmp_path / "t")]):
        pipeline(AddTIR)
    run = lower_trace.current_run()
    lower_trace.disable()
    cli = os.path.join(os.path.dirname(sys.executable), "lower-trace")
    done = subprocess.run([cli, "reduce", run.run_dir, "-o", str(tmp_path / "r")], capture_output=True, text=True, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "stmt_functor" in lines[0] and "lower-trace repro" in lines[0], done.stderr
    assert not (tmp_path / "r").exists()
    subprocess.run([cli, "repro", run.run_dir, "-o", str(tmp_path / "bug")], check=True, capture_output=True, timeout=300)
    ran = _run_repro(str(tmp_path / "bug"), tmp_path)
    assert ran.returncode != 0 and "This pass must be called after MakePackedAPI" in ran.stderr


def test_replay_of_a_tvm_compile(tmp_path, monkeypatch, capsys):
    from lower_trace.cli.main import main

    monkeypatch.setenv("TL_LOWER_TRACE_REPLAY", "1")
    with tvm.transform.PassContext(instruments=[lower_trace.instrument(mode="html", trace_dir=tmp_path)]):
        tvm.compile(AddTIR, target="llvm")
    run = lower_trace.current_run()
    lower_trace.disable()
    (kernel,) = lower_trace.load_trace(run.run_dir).kernels
    assert all(p.input for p in kernel.passes)
    record = next(p for p in kernel.passes if p.name == "tirx.MakePackedAPI" and p.status is PassStatus.CHANGED)
    assert main(["replay", run.run_dir, "-p", str(record.seq)]) == 0
    assert "identical to the recorded output" in capsys.readouterr().out


def test_disable_restores_tvm_exactly(tmp_path):
    entries = (tvm.compile, tvm.tirx.build, tvm.relax.build)
    codegen = {n: tvm_ffi.get_global_func(n) for n in tvm_ffi.registry.list_global_func_names() if n.startswith("target.build.")}
    lower_trace.enable(mode="html", trace_dir=tmp_path)
    assert tvm.compile is not entries[0]
    lower_trace.disable()
    assert (tvm.compile, tvm.tirx.build, tvm.relax.build) == entries
    assert all(tvm_ffi.get_global_func(n).same_as(f) for n, f in codegen.items())


def test_timing_shows_where_a_slow_nested_pass_spends_its_time(tmp_path, capsys):
    """Ground truth made on purpose: a Sequential whose nested passes sleep 60 ms and 25 ms. Their
    self time holds what they slept, the Sequential's own (inclusive minus nested) does not, and
    on the time line each nested pass lies inside its parent; show --timing prints the same."""
    import json
    import time

    from lower_trace.analysis.timing import kernel_timing, run_timing
    from lower_trace.cli.main import main
    from lower_trace.render.timing_view import ms_text

    def sleeper(name, seconds):
        @tvm.transform.module_pass(opt_level=0, name=name)
        def sleep(mod, ctx):
            time.sleep(seconds)
            return mod

        return sleep

    outer = tvm.transform.Sequential([sleeper("Sleep60", 0.060), tvm.tirx.transform.RemoveNoOp(), sleeper("Sleep25", 0.025)], name="outer")
    with tvm.transform.PassContext(instruments=[lower_trace.instrument(mode="html", trace_dir=tmp_path)]):
        outer(AddTIR)
    run = lower_trace.current_run()
    lower_trace.disable()
    (kernel,) = lower_trace.load_trace(run.run_dir).kernels
    times = {t.name: t for t in kernel_timing(kernel)}
    slow, quick, seq = times["Sleep60"], times["Sleep25"], times["outer"]
    assert 60 <= slow.self_ms < 200 and 25 <= quick.self_ms < 150
    assert seq.ms >= slow.ms + quick.ms and seq.self_ms < 25  # its own time is not what its passes slept
    for child in (slow, quick):
        assert child.depth == seq.depth + 1 and seq.at <= child.at and child.at + child.ms <= seq.at + seq.ms + 0.01
    assert slow.at + slow.ms <= quick.at  # in the order they ran
    assert [t.name for t in run_timing([kernel])][:2] == ["Sleep60", "Sleep25"]

    capsys.readouterr()
    assert main(["show", "--timing", "--json", run.run_dir]) == 0
    shown = {s["name"]: s for s in json.loads(capsys.readouterr().out)["kernels"][0]["timing"]}
    assert shown["Sleep60"]["self_ms"] == slow.self_ms and shown["outer"]["ms"] == seq.ms
    assert main(["show", "--timing", run.run_dir]) == 0
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if line.split()[1:2] == ["Sleep60"])
    assert row.split()[2:4] == [ms_text(slow.ms), ms_text(slow.self_ms)] and row.index("Sleep60") > table.splitlines()[2].index("outer")
    assert "slowest (self time): Sleep60" in table
