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

import tilelang.language as T  # noqa: E402
from tilelang import tvm  # noqa: E402

import kernels  # noqa: E402
from conftest import lower_trace_cli  # noqa: E402

CUDA = {"kind": "cuda", "arch": "sm_90a"}


def transposed_fragment(N=64):
    """Fails in tl.LayoutInference: one parallel loop reads a fragment as (i, j) and as (j, i)."""

    @T.prim_func
    def transposed_fragment(A: T.Tensor((N, N), "float32"), B: T.Tensor((N, N), "float32")):
        with T.Kernel(1, threads=128) as _:
            frag = T.alloc_fragment((N, N), "float32")
            for i, j in T.Parallel(N, N):
                frag[i, j] = A[i, j]
            for i, j in T.Parallel(N, N):
                B[i, j] = frag[i, j] + frag[j, i]

    return transposed_fragment


def shape_mismatch():
    """Fails in tl.LowerTileOp (a shared 32x48 tile copied to a 64x64 one), whose input holds layouts."""

    @T.prim_func
    def shape_mismatch(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            s = T.alloc_shared((32, 48), "float32")
            T.copy(A[0:32, 0:48], s)
            T.copy(s, B[0:64, 0:64])

    return shape_mismatch


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
    with pytest.raises(Exception):
        with lower_trace.trace(mode="html", trace_dir=tmp_path / "trace") as run:
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
    with pytest.raises(Exception):
        with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
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
    """The GEMM traced with every pass's input kept, and its passes' outputs from an untraced run."""
    with lower_trace.trace(mode="html", trace_dir=tmp_path_factory.mktemp("replay"), replay=True) as run:
        lower(kernels.gemm())
    trace = lower_trace.load_trace(run.run_dir)
    return trace, trace.kernels[0]


def replayable(trace, kernel):
    """Top-level passes Python can build, whose input holds no TileLang layout (repro.holds_layouts)."""
    from lower_trace.integrations.replay import find_factory
    from lower_trace.repro import holds_layouts

    return [p for p in kernel.passes if p.parent is None and p.input and find_factory(p.name) and not holds_layouts(trace.ir_json(p.input))]


def test_replay_in_an_unchanged_environment_is_identical(replay_trace):
    trace, kernel = replay_trace
    assert all(p.input for p in kernel.passes)  # every pass's input was kept
    passes = replayable(trace, kernel)
    changed = [p for p in passes if p.status is PassStatus.CHANGED]
    assert len(changed) >= 10
    for record in changed[:12]:
        done = cli("replay", trace.path, "-p", str(record.seq))
        assert done.returncode == 0 and "identical to the recorded output" in done.stdout, (record.name, done.stdout, done.stderr)
    # A stretch of consecutive buildable passes, rerun one after another.
    seqs = [p.seq for p in passes]
    start = next(i for i in range(len(seqs) - 3) if seqs[i + 3] == seqs[i] + 3)
    done = cli("replay", trace.path, "--from", str(seqs[start]), "--until", str(seqs[start + 3]))
    assert done.returncode == 0 and "(4 passes)" in done.stdout and "identical" in done.stdout, done.stdout + done.stderr


def test_replay_after_a_fix_shows_the_diff(replay_trace, monkeypatch, capsys):
    """A simulated fix: the pass is monkeypatched to also mark every function it returns."""
    from lower_trace.cli import main

    trace, kernel = replay_trace
    record = next(p for p in replayable(trace, kernel) if p.name == "tl.FlattenBuffer")
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
    trace, kernel = replay_trace
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


def test_the_report_shows_the_reproducer_command(browser, tmp_path):
    from report_fixtures import Page

    with pytest.raises(Exception):
        with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
            lower(transposed_fragment())
    (failed,) = [p for p in lower_trace.load_trace(run.run_dir).kernels[0].passes if p.status is PassStatus.FAILED]
    view = Page(browser, os.path.join(run.run_dir, "report.html"))
    try:
        assert view.active() == failed.seq  # the report opens on the failure
        box = view.page.locator("#detail .repro-note")
        assert box.locator("code").inner_text() == f"python {failed.repro}/repro.py"
        view.context.grant_permissions(["clipboard-read", "clipboard-write"])
        box.locator("button.copy").click()
        assert view.page.evaluate("navigator.clipboard.readText()") == f"python {failed.repro}/repro.py"
        assert not view.errors(), view.messages
    finally:
        view.close()
