"""Launches of traced kernels: each call of a compiled TileLang kernel (``JITKernel.__call__``) while
traced, recorded against the compile that made it -- its arguments described (shape, dtype, strides,
device, a digest of the bytes; scalars by value), the tensor arguments again after the call (outputs
are written in place), returned tensors, the call's time and its site. The first ``launch_limit``
launches of each kernel; later ones run untouched. What the call returns, or raises, is the
caller's as without tracing.

A kernel is joined to its compile when TileLang's instrumentation session for it finishes: the
JITKernel compiling itself is the ``self`` of ``_compile_and_create_adapter`` on the stack there (read
off the frame, not wrapped: a compile that fails shows the user no lower-trace frame).
A kernel made elsewhere (TileLang's disk cache, before tracing started) is not traced: its launches
are not recorded, nor are the kernels of a grouped compile (the autotuner's: several kernels in one
session, none of them sure to be the object's). Calls that do not go through ``JITKernel.__call__`` (``kernel.adapter(...)``,
TileLang's profiler) are not seen.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from lower_trace.capture.sink import GetRun, TraceSink
from lower_trace.integrations.adapters.kernel_rebuild import rebuild_of
from lower_trace.integrations.adapters.launch_data import LaunchBudget, file_name, save_tensor
from lower_trace.model import ErrorInfo, LaunchRecord, LaunchValue
from lower_trace.store.layout import digest_of

# Tensors larger than this are described without a digest (reading them costs ~1.3 ms a MiB).
DIGEST_LIMIT = 256 << 20


class LaunchCapture:
    """install() / uninstall(): JITKernel.__call__ wrapped, and put back exactly; join() at a compile's end."""

    def __init__(self, get_run: GetRun, library_dirs: tuple[str, ...]) -> None:
        self._get_run = get_run
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self._skipped = tuple(os.path.join(d, "") for d in (here, *library_dirs))  # frames that are not the caller's
        self._is_skipped: dict[str, bool] = {}  # by code file name
        self._kernel_of: weakref.WeakKeyDictionary[Any, tuple[TraceSink, str]] = weakref.WeakKeyDictionary()  # JITKernel -> (run, kernel id)
        self._names: weakref.WeakKeyDictionary[Any, list[str]] = weakref.WeakKeyDictionary()  # JITKernel -> its call's parameter names
        # Launches seen, per run and kernel id (a run's ids start at k1 again: a run per test, reset()).
        self._counts: weakref.WeakKeyDictionary[TraceSink, dict[str, int]] = weakref.WeakKeyDictionary()
        self._data_left: weakref.WeakKeyDictionary[TraceSink, int] = weakref.WeakKeyDictionary()  # data mode: bytes a run may still keep
        self._originals: tuple[Any, Callable[..., Any]] | None = None

    def install(self) -> None:
        from tilelang.jit.kernel import JITKernel

        call = JITKernel.__call__
        self._originals = (JITKernel, call)
        capture = self

        def launch(kernel: Any, *args: Any, **kwargs: Any) -> Any:
            return capture._launch(call, kernel, args, kwargs)

        setattr(JITKernel, "__call__", launch)  # noqa: B010 (the class's own method, typed)

    def uninstall(self) -> None:
        if self._originals is not None:
            cls, call = self._originals
            setattr(cls, "__call__", call)  # noqa: B010
            self._originals = None

    def join(self, run: TraceSink, kernel_id: str) -> None:
        """The compile of kernel_id has finished: the JITKernel compiling itself (if one is) is its."""
        if not kernel_id or self._originals is None:
            return
        frame = sys._getframe(1)
        compiling = self._originals[0]._compile_and_create_adapter.__code__
        while frame is not None and frame.f_code is not compiling:
            frame = frame.f_back
        self.join_kernel(run, kernel_id, frame.f_locals.get("self") if frame is not None else None, frame)

    def join_kernel(self, run: TraceSink, kernel_id: str, kernel: Any, frame: Any) -> None:
        """kernel (a JITKernel) is kernel_id's: its launches are recorded, how it is rebuilt too. frame: its
        _compile_and_create_adapter's (or the wrapper's around it: the legacy adapter), the stack above it the caller's."""
        if kernel is None or not kernel_id or self._originals is None or run.config.launches == "off":
            return
        self._kernel_of[kernel] = (run, kernel_id)
        try:  # how the kernel can be built again (lower-trace repro --launch); the PrimFunc's JSON in data mode only
            keep = self._keeper(run) if run.config.launches == "data" and run.launch_folder(kernel_id, 0) else None
            run.record_rebuild(rebuild_of(kernel, frame, kernel_id, keep))
        except Exception as exc:
            run.tracer_fault(exc)

    @staticmethod
    def _keeper(run: TraceSink) -> Callable[[str], str]:
        def keep(text: str) -> str:
            digest = digest_of(text)
            run.store_ir(digest, text)
            return digest

        return keep

    def _launch(self, call: Callable[..., Any], kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        run = self._get_run()
        if run is None:
            return call(kernel, *args, **kwargs)
        joined = self._kernel_of.get(kernel)
        if joined is None or joined[0] is not run or run.config.launches == "off":
            return call(kernel, *args, **kwargs)
        counts = self._counts.get(run)
        if counts is None:
            counts = self._counts[run] = {}
        number = counts.get(joined[1], 0) + 1
        if number > run.config.launch_limit:
            return call(kernel, *args, **kwargs)
        counts[joined[1]] = number
        try:
            names = self._names.get(kernel)
            if names is None or len(names) != len(args):
                names = self._names[kernel] = parameter_names(kernel, len(args))
            before = tuple(describe(name, value) for name, value in zip(names, args, strict=True))
            site = self._call_site()
            keeping = self._keeping(run, joined[1], number)
            if keeping is not None:
                before = tuple(keeping.keep("in", v, value) for v, value in zip(before, args, strict=True))
                self._data_left[run] = keeping.budget.run_left
        except Exception as exc:
            run.tracer_fault(exc)
            return call(kernel, *args, **kwargs)
        started = time.perf_counter()
        try:
            result = call(kernel, *args, **kwargs)
        except BaseException as exc:
            ms = (time.perf_counter() - started) * 1e3
            self._record(run, LaunchRecord(joined[1], number, site, round(ms, 4), before, error=ErrorInfo(type(exc).__name__, str(exc))))
            raise
        ms = (time.perf_counter() - started) * 1e3
        try:
            after = tuple(describe(v.name, value) for v, value in zip(before, args, strict=True) if v.kind == "tensor")
            returned = result if isinstance(result, (list, tuple)) else [result]
            after += tuple(describe("return" if i == 0 else f"return.{i}", value) for i, value in enumerate(returned) if is_tensor(value))
            if keeping is not None:
                values = [value for value in args if is_tensor(value)] + [value for value in returned if is_tensor(value)]
                after = tuple(keeping.keep("out", v, value, before) for v, value in zip(after, values, strict=True))
                self._data_left[run] = keeping.budget.run_left
            self._record(run, LaunchRecord(joined[1], number, site, round(ms, 4), before, after))
        except Exception as exc:
            run.tracer_fault(exc)
        return result

    def _keeping(self, run: TraceSink, kernel_id: str, number: int) -> _Keeping | None:
        """Data mode: what keeps this launch's tensors; None in meta mode."""
        if run.config.launches != "data":
            return None
        left = self._data_left.get(run)
        budget = LaunchBudget(run.config.launch_cap, run.config.run_cap if left is None else left)
        return _Keeping(run, run.launch_folder(kernel_id, number), budget)

    def _record(self, run: TraceSink, record: LaunchRecord) -> None:
        try:
            run.record_launch(record)
        except Exception as exc:
            run.tracer_fault(exc)

    def _call_site(self) -> str:
        """file:line of the first frame outside lower-trace and TileLang (an @jit function's call is the user's)."""
        frame = sys._getframe(2)
        while frame is not None:
            file = frame.f_code.co_filename
            skipped = self._is_skipped.get(file)
            if skipped is None:
                skipped = self._is_skipped[file] = os.path.abspath(file).startswith(self._skipped)
            if not skipped:
                return f"{os.path.abspath(file)}:{frame.f_lineno}"
            frame = frame.f_back
        return ""


class _Keeping:
    """One launch's tensors into its folder, as the budget allows; each record says where, or why not."""

    def __init__(self, run: TraceSink, folder: str, budget: LaunchBudget) -> None:
        self.run, self.folder, self.budget = run, folder, budget

    def keep(self, when: str, value: LaunchValue, tensor: Any, before: tuple[LaunchValue, ...] = ()) -> LaunchValue:
        if value.kind != "tensor":
            return value
        same = next((b for b in before if b.name == value.name and b.data and b.digest and b.digest == value.digest), None)
        if same is not None:  # an input the call did not write: its file already
            return replace(value, data=same.data)
        if not self.folder:
            return replace(value, note=_joined(value.note, "not kept: this run writes no trace (terminal mode)"))
        size = tensor.numel() * tensor.element_size()
        why = self.budget.why_not(size, self.run.config.run_cap)
        if why:
            return replace(value, note=_joined(value.note, why))
        name = file_name(when, value.name)
        self.budget.spend(save_tensor(self.folder, name, tensor))
        return replace(value, data="/".join((*self.folder.replace(os.sep, "/").split("/")[-2:], name)))


def _joined(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


def parameter_names(kernel: Any, count: int) -> list[str]:
    """The names of the parameters a call passes, in order: the kernel's parameters (a buffer's name
    for a buffer) less its out_idx outputs, which TileLang allocates; arg0, arg1, ... when they disagree."""
    func = getattr(kernel, "prim_func", None)
    names: list[str] = []
    if func is not None:
        buffers = func.buffer_map
        names = [str(buffers[p].name) if p in buffers else str(p.name) for p in func.params]
        outputs = {i % len(names) for i in (getattr(kernel, "out_idx", None) or ())} if names else set()
        names = [name for i, name in enumerate(names) if i not in outputs]
    return names if len(names) == count else [f"arg{i}" for i in range(count)]


def is_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def describe(name: str, value: Any) -> LaunchValue:
    if is_tensor(value):
        return _tensor(name, value)
    if isinstance(value, (bool, int, float)):
        return LaunchValue(name, "scalar", value=value)
    return LaunchValue(name, "scalar", value=repr(value)[:200], note=f"a {type(value).__name__}, kept as its repr")


def _tensor(name: str, tensor: Any) -> LaunchValue:
    shape, strides = tuple(int(n) for n in tensor.shape), tuple(int(n) for n in tensor.stride())
    dtype, device = str(tensor.dtype).removeprefix("torch."), str(tensor.device)
    size = tensor.numel() * tensor.element_size()
    if size > DIGEST_LIMIT:
        return LaunchValue(name, "tensor", shape, dtype, strides, device, note=f"no digest: {size} bytes, over {DIGEST_LIMIT}")
    return LaunchValue(name, "tensor", shape, dtype, strides, device, digest=tensor_digest(tensor))


def tensor_digest(tensor: Any) -> str:
    """blake2b (16 bytes) of the tensor's elements in row-major order, as bytes (any dtype, any strides)."""
    torch = sys.modules["torch"]
    data = tensor.detach().contiguous().reshape(-1).cpu()
    return hashlib.blake2b(data.view(torch.uint8).numpy(), digest_size=16).hexdigest()
