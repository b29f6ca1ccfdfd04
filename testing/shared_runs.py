"""Real runs that tests of several modules and tiers only read, each made once per test process
(the session fixtures in conftest.py call these): the layouts of three kernels with TileLang's
own Fragments as ground truth, and a run killed while a nested pass runs. TileLang is imported
only when a run is made."""

import json
import os
import signal
import subprocess
import sys
import time

import lower_trace

CUDA = {"kind": "cuda", "arch": "sm_90a"}

# --- layouts -------------------------------------------------------------------------------


def layouts_run(trace_dir):
    """gemm (a warp-specialized MMA accumulator on sm_90a), row_sum (a fragment held by 32
    threads each) and flash attention (eight fragments, re-annotated by tl.LowerTileOp for the
    lowered buffers) traced by lower-trace, and the ground truth of each."""
    import tilelang
    from tilelang import tvm

    import kernels

    target = tvm.target.Target(CUDA)
    funcs = {"gemm": kernels.gemm(), "row_sum": kernels.row_sum(), "flash_attention": kernels.flash_attention()}
    with lower_trace.trace(mode="html", trace_dir=trace_dir) as run, target:
        for func in funcs.values():
            tilelang.lower(func, target=target)
    truth = {name: truth_of(modules_after_layout_inference(func, target)) for name, func in funcs.items()}
    return lower_trace.load_trace(run.run_dir), truth


def modules_after_layout_inference(func, target):
    """The IRModule tl.LayoutInference returned, through TileLang's own instrumentation."""
    import tilelang
    from tilelang import instrumentation as tl

    seen = []

    class Observer(tl.PassEventObserver):
        def pass_finished(self, mod, event, state):
            if event.name == "tl.LayoutInference" and event.depth == 0:
                seen.append(mod)

    class Tool(tl.PassInstrumentationTool):
        def create_pass_instrument(self):
            return tl.StackedPassInstrument(Observer())

    # The PassContext is made inside the instrumentation's block: it asks that block for its instruments.
    with tl.compile_pass_instrumentation(name="truth", tools=[Tool()], include_default_tools=False):  # noqa: SIM117
        with tilelang.transform.PassContext(opt_level=3, instruments=tl.create_pass_instruments()), target:
            tilelang.lower(func, target=target, enable_device_compile=False)
    (mod,) = seen
    return mod


def truth_of(mod):
    """buffer name -> (Fragment, [threads per element, row-major], [local index per element])."""
    import itertools

    from tilelang.layout import Fragment
    from tvm.tirx import SBlock
    from tvm.tirx.stmt_functor import post_order_visit

    fragments = {}
    for _, func in mod.functions.items():
        post_order_visit(
            func.body,
            lambda n: fragments.update({b.name: f for b, f in n.annotations["layout_map"].items() if isinstance(f, Fragment)})
            if isinstance(n, SBlock) and "layout_map" in n.annotations
            else None,
        )
    out = {}
    for name, frag in fragments.items():
        shape = [int(x) for x in frag.input_size]
        reps, base = int(frag.replicate_size), int(frag.thread_range.min)
        threads, local = [], []
        for index in itertools.product(*(range(n) for n in shape)):
            threads.append(sorted(base + int(frag.map_forward_thread([r, *index] if reps > 1 else list(index))[0]) for r in range(reps)))
            local.append(",".join(str(int(x)) for x in frag.map_forward_index([0, *index] if reps > 1 else list(index))))
        out[name] = (frag, threads, local)
    return out


# --- a run killed (SIGKILL) while a nested pass runs ------------------------------------------
# The killed program is a real TileLang lowering in a subprocess whose tir.StorageRewrite is
# replaced by two Sequentials built in Python: test.Outer = [the real StorageRewrite,
# test.Inner = [the real tl.Simplify, a pass that hangs]].

SCRIPT = """\
import os, sys, time
sys.path.insert(0, {kernels_dir!r})
import tilelang, tilelang.transform, kernels
from tilelang import tvm

real_storage_rewrite, real_simplify = tilelang.transform.StorageRewrite, tilelang.transform.Simplify

@tvm.transform.module_pass(opt_level=0, name="test.Hang")
def hang(mod, ctx):
    open({signal!r}, "w").close()
    while True:  # until the test kills the process
        time.sleep(0.1)

def outer():
    inner = tvm.transform.Sequential([real_simplify(), hang], name="test.Inner")
    return tvm.transform.Sequential([real_storage_rewrite(), inner], name="test.Outer")

tilelang.transform.StorageRewrite = outer
target = tvm.target.Target({cuda!r})
with target:
    tilelang.lower(kernels.gemm(), target=target)
"""


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}


def manifest_records(trace_dir):
    records = []
    for root, _, files in os.walk(trace_dir):
        if "trace.jsonl" in files:
            with open(os.path.join(root, "trace.jsonl")) as handle:
                records += [json.loads(line) for line in handle if line.endswith("\n")]
    return records


def killed_run(tmp):
    """(the killed run's folder, its trace, the seconds it ran, a normal trace of the same kernel)."""
    import tilelang
    from tilelang import tvm

    import kernels

    with lower_trace.trace(mode="html", trace_dir=tmp / "normal") as run:
        target = tvm.target.Target(CUDA)
        with target:
            tilelang.lower(kernels.gemm(), target=target)
    normal = lower_trace.load_trace(run.run_dir)
    script, flag, trace_dir = tmp / "killed.py", tmp / "hanging", tmp / "trace"
    script.write_text(SCRIPT.format(kernels_dir=os.path.dirname(kernels.__file__), signal=str(flag), cuda=CUDA))
    env = {**clean_env(), "TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_DIR": str(trace_dir)}
    started = time.monotonic()
    with open(tmp / "stderr.txt", "w") as stderr:
        child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.DEVNULL, stderr=stderr, env=env, cwd=str(tmp))
    try:
        deadline = started + 240
        while not flag.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert flag.exists(), (tmp / "stderr.txt").read_text()[-2000:]
        # A hung pass runs a while before anyone kills it: give what was recorded time to reach the disk.
        until = time.monotonic() + 20
        while time.monotonic() < until and not any(r.get("name") == "tl.Simplify" and r.get("depth") == 2 for r in manifest_records(trace_dir)):
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    ran = time.monotonic() - started
    assert child.returncode == -signal.SIGKILL
    trace = lower_trace.load_trace(str(trace_dir))
    return trace.path, trace, ran, normal


