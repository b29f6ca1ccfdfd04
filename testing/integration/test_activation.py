"""Switching tracing on without code changes, in fresh interpreters, with the
package installed the way users install it (its startup hook included)."""

import glob
import json
import os
import re
import subprocess
import sys

import pytest

from support import lower_trace_cli, pythonpath

pytestmark = pytest.mark.cold_python  # how an interpreter's start switches tracing on is the subject

LOWER_GEMM = """
import sys
import tilelang
from tilelang import tvm
import kernels
target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
with target:
    src = tilelang.lower(kernels.gemm(), target=target).kernel_source
print("ARGS", sys.argv[1:])
print("OK", len(src))
"""


def runs_under(root):
    return sorted(glob.glob(os.path.join(str(root), "*", "run-*", "trace.jsonl")))


def test_env_var_html_traces_with_no_code_change(run_python, tmp_path):
    proc = run_python(LOWER_GEMM, env={"TL_LOWER_TRACE": "html"}, args=("--flag",))
    assert "OK " in proc.stdout and "ARGS ['--flag']" in proc.stdout
    (manifest,) = runs_under(tmp_path / "tmp" / "lower_trace_dir")
    assert "/user_kernel/run-" in manifest  # <dir>/<script>/<run>
    records = [json.loads(line) for line in open(manifest)]
    assert sum(r["type"] == "pass" for r in records) == 85
    # One tracer at a time: TileLang's built-in never starts (it would announce itself on
    # stdout), and lower-trace says so once.
    assert proc.stderr.count("TileLang's built-in lower_trace is off") == 1
    assert "[lower_trace]" not in proc.stdout
    script_dir = tmp_path / "tmp" / "lower_trace_dir" / "user_kernel"
    assert not (script_dir / "codegen.cpp").exists() and not (script_dir / ".run_records").exists()
    # The report path is printed once, as a file:// URL that exists.
    (url,) = re.findall(r"report: file://(\S+)", proc.stderr)
    assert os.path.isfile(url) and url == os.path.join(os.path.dirname(manifest), "report.html")
    assert (script_dir / "report.html").is_file()  # the seed's <dir>/<script>/report.html -> latest run


def test_trace_dir_variable_and_truthy_values(run_python, tmp_path):
    out = tmp_path / "elsewhere"
    run_python(LOWER_GEMM, env={"TL_LOWER_TRACE": "yes", "TL_LOWER_TRACE_DIR": str(out)})
    assert len(runs_under(out)) == 1
    assert not (tmp_path / "tmp").exists()


def test_a_bad_value_warns_once_and_runs_untraced(run_python, tmp_path):
    proc = run_python(LOWER_GEMM, env={"TL_LOWER_TRACE": "verbose"})
    assert "OK " in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.startswith("lower-trace:")]
    assert lines == [
        "lower-trace: TL_LOWER_TRACE='verbose' is not a valid mode; use one of terminal, html, both, trace, "
        "1/on/true/yes (= html) or 0/off/false/no (off); tracing stays off"
    ]
    # Off for TileLang's own tracer too (it would fall back to html and say "enabled").
    assert "[lower_trace]" not in proc.stdout
    assert not (tmp_path / "tmp").exists()


def test_off_means_off(run_python, tmp_path):
    code = LOWER_GEMM + """
from tilelang.instrumentation import session
print("MODULES", sorted(m for m in sys.modules if m.startswith("lower_trace")))
print("TOOLS", sorted(session._tool_factories))
"""
    for env in ({}, {"TL_LOWER_TRACE": "0"}, {"TL_LOWER_TRACE": "off"}):
        proc = run_python(code, env=env)
        assert "MODULES []" in proc.stdout
        assert "'lower-trace'" not in proc.stdout.split("TOOLS", 1)[1]
        assert "lower-trace" not in proc.stderr
    assert not (tmp_path / "tmp").exists()


def test_unset_variable_imports_nothing_of_ours(run_python):
    proc = run_python("import sys, tilelang\nprint(sorted(m for m in sys.modules if 'lower_trace' in m and 'tilelang' not in m))")
    assert proc.stdout.strip() == "[]"


def test_lower_trace_run_command(run_python, tmp_path):
    script = tmp_path / "kern.py"
    script.write_text(LOWER_GEMM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    env["PYTHONPATH"] = pythonpath()
    proc = subprocess.run(
        [lower_trace_cli(), "run", "--mode", "both", str(script), "a", "--b"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ARGS ['a', '--b']" in proc.stdout
    assert "== lower-trace: kernel k1 gemm" in proc.stderr  # both: terminal view ...
    (manifest,) = runs_under(tmp_path / "tmp" / "lower_trace_dir")  # ... and the trace + report,
    assert "/lower_trace_dir/kern/run-" in manifest  # in the folder named after the script
    assert proc.stderr.count("report: file://") == 1
    module = subprocess.run(
        [sys.executable, "-m", "lower_trace", "run", "--mode", "terminal", str(script)],
        cwd=tmp_path, env={**env, "NO_COLOR": "1"}, capture_output=True, text=True, timeout=300,
    )
    assert module.returncode == 0 and "tl.LowerTileOp  changed" in module.stderr
    # -m finds a module in the current folder, as python -m does.
    as_module = subprocess.run(
        [lower_trace_cli(), "run", "--mode", "html", "-m", "kern", "x", "--y"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert as_module.returncode == 0, as_module.stderr
    assert "ARGS ['x', '--y']" in as_module.stdout
    assert any("/lower_trace_dir/kern/run-" in m for m in runs_under(tmp_path / "tmp" / "lower_trace_dir"))


def test_run_command_rejects_bad_input_in_one_line(tmp_path):
    for args, expected in (
        (["run", "missing.py"], "missing.py: no such script"),
        (["run", "--mode", "loud", "x.py"], "--mode 'loud' is not a mode"),
        (["run", "--mode", "off", "x.py"], "--mode must turn tracing on"),
        (["show", str(tmp_path / "nope")], "no such directory"),
    ):
        proc = subprocess.run([lower_trace_cli(), *args], cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 2
        assert proc.stderr.count("\n") == 1 and expected in proc.stderr, proc.stderr


def test_startup_hook_is_safe_to_run_twice(run_python):
    code = """
import site, sys, sysconfig
import lower_trace.startup.hook as startup
startup.activate()
site.addsitedir(sysconfig.get_paths()["purelib"])  # processes every .pth again
import tilelang
from tilelang.instrumentation import session
print("TOOLS", sorted(session._tool_factories))
"""
    proc = run_python(code, env={"TL_LOWER_TRACE": "html"})
    assert "TOOLS ['lower-trace']" in proc.stdout
    assert proc.stderr.count("TileLang's built-in lower_trace is off") == 1


KERNEL_CACHE = """
import sys
import tilelang, torch
import kernels
k = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
a = torch.arange(64, dtype=torch.float32); c = torch.empty(64)
k(a, torch.ones(64), c)
print("SUM", float(c.sum()))
"""


def test_kernel_cache_never_leaves_an_empty_trace(run_python, tmp_path):
    env = {"TILELANG_CACHE_DIR": str(tmp_path / "cache"), "TILELANG_DISABLE_CACHE": "0"}
    first = run_python(KERNEL_CACHE, env=env)
    assert "SUM 2080.0" in first.stdout
    traced = run_python(KERNEL_CACHE, env={**env, "TL_LOWER_TRACE": "html"})
    assert "SUM 2080.0" in traced.stdout
    assert "kernel cache is bypassed while tracing" in traced.stderr
    (manifest,) = runs_under(tmp_path / "tmp" / "lower_trace_dir")
    records = [json.loads(line) for line in open(manifest)]
    assert sum(r["type"] == "pass" for r in records) > 50


KILLED = """
import os, signal, sys
import tilelang
from tilelang import tvm, instrumentation
import kernels

calls = {"kernels": 0}

class Killer(instrumentation.PassInstrumentationTool):
    # Registered after lower-trace: its callback runs after ours for the same pass.
    def create_pass_instrument(self):
        calls["kernels"] += 1
        @tvm.ir.instrument.pass_instrument
        class KillOnSecondKernel:
            def run_before_pass(self, mod, info):
                # TVM's own account of the passes run, the truth the trace is held to.
                print("RAN", calls["kernels"], info.name, flush=True)
                if calls["kernels"] == 2 and str(info.name) == "tl.LayoutInference":
                    os.kill(os.getpid(), signal.SIGKILL)
        return KillOnSecondKernel()

instrumentation.register_pass_instrumentation_tool("killer", Killer)
target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
with target:
    tilelang.lower(kernels.elementwise_add(), target=target)
    tilelang.lower(kernels.gemm(), target=target)
"""


def test_a_process_killed_mid_compile_leaves_a_trace_that_reports(run_python, tmp_path):
    proc = run_python(KILLED, env={"TL_LOWER_TRACE": "html"}, check=False)
    assert proc.returncode == -9
    root = tmp_path / "tmp" / "lower_trace_dir"
    (_manifest,) = runs_under(root)
    import lower_trace
    from lower_trace.model import KernelStatus

    trace = lower_trace.load_trace(str(root))
    first, second = trace.kernels
    ran = {1: [], 2: []}  # kernel -> the passes TVM ran, as the killer saw them
    for line in proc.stdout.splitlines():
        if line.startswith("RAN "):
            _, kernel, name = line.split(" ", 2)
            ran[int(kernel)].append(name)
    assert ran[2][-1] == "tl.LayoutInference" and len(ran[2]) > 10  # killed where the script says

    def same_passes(traced, truth):
        # TVM calls a pass made from a Python function "pass_fn"; lower-trace names it by the function.
        return len(traced) == len(truth) and all(t == n or n == "pass_fn" for t, n in zip(traced, truth, strict=True))

    assert first.status is KernelStatus.OK and len(first.passes) == 82
    assert same_passes([p.name for p in first.passes], ran[1])
    assert second.name == "gemm" and second.status is KernelStatus.RUNNING
    # What reached the disk before the kill: the passes TVM ran, in order, from the first on, and
    # nothing of the pass it died in (it never returned). How many made it depends on what the
    # worker thread had written when the kill came (docs/decisions.md, "buffered and flushed").
    names = [p.name for p in second.passes]
    assert 0 < len(names) < len(ran[2]) and same_passes(names, ran[2][: len(names)])
    report = subprocess.run([lower_trace_cli(), "report", str(root)], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    path = report.stdout.strip().removeprefix("file://")
    html = open(path, encoding="utf-8").read()
    assert '"name":"gemm"' in html and '"status":"running"' in html
