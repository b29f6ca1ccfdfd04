"""Reproducers and replay on real TileLang kernels (lower_trace/repro.py, lower-trace repro / replay).

Ground truth comes from outside the reproducer: the error an untraced compile of the same
kernel raises, and the IR a pass made inside the real pipeline. Reproducers run in a fresh interpreter,
copied away from the user's program, with no lower-trace in the environment's way.
"""

import os
import shutil
import signal
import subprocess
import sys

import pytest

import lower_trace
from lower_trace.model import PassStatus

tilelang = pytest.importorskip("tilelang")

from tilelang import tvm  # noqa: E402

import kernels  # noqa: E402
from support import lower_trace_cli  # noqa: E402

CUDA = {"kind": "cuda", "arch": "sm_90a"}


transposed_fragment, shape_mismatch = kernels.transposed_fragment, kernels.shape_mismatch


def lower(func, config=None):
    target = tvm.target.Target(CUDA)
    with tvm.transform.PassContext(config=config or {}), target:
        return tilelang.lower(func, target=target)


def untraced_error(func):
    with pytest.raises(Exception) as caught:
        lower(func)
    return type(caught.value).__name__, str(caught.value).strip().splitlines()[0]


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}


def run_script(path, cwd):
    return subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=300, cwd=cwd, env=clean_env())


def cli(*args, env=None):
    return subprocess.run([lower_trace_cli(), *args], capture_output=True, text=True, timeout=300, env=env or clean_env())


@pytest.mark.parametrize(
    "make, failing", [(transposed_fragment, "tl.LayoutInference"), (kernels.nested_parallel, "NestedLoopChecker"), (shape_mismatch, "tl.LowerTileOp")]
)
def test_a_failed_pass_leaves_a_reproducer_that_raises_the_same_error(tmp_path, capfd, make, failing):
    truth_type, truth_line = untraced_error(make())
    with pytest.raises(Exception), lower_trace.trace(mode="html", trace_dir=tmp_path / "trace") as run:
        lower(make())
    (kernel,) = lower_trace.load_trace(run.run_dir).kernels
    (failed,) = [p for p in kernel.passes if p.status is PassStatus.FAILED]
    assert failed.name == failing and failed.repro and failed.input
    script = os.path.join(failed.repro, "repro.py")
    assert f"reproduce it without your program: python {script}" in capfd.readouterr().err
    # Copied away from the trace and the program, run in a fresh interpreter elsewhere.
    copy = tmp_path / "elsewhere" / "bug-report"
    shutil.copytree(failed.repro, copy)
    shutil.rmtree(tmp_path / "trace")
    done = run_script(str(copy / "repro.py"), cwd=str(tmp_path))
    assert done.returncode != 0
    last = [line for line in done.stderr.splitlines() if line.strip()][-1]
    assert truth_type in done.stderr and truth_line in done.stderr, done.stderr[-2000:]
    assert "lower_trace" not in (copy / "repro.py").read_text() and "lower_trace" not in done.stderr
    assert last  # the traceback ends in the compiler's error, as the untraced compile's did


def test_show_and_repro_command_name_the_reproducer(tmp_path):
    with pytest.raises(Exception), lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        lower(transposed_fragment())
    shown = cli("show", run.run_dir, "--color", "never")
    (failed,) = [p for p in lower_trace.load_trace(run.run_dir).kernels[0].passes if p.status is PassStatus.FAILED]
    assert f"reproduce it without your program: python {os.path.join(failed.repro, 'repro.py')}" in shown.stdout
    out = tmp_path / "report-this"
    done = cli("repro", run.run_dir, "-o", str(out))
    assert done.returncode == 0 and f"python {out / 'repro.py'}" in done.stdout
    assert (out / "input.json").read_text() == lower_trace.load_trace(run.run_dir).ir_json(failed.input)
    replayed = cli("replay", run.run_dir, "-p", str(failed.seq))
    assert replayed.returncode == 0 and "fails as recorded" in replayed.stdout and "frag: (j, i) and (i, j)" in replayed.stdout
    # Bad input: one line each, exit 2 -- a pass whose input was not kept, options that contradict,
    # a stretch given backwards, a codegen step, a file where the folder should go.
    for args, says in (
        (("replay", run.run_dir, "-p", "3"), "TL_LOWER_TRACE_REPLAY=1"),
        (("replay", run.run_dir, "-p", "3", "--from", "2"), "one or the other"),
        (("replay", run.run_dir, "--from", "9", "--until", "4"), "swap them"),
        (("repro", run.run_dir, "-p", "4", "-o", str(tmp_path / "x")), "was not kept"),
        (("repro", run.run_dir, "-o", str(out / "repro.py")), "a file is there"),
    ):
        done = cli(*args)
        assert done.returncode == 2 and says in done.stderr and len(done.stderr.splitlines()) == 1, (args, done.stderr)


@pytest.fixture(scope="module")
def replay_trace(tmp_path_factory):
    """The GEMM traced with every pass's input kept, and, as ground truth, what each of its passes
    made in an untraced compile, kept by an independent recorder (TVM's own PassInstrument)."""
    import recorder

    with lower_trace.trace(mode="html", trace_dir=tmp_path_factory.mktemp("replay"), replay=True) as run:
        lower(kernels.gemm())
    trace = lower_trace.load_trace(run.run_dir)
    truth, _ = recorder.record(kernels.gemm(), tvm.target.Target(CUDA))
    return trace, trace.kernels[0], truth


def test_every_top_level_pass_replays_identically(replay_trace):
    """Each pass the pipeline ran from Python, rebuilt (with the arguments it was built with:
    ThreadSync("shared") and ThreadSync("shared.dyn"), MergeSharedMemoryAllocations(...), BindTarget(target))
    and rerun alone on its recorded input -- layouts restored -- makes what it made in the real pipeline."""
    from lower_trace.integrations.reruns import replay

    trace, kernel, truth = replay_trace
    top = [p for p in kernel.passes if p.depth == 0]
    real = [p for p in truth if p.depth == 0]
    assert len(top) == len(real) and all(a.name == b.name for a, b in zip(top, real, strict=False) if b.name != "pass_fn")  # pass_fn: named after its factory
    assert all(p.input for p in kernel.passes)  # every pass's input was kept
    unbuildable = {}
    for record, made in zip(top, real, strict=False):
        build = replay.pass_build(record.name, record.call)
        if isinstance(build, str):
            unbuildable[record.seq] = build
            continue
        mod, note = replay.load_module(trace.ir_json(record.input))
        assert note == ""
        now = replay.print_module(replay.run_pass(build, mod, kernel.context))
        assert now == made.after_text, (record.seq, record.name, build.expression)
    # What cannot be rebuilt says why in one line: a filter made at run time by a lambda.
    assert list(unbuildable.values()) == [
        next(b for b in unbuildable.values() if "Filter" in b and "made while the compile ran" in b and "\n" not in b)
    ]
    syncs = [p.call.expression for p in top if p.name == "tl.ThreadSync"]
    assert syncs == ["tilelang.transform.ThreadSync('shared')", "tilelang.transform.ThreadSync('shared.dyn')"]
    assert any(p.name == "tl.InjectFenceProxy" for p in top) and any(p.name == "tl.ProducerConsumerWarpSpecialized" for p in top)


def test_replay_of_layout_passes_and_of_passes_with_arguments_is_identical(replay_trace):
    """The command as a user types it, on the passes that used to fail: tl.LowerTileOp (its input holds
    layouts), the second tl.ThreadSync (built with "shared.dyn"), and a stretch across both kinds."""
    trace, kernel, _ = replay_trace
    sync = [p for p in kernel.passes if p.name == "tl.ThreadSync"][1]
    for key in ("tl.LowerTileOp", str(sync.seq), "tl.MergeSharedMemoryAllocations"):
        done = cli("replay", trace.path, "-p", key)
        assert done.returncode == 0 and "identical to the recorded output" in done.stdout, (key, done.stdout, done.stderr)
    done = cli("replay", trace.path, "--from", "tl.LayoutInference", "--until", "tl.LowerTileOp")
    assert done.returncode == 0 and "identical" in done.stdout, done.stdout + done.stderr


def test_replay_after_a_fix_shows_the_diff(replay_trace, monkeypatch, capsys):
    """A simulated fix: the pass is monkeypatched to also mark every function it returns."""
    from lower_trace.cli.main import main

    trace, kernel, _ = replay_trace
    record = next(p for p in kernel.passes if p.name == "tl.FlattenBuffer")
    real = tilelang.transform.FlattenBuffer

    def fixed():
        @tvm.transform.module_pass(opt_level=0, name="tl.FlattenBuffer")
        def run(mod, ctx):
            mod = real()(mod)
            return tvm.IRModule({gv: f.with_attr("simulated_fix", 1) for gv, f in mod.functions.items()})

        return run

    monkeypatch.setattr(tilelang.transform, "FlattenBuffer", fixed)
    assert main(["replay", trace.path, "-p", str(record.seq), "--color", "never"]) == 1
    out = capsys.readouterr().out
    assert "differs from the recorded output (recorded -> now)" in out
    added = [line for line in out.splitlines() if line.lstrip().startswith("+") and "simulated_fix" in line]
    assert added, out


def test_a_pass_that_kills_the_process_still_leaves_a_reproducer(replay_trace, tmp_path):
    """os.abort() inside tir.StorageRewrite, traced with TL_LOWER_TRACE_REPLAY=1: the process dies,
    the trace says which pass it died in, and its input (on disk before the pass ran) reproduces."""
    trace, kernel, _ = replay_trace
    victim = next(p for p in kernel.passes if p.name == "tir.StorageRewrite")
    script = tmp_path / "crashing.py"
    script.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {os.path.dirname(kernels.__file__)!r})\n"
        "import tilelang, tilelang.transform, kernels\n"
        "from tilelang import tvm\n"
        "def crashing():\n"
        "    @tvm.transform.module_pass(opt_level=0, name='tir.StorageRewrite')\n"
        "    def crash(mod, ctx):\n"
        "        os.abort()\n"
        "    return crash\n"
        "tilelang.transform.StorageRewrite = crashing\n"
        f"target = tvm.target.Target({CUDA!r})\n"
        "with target:\n"
        "    tilelang.lower(kernels.gemm(), target=target)\n"
    )
    env = {**clean_env(), "TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_REPLAY": "1", "TL_LOWER_TRACE_DIR": str(tmp_path / "trace")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=str(tmp_path))
    assert done.returncode == -signal.SIGABRT, done.stderr[-2000:]
    crashed_trace = lower_trace.load_trace(str(tmp_path / "trace"))
    (crashed_kernel,) = crashed_trace.kernels
    crashed = [p for p in crashed_kernel.passes if p.crashed]
    assert [p.name for p in crashed] == ["tir.StorageRewrite"] and crashed[0].seq == victim.seq
    # What it received is what the same pass received in the run that did not crash.
    assert crashed_trace.ir_json(crashed[0].input) == trace.ir_json(victim.input)
    out = tmp_path / "crash-repro"
    written = cli("repro", crashed_trace.path, "-o", str(out))
    assert written.returncode == 0, written.stderr
    rerun = run_script(str(out / "repro.py"), cwd=str(tmp_path))
    # The real pass (not the crashing stand-in) makes what it made in the pipeline that did not crash.
    assert rerun.returncode == 0 and "the passes ran without an error" in rerun.stderr
    assert rerun.stdout.rstrip("\n") == trace.snapshot(victim.after).rstrip("\n")


def test_repro_of_a_lower_tile_op_failure_raises_the_recorded_error(tmp_path):
    """tl.LowerTileOp fails on a kernel whose input holds layouts: `lower-trace repro -o` writes a script
    that raises the error the untraced compile raised (it raised another one before: the layouts'
    placeholders came back as other variables), and --from an earlier pass works when its input was kept."""
    truth_type, truth_line = untraced_error(shape_mismatch())
    for replay, extra in ((False, ()), (True, ("--from", "tl.LayoutInference"))):
        with pytest.raises(Exception), lower_trace.trace(mode="html", trace_dir=tmp_path / f"trace-{replay}", replay=replay) as run:
            lower(shape_mismatch())
        out = tmp_path / f"report-{replay}"
        done = cli("repro", run.run_dir, "-o", str(out), *extra)
        assert done.returncode == 0, done.stderr
        script = (out / "repro.py").read_text()
        assert "tl.LowerTileOp" in script and ("tilelang.transform.LayoutInference()" in script) == replay
        rerun = run_script(str(out / "repro.py"), cwd=str(tmp_path))
        assert rerun.returncode != 0 and truth_type in rerun.stderr and truth_line in rerun.stderr, rerun.stderr[-1500:]
        assert "symbolic output extent" not in rerun.stderr
        replayed = cli("replay", run.run_dir, "-p", "tl.LowerTileOp")
        assert replayed.returncode == 0 and "fails as recorded" in replayed.stdout, replayed.stdout + replayed.stderr
