"""Nothing false after a crash: a process that dies right after a compile returned leaves that
compile whole on disk, and regress never compares a kernel a dead process cut short as if it
were whole. The deaths are real (a child process that sends itself SIGSEGV, as a kernel that
crashes at launch does); the truth is the child's own PassInstrument recorder (written to disk
pass by pass, unbuffered, with no lower-trace code involved) and TileLang's own lowering."""

import json
import os
import signal
import subprocess
import sys

import pytest

pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")

import lower_trace
from shared_runs import clean_env
from support import lower_trace_cli, pythonpath

TESTING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Lowers the GEMM traced, with TVM's own PassInstrument on the PassContext writing each pass's
# name as it starts straight to a file (os.write: nothing buffered), then dies as a crashing launch does.
DIES_AFTER_LOWER = f"""
import os, signal, sys
sys.path.insert(0, {TESTING!r})
import kernels, tilelang
from tilelang import tvm

names = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)

@tvm.ir.instrument.pass_instrument
class Recorder:
    def run_before_pass(self, mod, info):
        os.write(names, (str(info.name) + "\\n").encode())

target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
with tvm.transform.PassContext(opt_level=3, instruments=[Recorder()]), target:
    tilelang.lower(kernels.gemm(), target=target)
os.kill(os.getpid(), signal.SIGSEGV)
"""


def test_a_compile_that_returned_is_whole_when_the_process_dies_next(tmp_path):
    names, trace_dir = tmp_path / "passes.txt", tmp_path / "trace"
    script = tmp_path / "dies.py"
    script.write_text(DIES_AFTER_LOWER)
    env = {**clean_env(), "TL_LOWER_TRACE": "trace", "TL_LOWER_TRACE_DIR": str(trace_dir), "TILELANG_DISABLE_CACHE": "1"}
    child = subprocess.run([sys.executable, str(script), str(names)], env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert child.returncode == -signal.SIGSEGV, child.stderr[-2000:]
    recorded = names.read_text().splitlines()
    assert len(recorded) > 50  # the GEMM's whole pipeline ran
    (run,) = [os.path.join(root) for root, _, files in os.walk(trace_dir) if "trace.jsonl" in files]
    (kernel,) = lower_trace.load_trace(run).kernels
    assert kernel.status.value == "ok"
    # Every pass TVM ran is in the trace, in the order they started (nested ones after their parent).
    finished = [p.name for p in sorted(kernel.passes, key=lambda p: p.seq)]
    assert len(finished) == len(recorded), (len(finished), len(recorded))
    named = [(mine, theirs) for mine, theirs in zip(finished, recorded, strict=True) if theirs]  # anonymous passes: lower-trace names them
    assert all(mine == theirs for mine, theirs in named if "." in theirs), [pair for pair in named if pair[0] != pair[1]][:5]
    assert kernel.codegen, "the generated source, the last step of the compile, is on disk too"


# The regress corpus: three kernels (testing/kernels.py); the head side dies where DIE says.
CORPUS = f"""
import os, signal, sys
sys.path.insert(0, {TESTING!r})
import kernels, tilelang, tilelang.transform
from tilelang import tvm

head = os.environ.get("TL_LOWER_TRACE_DIR", "").rstrip("/").endswith("head")
where = os.environ.get("DIE", "")
if head and where == "during":
    real = tilelang.transform.StorageRewrite

    @tvm.transform.module_pass(opt_level=0, name="test.Crash")
    def crash(mod, ctx):
        os.kill(os.getpid(), signal.SIGSEGV)

    tilelang.transform.StorageRewrite = lambda: crash
target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
for build in (lambda: kernels.gemm(), lambda: kernels.elementwise_add(M=16, N=16, block_M=8, block_N=8), lambda: kernels.row_sum()):
    with target:
        tilelang.lower(build(), target=target)
if head and where == "after":
    os.kill(os.getpid(), signal.SIGSEGV)
"""
HARMLESS = "tl.disable_out_of_bound_warning=true"  # a config that changes no code


def regress(folder, die, *args):
    (folder / "corpus.py").write_text(CORPUS)
    env = {**clean_env(), "PYTHONPATH": pythonpath(), "DIE": die}
    return subprocess.run(
        [lower_trace_cli(), "regress", "--dir", str(folder / "out"), "--head-config", HARMLESS, *args, "--", "python", "corpus.py"],
        cwd=str(folder), env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def test_a_head_that_dies_mid_compile_never_reads_as_code_differs(tmp_path):
    proc = regress(tmp_path, "during", "--json")
    assert proc.returncode == 1, proc.stderr[-2000:]
    found = json.loads(proc.stdout)
    assert found["head"]["exit"] == -signal.SIGSEGV
    verdicts = {k["kernel"].split()[-1]: k for k in found["kernels"]}
    assert set(verdicts) == {"gemm", "elementwise_add", "row_sum"}
    assert all(k["verdict"] == "died on head" for k in verdicts.values()), [(n, k["verdict"]) for n, k in verdicts.items()]
    # The gemm: where head's trace ends, and how its process ended; the others: never compiled.
    assert "during this compile" in verdicts["gemm"]["evidence"][0] and "SIGSEGV" in verdicts["gemm"]["evidence"][0]
    assert all("never compiled on head" in verdicts[name]["evidence"][0] for name in ("elementwise_add", "row_sum"))


def test_a_side_that_died_after_its_compiles_compares_them_and_fails_the_gate(tmp_path):
    proc = regress(tmp_path, "after")
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    # The compiles are whole on both sides, so they compare as what they are: the same code.
    assert "3 kernels: 3 identical" in proc.stdout, proc.stdout
    assert "head: " in proc.stdout and "killed by SIGSEGV" in proc.stdout
    assert "code differs" not in proc.stdout


# A pytest corpus under xdist: on head, the gemm's test dies (SIGSEGV) right after its compile, as a
# test whose kernel crashes at launch does; xdist replaces the worker and pytest exits 1.
PYTEST_CORPUS = f"""
import os, signal, sys
sys.path.insert(0, {TESTING!r})
import kernels, tilelang
from tilelang import tvm

TARGET = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
HEAD = "tl.disable_out_of_bound_warning" in os.environ.get("TL_LOWER_TRACE_CONFIGS", "")


def test_gemm():
    with TARGET:
        tilelang.lower(kernels.gemm(), target=TARGET)
    if HEAD:
        os.kill(os.getpid(), signal.SIGSEGV)


def test_add():
    with TARGET:
        tilelang.lower(kernels.elementwise_add(M=16, N=16, block_M=8, block_N=8), target=TARGET)
"""


def test_an_xdist_worker_that_dies_under_a_test_fails_the_gate_and_its_compile_is_whole(tmp_path):
    (tmp_path / "test_corpus.py").write_text(PYTEST_CORPUS)
    env = {**clean_env(), "PYTHONPATH": pythonpath()}
    corpus = ["pytest", "test_corpus.py", "-n", "2", "-p", "no:cacheprovider"]
    command = [lower_trace_cli(), "regress", "--dir", str(tmp_path / "out"), "--head-config", HARMLESS, "--", *corpus]
    proc = subprocess.run(command, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=900)
    log = (tmp_path / "out" / "head" / "command.log").read_text()
    assert "crashed while running 'test_corpus.py::test_gemm'" in log  # xdist's own word for it
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    assert "head's worker died under test_corpus.py::test_gemm: the side died, which fails the gate" in proc.stdout
    assert "code differs" not in proc.stdout and "2 kernels: 2 identical" in proc.stdout, proc.stdout
