"""Creep caught by the build, deterministically: what tracing adds to one kernel's compile,
counted, not timed (time is noise on a shared machine; work is not).

A fresh interpreter counts, with shims of its own around TVM's and Python's entry points, the
work of one compile untraced and the same compile traced (html mode, as users run it), each
after a warm-up compile of its kind; the difference is lower-trace's work on that kernel:

- ``prints``, ``bytes printed``: TVMScript prints (TVM's one printer entry, so ``str()`` of an IR
  object counts as much as ``Scriptable.script``) and their characters;
- ``statement walks``: ``tirx.IRTransform`` walks, each a Python callback per statement (the span
  markers of a printed function, the codegen line map);
- ``structural_equal``: ``tvm.ir.structural_equal`` calls (the no-op checks);
- ``records``, ``record bytes``: manifest records the trace writer appended, and their JSON size;
- ``snapshots``, ``snapshot bytes``: distinct texts stored (snapshots, spans, line maps, sources);
- ``callbacks per pass``: PassInstrument callbacks into lower-trace, per pass that ran;
- ``subprocesses``: processes started (the compile path starts none; the device stage only
  where TileLang itself runs nvcc).

Each is held to the budget below, written down beside what it was when it was set (about 12%
above). A change that does more work per kernel (one more print per pass: +85 prints on the
GEMM) fails here with the counter's name; raising a budget is a decision, said in the commit.
"""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")  # the 0.1.15 capture path is the one measured

from support import TESTING

# Set 2026-12-03 (issue 29) from the counts in the comments, with room for what is not creep
# (timings' digits, TileLang's own names), never for one more print per pass.
BUDGET = {
    "gemm": {  # testing/kernels.py gemm, sm_90a: 85 passes, 35 of them change the IR
        "prints": 48,  # 41: the changed modules' prints (one function each, reused text otherwise), the codegen line map's
        # (counted at TVM's printer since 2026-12-05, where str() of the buffers' extents showed 6 more prints, now
        # gone; the kernel's input is printed once, on the worker, no longer also plainly for the edits' variant key)
        "bytes printed": 270_000,  # 240,274
        "structural_equal": 88,  # 76: the no-op checks of passes whose module parts changed identity
        "statement walks": 52,  # 46: tirx.IRTransform over each printed function (span markers), the line map's
        "records": 100,  # 91
        "record bytes": 24_000,  # 21,078-21,082 (timings vary in digits)
        "snapshots": 86,  # 78: texts, their spans, the line map, the user's file
        "snapshot bytes": 300_000,  # 272,096
        "callbacks per pass": 2.1,  # 2.02: before and after each pass, enter and exit each PassContext
        "subprocesses": 0,  # 0
    },
    "elementwise_add": {  # testing/kernels.py elementwise_add, sm_90a
        "prints": 25,  # 21 (28 while the extents printed, 22 while the input printed twice)
        "bytes printed": 72_000,  # 63,862
        "structural_equal": 80,  # 71
        "statement walks": 29,  # 26
        "records": 96,  # 87
        "record bytes": 23_000,  # 19,894-19,896
        "snapshots": 47,  # 42
        "snapshot bytes": 104_000,  # 93,170
        "callbacks per pass": 2.1,  # 2.02
        "subprocesses": 0,  # 0
    },
}

CHILD = r"""
import json, os, subprocess, sys
sys.path.insert(0, {testing!r})
import tilelang, tvm
from tvm.target import Target
from tvm.runtime import script_printer
import lower_trace, kernels
from lower_trace.capture.tracker import PassTracker
from lower_trace.store.writer import TraceWriter

counts = {{}}

def add(name, n=1):
    counts[name] = counts.get(name, 0) + n

def counting(owner, name, count):
    original = getattr(owner, name)
    def wrapper(*args, **kwargs):
        result = original(*args, **kwargs)
        count(args, kwargs, result)
        return result
    setattr(owner, name, wrapper)

def printed(args, kwargs, result):
    add("prints"); add("bytes printed", len(str(result)))
counting(script_printer, "_script", printed)  # every print: Scriptable.script, and str()/repr() of any IR object
from lower_trace.integrations.ir_reading import tvm_print
counting(tvm.ir, "structural_equal", lambda a, k, r: add("structural_equal"))
if tvm_print._node_equal is not None:  # capture calls TVM's equality through its FFI function
    counting(tvm_print, "_node_equal", lambda a, k, r: add("structural_equal"))
counting(subprocess.Popen, "__init__", lambda a, k, r: add("subprocesses"))
from lower_trace.integrations.ir_reading import tir_spans
if tir_spans._ir_transform is not None:  # the span markers' walks: a Python callback per statement
    counting(tir_spans, "_ir_transform", lambda a, k, r: add("statement walks"))
for method in ("append", "append_now"):
    counting(TraceWriter, method, lambda a, k, r: (add("records"), add("record bytes", len(json.dumps(a[2], default=str)))))
counting(TraceWriter, "add_snapshot", lambda a, k, r: (add("snapshots"), add("snapshot bytes", len(a[2]))))
for method in ("run_before_pass", "run_after_pass", "enter_pass_ctx", "exit_pass_ctx"):  # (should_run: under bisect only)
    counting(PassTracker, method, lambda a, k, r: add("callbacks"))
counting(PassTracker, "run_after_pass", lambda a, k, r: add("passes"))

def compile_once(name):
    with Target({{"kind": "cuda", "arch": "sm_90a"}}) as target:
        tilelang.lower(getattr(kernels, name)(), target=target)

result = {{}}
for name in {names!r}:
    compile_once(name)  # warm-up: the process's first compile does one-time work
    counts.clear()
    compile_once(name)
    untraced = dict(counts)
    with lower_trace.trace(mode="html", trace_dir={trace_dir!r}) as run:
        compile_once(name)  # warm-up traced (the first marked prints are checked against plain ones)
        run.worker.wait()
        counts.clear()
        compile_once(name)
        run.worker.wait()
        traced = dict(counts)
    work = {{key: traced.get(key, 0) - untraced.get(key, 0) for key in set(traced) | set(untraced)}}
    passes = traced.get("passes", 0)
    work["callbacks per pass"] = round(work.pop("callbacks", 0) / passes, 2) if passes else 0
    work.pop("passes", None)
    result[name] = work
print("COUNTS " + json.dumps(result))
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    code = CHILD.format(testing=TESTING, names=list(BUDGET), trace_dir=str(tmp_path_factory.mktemp("work")))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    env["TILELANG_DISABLE_CACHE"] = "1"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("COUNTS ")]
    return json.loads(line[len("COUNTS ") :])


@pytest.mark.parametrize("kernel", list(BUDGET))
def test_tracing_a_kernel_stays_within_its_work_budget(work, kernel):
    counted = work[kernel]
    over = {name: (counted.get(name, 0), limit) for name, limit in BUDGET[kernel].items() if counted.get(name, 0) > limit}
    assert not over, f"{kernel}: over budget (counted, budget): {over}; all counts: {counted}"
    assert counted["prints"] > 0 and counted["records"] > 0  # the shims saw the traced compile at all
