"""The tracer never makes things worse: faults, concurrency, hostile input.

Each fault test compiles a real kernel traced under the fault and checks the
kernel is the one an untraced compile produces, with one clear warning.
"""

import glob
import os
import subprocess
import sys
import threading

import pytest

import kernels
import lower_trace
from lower_trace.model import KernelStatus
from support import lower_trace_cli, pythonpath

SOURCE_OF = """
import hashlib, sys
import tilelang
from tilelang import tvm
import kernels
target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
with target:
    src = tilelang.lower(kernels.gemm(), target=target).kernel_source
print("SOURCE", hashlib.sha256(src.encode()).hexdigest())
"""


def source_hash(proc):
    (line,) = [text for text in proc.stdout.splitlines() if text.startswith("SOURCE ")]
    return line.split()[1]


@pytest.fixture(scope="module")
def untraced_source(tmp_path_factory):
    pytest.importorskip("tilelang.instrumentation")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    env["PYTHONPATH"] = pythonpath()
    cwd = tmp_path_factory.mktemp("untraced")
    script = cwd / "s.py"
    script.write_text(SOURCE_OF)
    proc = subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=True)
    return source_hash(proc)


# What lower-trace says on every traced run; anything else it says is a warning.
_INFORMATIONAL = (
    "lower-trace: TileLang's kernel cache is bypassed",
    "lower-trace: TileLang's built-in lower_trace is off",
    "lower-trace: traced ",
    "lower-trace: gemm: generated source saved",
)


def warnings_of(proc):
    """Every line lower-trace printed beyond the usual ones; and the tool printed no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    return [line for line in proc.stderr.splitlines() if line.startswith("lower-trace:") and not line.startswith(_INFORMATIONAL)]


@pytest.mark.parametrize("where", ["a regular file", "under /proc"])
def test_unwritable_trace_dir(run_python, tmp_path, untraced_source, where):
    target = str(tmp_path / "file") if where == "a regular file" else "/proc/lower-trace-cannot-write-here"
    if where == "a regular file":
        (tmp_path / "file").write_text("x")
    proc = run_python(SOURCE_OF, env={"TL_LOWER_TRACE": "both", "TL_LOWER_TRACE_DIR": target})
    assert source_hash(proc) == untraced_source
    (warning,) = warnings_of(proc)
    assert "cannot write the trace" in warning and "your compile goes on" in warning
    assert "== lower-trace: kernel k1 gemm" in proc.stderr  # the terminal view still works
    # Nothing was written anywhere else instead: the folder (the script's, its working directory)
    # holds what the test put there and no more, and the regular file is as it was.
    put_there = ["file", "user_kernel.py"] if where == "a regular file" else ["user_kernel.py"]
    assert sorted(os.listdir(tmp_path)) == put_there
    if where == "a regular file":
        assert (tmp_path / "file").read_text() == "x"


def test_a_full_disk(run_python, tmp_path, untraced_source):
    """RLIMIT_FSIZE makes every write past 64 KB fail (EFBIG), as a full disk would."""
    limited = (
        "import resource, signal\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))\n"
    )
    proc = run_python(limited + SOURCE_OF, env={"TL_LOWER_TRACE": "html"})
    assert source_hash(proc) == untraced_source
    (warning,) = warnings_of(proc)
    assert "cannot write the trace" in warning
    # What was written before the disk filled up still loads; no temporary file is left.
    trace = lower_trace.load_trace(str(tmp_path / "tmp" / "lower_trace_dir"))
    assert trace.kernels and trace.kernels[0].name == "gemm"
    assert not glob.glob(str(tmp_path / "tmp" / "**" / "*.tmp"), recursive=True)


@pytest.mark.cold_python  # a warm child's stdout and stderr are files, which the size limit stops too
def test_a_disk_full_from_the_start_hides_no_earlier_run(run_python, tmp_path):
    """A run that could not write a byte is no run: list/show/report still find the earlier one."""
    run_python(SOURCE_OF, env={"TL_LOWER_TRACE": "html"})
    limited = (
        "import resource, signal\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))\n"
    )
    proc = run_python(limited + SOURCE_OF, env={"TL_LOWER_TRACE": "html"})
    assert len(warnings_of(proc)) == 1
    root = str(tmp_path / "tmp" / "lower_trace_dir")
    for args in (["list", root], ["show", root, "--no-diff"], ["list", "--runs", root]):
        result = subprocess.run([lower_trace_cli(), *args], capture_output=True, text=True)
        assert result.returncode == 0, (args, result.stderr)
    assert lower_trace.load_trace(root).kernels[0].name == "gemm"


def test_broken_working_copies_are_a_clear_warning(run_python, tmp_path, untraced_source):
    edits = tmp_path / "tmp" / "lower_trace_dir" / "user_kernel" / "edits"
    edits.parent.mkdir(parents=True)
    edits.write_text("a file where the edits folder should be")
    proc = run_python(SOURCE_OF, env={"TL_LOWER_TRACE": "html"})
    assert source_hash(proc) == untraced_source
    (warning,) = warnings_of(proc)
    assert "cannot use the working copies in" in warning and "your compile goes on" in warning


@pytest.mark.parametrize("broken", ["print_ir", "digest_of", "identity"])
def test_a_faulty_printer_hash_or_identity(run_python, untraced_source, broken):
    patch = {
        "print_ir": "from lower_trace.integrations.ir_reading import tvm_ir\ntvm_ir.TVMIR.print_ir = lambda self, mod: 1 / 0\n",
        "digest_of": "from lower_trace.capture import snapshots\nsnapshots.digest_of = lambda text: 1 / 0\n",
        "identity": "from lower_trace.integrations.ir_reading import tvm_ir\ntvm_ir.TVMIR.identity = lambda self, mod: 1 / 0\n",
    }[broken]
    proc = run_python("import tilelang, lower_trace\n" + patch + SOURCE_OF, env={"TL_LOWER_TRACE": "html"})
    assert source_hash(proc) == untraced_source
    (warning,) = warnings_of(proc)
    assert "internal error" in warning and "ZeroDivisionError" in warning and "your compile is not affected" in warning


def unrolled(N=2048):
    import tilelang.language as T

    @T.prim_func
    def unrolled(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=1) as _:
            for i in T.unroll(N, explicit=True):  # unrolled in the IR itself: one statement each
                C[i] = A[i] * B[i] + A[i]

    return unrolled


def test_an_enormous_ir(tmp_path, lower_cuda):
    untraced = lower_cuda(unrolled()).kernel_source
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        traced = lower_cuda(unrolled()).kernel_source
    assert traced == untraced and untraced.count("C[") >= 2048
    trace = lower_trace.load_trace(run.run_dir)
    (kernel,) = trace.kernels
    assert kernel.status is KernelStatus.OK
    assert max(len(trace.snapshot(p.after)) for p in kernel.passes) > 100_000
    assert os.path.getsize(run.report_path) < 2_000_000  # compressed in the page


def test_four_threads_compile_different_kernels(tmp_path, lower_cuda):
    names = ["gemm", "elementwise", "row_sum", "flash_attention"]
    alone = {}
    for name in names:
        with lower_trace.trace(mode="html", trace_dir=tmp_path / "alone" / name) as run:
            lower_cuda(kernels.CUDA_KERNELS[name]())
        (kernel,) = lower_trace.load_trace(run.run_dir).kernels
        trace = lower_trace.load_trace(run.run_dir)
        alone[kernel.name] = [(p.name, p.depth, p.status, trace.snapshot(p.before), trace.snapshot(p.after)) for p in kernel.passes]
    errors = []

    def compile_one(name):
        try:
            lower_cuda(kernels.CUDA_KERNELS[name]())
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with lower_trace.trace(mode="html", trace_dir=tmp_path / "threads") as run:
        threads = [threading.Thread(target=compile_one, args=(name,)) for name in names]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors
    trace = lower_trace.load_trace(run.run_dir)
    assert sorted(k.name for k in trace.kernels) == sorted(alone)
    for kernel in trace.kernels:
        assert kernel.status is KernelStatus.OK
        # Complete and unmixed: the same passes, with the same IR, as when compiled alone.
        assert [(p.name, p.depth, p.status, trace.snapshot(p.before), trace.snapshot(p.after)) for p in kernel.passes] == alone[kernel.name]
        assert all(p.kernel == kernel.kernel_id for p in kernel.passes)
        assert kernel.name.split("_")[0] in trace.snapshot(kernel.passes[-1].after)


def test_two_processes_trace_into_one_folder(tmp_path):
    script = tmp_path / "same.py"
    script.write_text(SOURCE_OF)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    env.update(PYTHONPATH=pythonpath(), TL_LOWER_TRACE="html", TL_LOWER_TRACE_DIR=str(tmp_path / "shared"))
    procs = [
        subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    runs = sorted(glob.glob(str(tmp_path / "shared" / "same" / "run-*")))
    assert len(runs) == 2
    for run_dir in runs:
        (kernel,) = lower_trace.load_trace(run_dir).kernels
        assert kernel.status is KernelStatus.OK and len(kernel.passes) == 85
        assert os.path.isfile(os.path.join(run_dir, "report.html"))
    listing = subprocess.run([lower_trace_cli(), "list", "--runs", str(tmp_path / "shared")], capture_output=True, text=True)
    assert listing.returncode == 0 and all(run in listing.stdout for run in runs)


def test_a_hostile_script_name(tmp_path, untraced_source):
    """A real compile from a script with quotes, a bidi override and dots in its name."""
    weird = tmp_path / "we'ird \u202ekern ..py"
    weird.write_text(SOURCE_OF)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    env.update(TL_LOWER_TRACE="html", PYTHONPATH=pythonpath())
    proc = subprocess.run([sys.executable, str(weird)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert source_hash(proc) == untraced_source
    root = tmp_path / "tmp" / "lower_trace_dir"
    (folder,) = os.listdir(root)
    assert folder.startswith("we_ird_kern-") and all(ch.isascii() and (ch.isalnum() or ch in "._-") for ch in folder)
    everything = {os.path.relpath(p, tmp_path) for p in glob.glob(str(tmp_path / "**"), recursive=True)}
    assert {p for p in everything if not p.startswith("tmp")} == {".", weird.name}
    assert lower_trace.load_trace(str(root / folder)).kernels[0].name == "gemm"


def test_the_live_messages_show_a_hostile_kernel_name_escaped(run_python):
    """The messages said while compiling (working copy saved, ...) name the kernel: a bidi control
    in its name is shown escaped there too, as in every view (oracle: Unicode's categories)."""
    from unicode_oracle import must_escape

    name = "x\u202egnp\u061cexe"
    proc = run_python(f"""
import tilelang, kernels
from tilelang import tvm
target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
with target:
    tilelang.lower(kernels.elementwise_add().with_attr("global_symbol", {name!r}), target=target)
""", env={"TL_LOWER_TRACE": "html"})
    assert "generated source saved to" in proc.stderr and "x\\u202egnp\\u061cexe" in proc.stderr
    assert not [hex(ord(ch)) for ch in proc.stderr if ch != "\n" and must_escape(ord(ch))]
