"""Lower every kernel one TileLang example compiles, to CUDA sm_90a on the CPU, and stop it where it
would need a GPU (no nvcc, no launch). Used by benchmarks/examples_corpus.py (a fresh interpreter per
example) and benchmarks/test_examples_corpus.py (in the pytest process, patches undone after).

    python benchmarks/corpus_harness.py EXAMPLE.py RESULT.json SOURCES_DIR

How: TileLang's compile (`tilelang.jit.cached`, which `tilelang.compile` and `@tilelang.jit` reach
with the kernel's own pass configs merged in) is replaced by `tilelang.lower` under a PassContext
holding those configs and the sm_90a target; it returns a stand-in kernel whose source is real and
whose launch returns zero-filled outputs (shapes and dtypes from the PrimFunc's out_idx buffers), so
the example goes on to compile its next kernels (a backward pass after its forward one). Checks and
timings cannot mean anything then: torch.testing.assert_close, torch.allclose, TileLang's do_bench
and the kernel's profiler are stand-ins too. Anything else a kernel is asked for stops the example.
Tensors the example puts on "cuda" stay on the CPU. LT_CORPUS_PASSES=DIR also writes each pass's output (TVM's own PassInstrument) under
DIR/<kernel number>/, for finding the first pass where two processes part.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import os
import re
import runpy
import signal
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any

TARGET = {"kind": "cuda", "arch": "sm_90a"}
DETECTOR = "lower-trace-corpus"
FACTORIES = ("randn", "rand", "randint", "zeros", "ones", "empty", "full", "arange", "tensor", "randn_like", "zeros_like",
             "empty_like", "ones_like", "rand_like", "full_like", "linspace", "eye", "randperm", "as_tensor", "empty_strided")


class Stop(BaseException):
    """The example reached something that needs the GPU (a BaseException: examples catch Exception)."""


class LowerFailed(BaseException):
    """tilelang.lower raised on a kernel: the example stops there."""


class TimedOut(BaseException):
    pass


@dataclass
class Kernel:
    name: str
    sha256: str = ""
    source: str = ""  # file name under the sources folder
    tir_sha256: str = ""  # of the final device TIR (mod.script()): variation may show there only
    ms: float = 0.0
    error: str = ""


@dataclass
class Result:
    example: str
    status: str = "running"  # lowered | lower-failed | skipped | no-kernel | timeout
    reason: str = ""
    seconds: float = 0.0
    kernels: list[Kernel] = field(default_factory=list)


def last_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else type(exc).__name__)[:300]


def _kernel_name(func: Any) -> str:
    attrs = getattr(func, "attrs", None)
    if attrs is not None and "global_symbol" in attrs:
        return str(attrs["global_symbol"])
    return "main"


class _PassWriter:
    """Each pass's output module as TVMScript, one file per pass (depth-first start order)."""

    def __init__(self, folder: str):
        from tilelang import tvm

        self.folder, self.count = folder, 0
        os.makedirs(folder, exist_ok=True)
        writer = self

        @tvm.ir.instrument.pass_instrument
        class Writer:
            def run_after_pass(self, mod, info):
                writer.count += 1
                name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(info.name))
                with open(os.path.join(writer.folder, f"{writer.count:03d}_{name}.py"), "w") as out:
                    out.write(mod.script())

        self.instrument = Writer()


class Lowering(contextlib.AbstractContextManager):
    """TileLang and torch patched so that compiling lowers (and records) and using a kernel stops."""

    def __init__(self, result: Result, sources: str, on_kernel=None, passes: str | None = None):
        self.result, self.sources, self.on_kernel, self.passes = result, sources, on_kernel, passes
        self._undo: list[tuple[Any, str, Any]] = []
        self._lock = threading.Lock()

    def _set(self, owner: Any, name: str, value: Any) -> None:
        self._undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def __enter__(self):
        import tilelang
        import torch
        from tilelang import tvm
        from tilelang.backend import target as backend_target

        self.target = tvm.target.Target(TARGET)
        backend_target.register_target_detector(DETECTOR, lambda: self.target, override=True)  # no GPU to detect
        self._detectors = backend_target
        jit = importlib.import_module("tilelang.jit")  # the module: tilelang.jit the attribute is the decorator
        self._set(jit, "cached", self._compile)
        for name in FACTORIES:
            if hasattr(torch, name):
                self._set(torch, name, _on_cpu(getattr(torch, name)))
        self._set(torch.Tensor, "cuda", lambda tensor, *args, **kwargs: tensor)
        to = torch.Tensor.to
        self._set(torch.Tensor, "to", lambda tensor, *args, **kwargs: to(
            tensor, *[_cpu(a) for a in args], **{k: _cpu(v) if k == "device" else v for k, v in kwargs.items()}))
        self._set(torch.cuda, "get_device_capability", lambda *args, **kwargs: (9, 0))
        self._set(torch.cuda, "synchronize", lambda *args, **kwargs: None)
        # the stand-ins' zero outputs would fail every check: checks pass, timings are a constant
        self._set(torch.testing, "assert_close", lambda *args, **kwargs: None)
        self._set(torch, "allclose", lambda *args, **kwargs: True)
        for module_name in ("tilelang.profiler", "tilelang.profiler.bench"):
            module = importlib.import_module(module_name)
            if hasattr(module, "do_bench"):
                self._set(module, "do_bench", lambda *args, **kwargs: 1.0)
        self.tilelang = tilelang
        return self

    def __exit__(self, *exc):
        for owner, name, value in reversed(self._undo):
            setattr(owner, name, value)
        self._undo.clear()
        getattr(self._detectors, "_TARGET_DETECTORS", {}).pop(DETECTOR, None)
        return False

    def _compile(self, func=None, out_idx=None, *args, pass_configs=None, **kwargs):
        from tilelang import tvm

        with self._lock:  # autotuners compile from threads: one kernel at a time, numbered in order
            kernel = Kernel(_kernel_name(func))
            number = len(self.result.kernels)
            self.result.kernels.append(kernel)
            instruments = [_PassWriter(os.path.join(self.passes, f"{number:03d}")).instrument] if self.passes else []
            started = time.perf_counter()
            try:
                with tvm.transform.PassContext(opt_level=3, config=dict(pass_configs or {}), instruments=instruments), self.target:
                    artifact = self.tilelang.lower(func, target=self.target)
            except Exception as exc:
                kernel.error = last_line(exc)
                raise LowerFailed(kernel.error) from exc
            finally:
                kernel.ms = (time.perf_counter() - started) * 1e3
                if self.on_kernel:
                    self.on_kernel(self.result)
            source = artifact.kernel_source or ""
            device = getattr(artifact, "device_mod", None)
            tir = device.script() if device is not None else ""
            kernel.sha256 = hashlib.sha256(source.encode()).hexdigest()
            kernel.tir_sha256 = hashlib.sha256(tir.encode()).hexdigest()
            kernel.source = f"{number:03d}_{re.sub(r'[^A-Za-z0-9._-]+', '_', kernel.name)[:60]}.cu"
            os.makedirs(self.sources, exist_ok=True)
            with open(os.path.join(self.sources, kernel.source), "w") as out:
                out.write(source)
            with open(os.path.join(self.sources, kernel.source[:-3] + ".tir.py"), "w") as out:
                out.write(tir)
            if self.on_kernel:
                self.on_kernel(self.result)
            return StandIn(kernel.name, source, func, out_idx)


class StandIn:
    """What the example gets instead of a compiled kernel: its source; a launch returns zero outputs."""

    def __init__(self, name: str, source: str, func: Any = None, out_idx: Any = None):
        self._name, self._source, self._func = name, source, func
        self._out = [] if out_idx is None else [out_idx] if isinstance(out_idx, int) else list(out_idx)

    def get_kernel_source(self, *args, **kwargs) -> str:
        return self._source

    def get_profiler(self, *args, **kwargs) -> _Profiler:
        return _Profiler(self)

    def __call__(self, *args, **kwargs):
        if self._func is None:
            raise Stop(f"launches kernel {self._name}")
        params = list(self._func.params)
        outs = [i % len(params) for i in self._out]
        known: dict[str, int] = {}  # symbolic sizes, from the inputs' shapes
        for param, arg in zip((p for i, p in enumerate(params) if i not in outs), args, strict=False):
            buffer = self._func.buffer_map.get(param)
            shape = getattr(arg, "shape", None)
            if buffer is not None and shape is not None and len(shape) == len(buffer.shape):
                for dim, size in zip(buffer.shape, shape, strict=True):
                    if not hasattr(dim, "value"):
                        known.setdefault(str(dim), int(size))
        made = [_zeros(self._func.buffer_map[params[i]], known, self._name) for i in outs]
        return None if not made else made[0] if len(made) == 1 else made

    def __getattr__(self, name: str):
        raise Stop(f"uses kernel.{name}")


class _Profiler:
    """A kernel's profiler: checks pass, timings are a constant (nothing runs)."""

    def __init__(self, kernel: StandIn):
        self._kernel = kernel

    def assert_allclose(self, *args, **kwargs) -> None:
        return None

    def do_bench(self, *args, **kwargs) -> float:
        return 1.0

    def run_once(self, *args, **kwargs) -> None:
        return None

    def __getattr__(self, name: str):
        raise Stop(f"uses profiler.{name}")


def _zeros(buffer: Any, known: dict[str, int], kernel: str):
    import torch

    shape = []
    for dim in buffer.shape:
        if hasattr(dim, "value"):
            shape.append(int(dim.value))
        elif str(dim) in known:
            shape.append(known[str(dim)])
        else:
            raise Stop(f"launches kernel {kernel}: output {buffer.name} has a size no input tells ({dim})")
    name = str(buffer.dtype)
    dtype = {"float8_e4m3": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2, "bool": torch.bool}.get(name, getattr(torch, name, None))
    return torch.zeros(shape, dtype=dtype if isinstance(dtype, torch.dtype) else torch.float32)


def _cpu(value: Any) -> Any:
    return "cpu" if "cuda" in str(value) else value


def _on_cpu(factory):
    @functools.wraps(factory)
    def make(*args, **kwargs):
        if "device" in kwargs:
            kwargs["device"] = _cpu(kwargs["device"])
        return factory(*args, **kwargs)
    return make


@contextlib.contextmanager
def _alarm(seconds: float | None):
    """TimedOut after `seconds` (main thread only; elsewhere the caller's own timeout applies)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(*_):
        raise TimedOut(f"no end within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_example(example: str, sources: str, timeout: float | None = None, on_kernel=None, passes: str | None = None) -> Result:
    """Run one example (its folder as cwd and first on sys.path) under Lowering; restore what it changed."""
    example = os.path.abspath(example)
    folder = os.path.dirname(example)
    result = Result(example)
    os.environ["TILELANG_DISABLE_CACHE"] = "1"
    saved_argv, saved_path, saved_cwd, saved_modules = sys.argv[:], sys.path[:], os.getcwd(), set(sys.modules)
    started = time.perf_counter()
    try:
        sys.argv, sys.path = [example], [folder, *sys.path]
        os.chdir(folder)
        with _alarm(timeout), Lowering(result, sources, on_kernel, passes):
            runpy.run_path(example, run_name="__main__")
    except Stop as stop:
        result.reason = str(stop)
    except LowerFailed as failed:
        result.status, result.reason = "lower-failed", str(failed)
    except TimedOut as late:
        result.status, result.reason = "timeout", str(late)
    except (Exception, SystemExit) as exc:  # any error of the example's own: its last line is the reason
        result.reason = last_line(exc)
        if os.environ.get("LT_CORPUS_DEBUG"):
            traceback.print_exc()
    finally:
        result.seconds = time.perf_counter() - started
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)
        for name in set(sys.modules) - saved_modules:  # the example's own modules (sibling files share names across folders)
            module_file = getattr(sys.modules[name], "__file__", None) or ""
            if module_file.startswith(folder + os.sep):
                del sys.modules[name]
    if result.status == "running":
        lowered = [k for k in result.kernels if k.sha256]
        result.status = "lowered" if lowered else "skipped" if result.reason else "no-kernel"
    return result


def save(result: Result, path: str) -> None:
    temp = path + ".tmp"
    with open(temp, "w") as out:
        json.dump(asdict(result), out, indent=1)
    os.replace(temp, path)


def load(path: str) -> Result:
    with open(path) as data:
        raw = json.load(data)
    raw["kernels"] = [Kernel(**k) for k in raw["kernels"]]
    return Result(**raw)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    example, out, sources = (os.path.abspath(a) for a in args)
    save(Result(example), out)
    # kept on disk as each kernel is lowered: a child killed at its timeout still tells what it did
    result = run_example(example, sources, on_kernel=lambda partial: save(partial, out), passes=os.environ.get("LT_CORPUS_PASSES"))
    save(result, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
