"""Bytes a trace takes per kernel, on real TileLang examples, with no GPU at hand.

    python benchmarks/trace_size.py EXAMPLE.py [EXAMPLE.py ...]

Each example runs in a fresh interpreter, in its own folder (its helper modules beside it),
traced in html mode into a folder of its own, until its first kernel is lowered: TileLang's
"auto" target is CUDA sm_90a, tensors the example puts on the GPU stay on the CPU, the device
code is generated but not compiled by nvcc, and the example stops where it would need the
kernel itself. (TileLang's examples: git -C TILELANG_CLONE show HEAD:examples/gemm/example_gemm.py.)
Printed per example: the kernels traced and the bytes of each part; then the median per kernel.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ONE = r"""
import functools, importlib, json, os, runpy, sys, time
import tilelang
import tilelang.jit as jit
from tilelang import tvm
from tilelang.backend import target as backend_target
from tilelang.jit import kernel as jit_kernel

class Done(Exception):
    pass

TARGET = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
backend_target.register_target_detector("lower-trace-benchmark", lambda: TARGET)  # no GPU to detect
engine_lower = importlib.import_module("tilelang.engine.lower")
if not hasattr(engine_lower, "lower_with_context"):
    engine_lower = sys.modules["tilelang.engine.lower"]
lower_with_context = engine_lower.lower_with_context

TIMES = os.environ.get("LT_BENCH_TIMES")  # benchmarks/examples.py: the first kernel's lowering time goes to this file
timing = False

def settle():  # lower-trace's background work for this kernel done (its worker idle)
    run = getattr(sys.modules.get("lower_trace.api"), "current_run", lambda: None)()
    if run is not None:
        run.worker.wait()

def timed(call):  # the outermost lowering call of the first kernel, timed when TIMES names a file
    @functools.wraps(call)
    def wrapper(*args, **kwargs):
        global timing, TIMES
        if not TIMES or timing:
            return call(*args, **kwargs)
        timing, started, cpu = True, time.perf_counter(), time.process_time()
        try:
            result = call(*args, **kwargs)
        finally:
            timing = False
        lower_ms, lower_cpu_ms = (time.perf_counter() - started) * 1e3, (time.process_time() - cpu) * 1e3
        settle()
        times = dict(lower_ms=lower_ms, lower_cpu_ms=lower_cpu_ms,
                     idle_ms=(time.perf_counter() - started) * 1e3, idle_cpu_ms=(time.process_time() - cpu) * 1e3)
        with open(TIMES, "w") as out:
            json.dump(times, out)
        TIMES = None
        return result
    return wrapper

@timed
def lower_without_nvcc(func, context, enable_host_codegen=False, enable_device_compile=False, **kwargs):
    return lower_with_context(func, context, enable_host_codegen=enable_host_codegen, enable_device_compile=False, **kwargs)

class NoAdapter:  # the kernel is lowered and its compile session closed: stop at its first use
    def __getattr__(self, name):
        raise Done

def lower_only(func=None, *args, **kwargs):
    with TARGET:
        timed(tilelang.lower)(func, target=TARGET)
    raise Done

engine_lower.lower_with_context = lower_without_nvcc
jit_kernel.JITKernel._create_adapter_from_artifact = lambda *args, **kwargs: NoAdapter()
jit_kernel.JITKernel._compile_and_create_adapter = timed(jit_kernel.JITKernel._compile_and_create_adapter)  # its session's close included
jit.compile = tilelang.compile = lower_only
import torch

def on_cpu(factory):
    @functools.wraps(factory)
    def make(*args, **kwargs):
        if "cuda" in str(kwargs.get("device", "")):
            kwargs["device"] = "cpu"
        return factory(*args, **kwargs)
    return make

for name in ("randn", "rand", "randint", "zeros", "ones", "empty", "full", "arange", "tensor", "randn_like", "zeros_like",
             "empty_like", "ones_like", "rand_like", "linspace", "eye", "randperm"):
    if hasattr(torch, name):
        setattr(torch, name, on_cpu(getattr(torch, name)))
torch.Tensor.cuda = lambda self, *args, **kwargs: self
to = torch.Tensor.to
torch.Tensor.to = lambda self, *args, **kwargs: to(
    self, *[("cpu" if "cuda" in str(a) else a) for a in args], **{k: ("cpu" if k == "device" and "cuda" in str(v) else v) for k, v in kwargs.items()})
sys.argv = [sys.argv[1]]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except Done:
    pass
"""

PARTS = ("snapshots.jsonl", "report.html", "trace.jsonl", "edits", "other")


def measure(example: str) -> tuple[int, dict[str, int]] | None:
    trace_dir = tempfile.mkdtemp(prefix="lt-size-")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
        env.update(TL_LOWER_TRACE="html", TL_LOWER_TRACE_DIR=trace_dir, TILELANG_DISABLE_CACHE="1")
        example = os.path.abspath(example)
        subprocess.run([sys.executable, "-c", ONE, example], cwd=os.path.dirname(example), env=env, capture_output=True, timeout=600)
        sizes = dict.fromkeys(PARTS, 0)
        kernels = 0
        for root, _, files in os.walk(trace_dir):
            for name in files:
                path = os.path.join(root, name)
                part = "edits" if f"{os.sep}edits{os.sep}" in path else name if name in sizes else "other"
                sizes[part] += os.path.getsize(path)
                if name == "trace.jsonl":
                    with open(path) as manifest:
                        kernels += sum(1 for line in manifest if line.startswith('{"type": "kernel",'))
        return (kernels, sizes) if kernels else None
    finally:
        shutil.rmtree(trace_dir, ignore_errors=True)


def main() -> int:
    examples = sys.argv[1:]
    if not examples:
        print(__doc__)
        return 2
    print(f"{'example':<40} {'kernels':>7} {'MB/kernel':>9} " + " ".join(f"{part:>15}" for part in PARTS))
    per_kernel = []
    for example in examples:
        found = measure(example)
        name = os.path.relpath(example)[-40:]
        if found is None:
            print(f"{name:<40} {'-':>7}   (no kernel was lowered: see the example's own needs)")
            continue
        kernels, sizes = found
        total = sum(sizes.values())
        per_kernel.append(total / kernels)
        print(f"{name:<40} {kernels:>7} {total / kernels / 1e6:>9.3f} " + " ".join(f"{sizes[part] / kernels / 1e6:>15.3f}" for part in PARTS))
    if per_kernel:
        print(f"\nmedian over {len(per_kernel)} examples: {statistics.median(per_kernel) / 1e6:.3f} MB per kernel (max {max(per_kernel) / 1e6:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
