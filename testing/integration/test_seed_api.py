"""TileLang's tracer module driven by lower-trace (seed_api.py, _takeover.py): scripts written
exactly as TileLang's docs show them (docs/tools/lower_trace.md), run in fresh interpreters.

Ground truth: the kernel's numbers (torch), TileLang's own tracer on the same script
(TL_LOWER_TRACE_BUILTIN=1 keeps it), and TileLang's own instrumentation registry.
"""

import json
import os

import pytest

pytest.importorskip("tilelang.tools.lower_trace", reason="this TileLang has no built-in tracer module")

import lower_trace

# As docs/tools/lower_trace.md shows it ("Compilation instrumentation: enable() / disable()").
DOCS_ENABLE = """
import sys, torch, tilelang, kernels
from tilelang.tools import lower_trace as lt
lt.enable(mode="both", trace_dir="traces", codegen_output={output!r})
kernel1 = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
a = torch.arange(64, dtype=torch.float32); c = torch.empty(64)
kernel1(a, torch.ones(64), c)
print("RESULT", c[:4].tolist())
lt.reset()
lt.disable()
from tilelang.instrumentation import session
print("TOOLS", sorted(session._tool_factories))
print("CACHE", tilelang.is_cache_enabled())
"""


def runs_in(folder):
    return sorted(d for d in (os.listdir(folder) if os.path.isdir(folder) else ()) if d.startswith("run-"))


def test_the_docs_enable_disable_script_drives_lower_trace(run_python, tmp_path):
    proc = run_python(DOCS_ENABLE.format(output="codegen.c"))
    assert "RESULT [1.0, 2.0, 3.0, 4.0]" in proc.stdout
    said = [line for line in proc.stderr.splitlines() if "tilelang.tools.lower_trace now drives lower-trace" in line]
    assert len(said) == 1 and "TL_LOWER_TRACE_BUILTIN=1" in said[0]
    assert "[lower_trace]" not in proc.stdout  # TileLang's own tracer said nothing: it never ran
    (run,) = runs_in(tmp_path / "traces" / "user_kernel")
    trace = lower_trace.load_trace(str(tmp_path / "traces" / "user_kernel" / run))
    (kernel,) = trace.kernels
    assert kernel.name == "vector_add" and len(kernel.passes) > 40
    assert "== lower-trace: kernel k1 vector_add" in proc.stderr  # mode="both": the terminal view too
    # codegen_output names the editable copy; disable() leaves TileLang as it was.
    assert (tmp_path / "codegen.c").read_text() == trace.snapshot(kernel.codegen[0].source)
    assert "'lower-trace'" not in proc.stdout.split("TOOLS", 1)[1].splitlines()[0]
    assert "CACHE True" in proc.stdout

    # An edit of that file is compiled on the next run, and its numbers are the edit's.
    working = tmp_path / "codegen.c"
    working.write_text(working.read_text().replace("(A[i] + B[i])", "(A[i] - B[i])"))
    patched = run_python(DOCS_ENABLE.format(output="codegen.c"))
    assert "RESULT [-1.0, 0.0, 1.0, 2.0]" in patched.stdout and "PATCHED" in patched.stderr and "codegen.c" in patched.stderr
    untraced = run_python("import torch, tilelang, kernels\n"
                          "k = tilelang.compile(kernels.vector_add_c(), target='c', execution_backend='cython')\n"
                          "a = torch.arange(64, dtype=torch.float32); c = torch.empty(64); k(a, torch.ones(64), c)\n"
                          "print('RESULT', c[:4].tolist())\n")
    assert "RESULT [1.0, 2.0, 3.0, 4.0]" in untraced.stdout  # untraced compiles TileLang's own source


def test_the_builtin_stays_where_the_user_asks_for_it(run_python, tmp_path):
    proc = run_python(DOCS_ENABLE.format(output="codegen.c"), env={"TL_LOWER_TRACE_BUILTIN": "1"})
    assert "RESULT [1.0, 2.0, 3.0, 4.0]" in proc.stdout
    assert "[lower_trace] IR pass tracing enabled" in proc.stdout  # TileLang's own tracer, as without lower-trace
    assert "lower-trace" not in proc.stderr
    assert not runs_in(tmp_path / "traces" / "user_kernel")


def test_off_means_off_until_the_module_is_imported(run_python):
    code = """
import sys, tilelang
ours = lambda: sorted(m for m in sys.modules if m.startswith("lower_trace"))
print("BEFORE", ours(), [type(f).__name__ for f in sys.meta_path][:1])
from tilelang.tools import lower_trace
print("AFTER", ours(), lower_trace.enable.__module__, [type(f).__name__ for f in sys.meta_path][:1])
"""
    proc = run_python(code)
    before = proc.stdout.split("BEFORE", 1)[1].splitlines()[0]
    after = proc.stdout.split("AFTER", 1)[1].splitlines()[0]
    assert before.startswith(" [] ['LowerTraceTakeover']")  # only the startup hook's finder, nothing imported
    assert "lower_trace.startup.seed_shims" in after and "LowerTraceTakeover" not in after  # the finder is gone once used
    assert "lower-trace" not in proc.stderr  # nothing said until enable() is called
    # Set from Python before the import (as the benchmarks do for their built-in rows), the variable keeps it TileLang's.
    kept = run_python(
        "import os\nos.environ['TL_LOWER_TRACE_BUILTIN'] = '1'\nfrom tilelang.tools import lower_trace\nprint('OWN', lower_trace.enable.__module__)\n"
    )
    assert "OWN tilelang.tools.lower_trace" in kept.stdout


ONE_SHOT = """
import json, sys, tilelang, kernels
from tilelang import tvm
from tilelang.tools import lower_trace as lt
import tilelang.transform as transform
func = kernels.gemm()
target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
results = [lt.lower_trace(func, transform.Simplify(), mode="terminal")]
results.append(lt.lower_trace(
    func,
    [("Bind", tvm.tirx.transform.BindTarget(target)), ("Simplify", transform.Simplify()), ("ThreadSync", transform.ThreadSync("shared"))],
    mode="both", html_path="my_diff.html",
))
try:
    lt.lower_trace(kernels.nested_parallel(), [transform.Simplify(), tilelang.analysis.NestedLoopChecker()], mode="html", html_path="fails.html")
except Exception as exc:
    print("RAISED", type(exc).__name__)
json.dump(results, open("results.json", "w"))
"""


def test_the_one_shot_gives_what_tilelangs_own_gives(run_python, tmp_path):
    (tmp_path / "ours").mkdir()
    (tmp_path / "theirs").mkdir()
    ours = run_python(ONE_SHOT, cwd=tmp_path / "ours")
    theirs = run_python(ONE_SHOT, cwd=tmp_path / "theirs", env={"TL_LOWER_TRACE_BUILTIN": "1"})  # TileLang's own one-shot
    mine = json.loads((tmp_path / "ours" / "results.json").read_text())
    truth = json.loads((tmp_path / "theirs" / "results.json").read_text())
    assert len(mine) == len(truth) == 2
    for a, b in zip(mine, truth, strict=False):
        assert [sorted(entry) for entry in a] == [sorted(entry) for entry in b]
        assert a == b, "the same entries: names, scripts, diff lines and counts"
    assert [entry["changed"] for entry in mine[1]] == [True, False, False]
    # The failing chain raises as TileLang's does, after writing the report.
    assert ours.stdout.count("RAISED") == 1 and ours.stdout.split("RAISED")[1].split()[0] == theirs.stdout.split("RAISED")[1].split()[0]
    page = (tmp_path / "ours" / "my_diff.html").read_text()
    assert "lt-payload" in page and (tmp_path / "ours" / "fails.html").exists()  # lower-trace's report
    assert "== lower-trace: kernel k1 main" in ours.stderr  # terminal: lower-trace's view of the chain


def test_run_passes_is_ours_too(tmp_path, monkeypatch):
    """lower_trace.run_passes in this process: the chain is traced as one compile (nested passes too)."""
    import tilelang
    from tilelang import tvm

    import kernels

    monkeypatch.chdir(tmp_path)
    results = lower_trace.run_passes(kernels.gemm(), [tilelang.transform.Simplify(), ("split", tvm.tirx.transform.BindTarget(tvm.target.Target("llvm")))],
                                     mode="html", html_path=str(tmp_path / "chain.html"), trace_dir=str(tmp_path / "traces"))
    assert [r["name"] for r in results] == ["Simplify", "split"] and results[1]["changed"] and results[1]["insertions"] >= 1
    (script,) = os.listdir(tmp_path / "traces")
    (run,) = runs_in(tmp_path / "traces" / script)
    (kernel,) = lower_trace.load_trace(str(tmp_path / "traces" / script / run)).kernels
    assert [p.name for p in kernel.passes if p.depth == 0] == ["tl.Simplify", "tirx.BindTarget"]
    assert kernel.entry == "run_passes" and (tmp_path / "chain.html").exists()


def test_codegen_output_stays_the_first_kernels_after_reset(run_python, tmp_path):
    """enable(codegen_output=...), a kernel, reset(), another kernel: the file is the first kernel's
    editable source, and the second compiles its own (it used to be given the first one's source)."""
    proc = run_python("""
import torch, tilelang, kernels
from tilelang.tools import lower_trace as lt
lt.enable(mode="html", trace_dir="traces", codegen_output="codegen.c")
add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
lt.reset()
scale = tilelang.compile(kernels.scale_c(factor=3.0), target="c", execution_backend="cython")
lt.disable()
a = torch.arange(64, dtype=torch.float32); c = torch.empty(64)
add(a, torch.ones(64), c); print("ADD", c[:3].tolist())
scale(a, c); print("SCALE", c[:3].tolist())
""")
    assert "ADD [1.0, 2.0, 3.0]" in proc.stdout and "SCALE [0.0, 3.0, 6.0]" in proc.stdout, proc.stdout + proc.stderr
    assert "your edit" not in proc.stderr
    text = (tmp_path / "codegen.c").read_text()
    assert "(A[i] + B[i])" in text and "3.000000e+00f" not in text and "* 3" not in text  # the first kernel's, still
