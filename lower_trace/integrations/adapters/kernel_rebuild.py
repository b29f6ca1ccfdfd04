"""How a traced TileLang kernel object can be built again outside the program that made it, read where
its compile ends (launches.py's join): TileLang's compile arguments off the JITKernel, the
``@tilelang.jit`` factory call off the stack (the ``JITImpl.compile`` frame: which function, of which
file, called with what), and in data mode the PrimFunc handed to lowering as TVM JSON. What
``lower-trace repro --launch`` writes its scripts from (integrations/reruns/launch_repro.py).

A factory argument is kept as Python source text that evaluates to it (numbers, strings, None, tuples and
lists of them, TileLang and torch dtypes); one that has none leaves the factory out and says why.
"""

from __future__ import annotations

import json
import sys
from types import FrameType
from typing import Any

from lower_trace.model import KernelRebuild


def rebuild_of(kernel: Any, frame: FrameType | None, kernel_id: str, keep_prim_func: Any) -> KernelRebuild:
    """kernel: the JITKernel; frame: its _compile_and_create_adapter frame (the factory is above it);
    keep_prim_func(json_text) -> digest, or None when the PrimFunc is not kept."""
    factory, note = _factory(frame)
    prim_func = ""
    if keep_prim_func is not None and getattr(kernel, "prim_func", None) is not None:
        import tvm

        prim_func = keep_prim_func(tvm.ir.save_json(kernel.prim_func))
    return KernelRebuild(kernel_id, compile_arguments(kernel, frame), factory, note, prim_func, _versions())


def compile_arguments(kernel: Any, frame: FrameType | None) -> dict[str, Any]:
    """What tilelang.compile was given, as JSON: the target as TVM's JSON for it (Target(dict) reads it back).
    out_idx as JITKernel.__init__ was handed it (the kernel has no adapter to ask yet)."""
    caller = frame.f_back if frame is not None else None
    out_idx = (caller if caller is not None and caller.f_code.co_name == "__init__" else frame).f_locals.get("out_idx") if frame is not None else None
    configs = getattr(kernel, "pass_configs", None) or {}
    target_host = getattr(kernel, "target_host", None)
    flags = list(getattr(kernel, "compile_flags", None) or [])
    attrs = getattr(getattr(kernel, "prim_func", None), "attrs", None) or {}
    if "tilelang_out_idx" in attrs:  # an eager function's T.empty outputs: tilelang.compile reads them off the PrimFunc, and refuses them twice
        out_idx = None
    if "tilelang_compile_flags" in attrs:  # likewise added from the PrimFunc again
        flags = flags[len(list(attrs["tilelang_compile_flags"])) :]
    return {
        "out_idx": list(out_idx) if isinstance(out_idx, (list, tuple)) else out_idx,
        "target": _target(getattr(kernel, "target", None)),
        "target_host": _target(target_host),
        "execution_backend": str(getattr(kernel, "execution_backend", "") or ""),
        "pass_configs": {str(k): _json_value(v) for k, v in configs.items()},
        "compile_flags": flags,
    }


def _target(target: Any) -> Any:
    """A TVM Target as the dict Target() takes back (its JSON); its string where that does not read."""
    if target is None:
        return None
    try:
        return json.loads(str(target))
    except ValueError:  # an older TVM prints a Target as its repr: its export() is the dict
        try:
            return _plain(target.export())
        except Exception:
            return str(target)


def _plain(value: Any) -> Any:
    """TVM's containers (Map, Array) as JSON's: what Target() takes back."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "Array":
        return [_plain(v) for v in value]
    return str(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return str(value)


def _factory(frame: FrameType | None) -> tuple[dict[str, Any], str]:
    """The @tilelang.jit call that compiled the kernel: (file, module, name, args, kwargs), or ({}, why not)."""
    impl_class = getattr(sys.modules.get("tilelang.jit"), "JITImpl", None)  # the module: tilelang.jit may name the decorator
    if impl_class is None:
        return {}, "this TileLang's @tilelang.jit is not one lower-trace reads (JITImpl)"
    compiling = impl_class.compile.__code__
    while frame is not None and frame.f_code is not compiling:
        frame = frame.f_back
    if frame is None:
        return {}, "it was compiled by tilelang.compile, not by calling a @tilelang.jit function"
    impl, args, kwargs = frame.f_locals.get("self"), frame.f_locals.get("args", ()), frame.f_locals.get("kwargs", {})
    if getattr(impl, "mode", "") == "eager":
        return {}, "its @tilelang.jit function is eager-style (called with tensors)"
    func = getattr(getattr(impl, "func", None), "orig_func", getattr(impl, "func", None))
    code = getattr(func, "__code__", None)
    module_name = getattr(func, "__module__", "") or ""
    if code is None:
        return {}, "its @tilelang.jit function is not a Python function"
    module = sys.modules.get(module_name)
    name = next((k for k, v in vars(module).items() if v is impl), None) if module is not None else None
    if name is None:
        return {}, f"its @tilelang.jit function {getattr(func, '__qualname__', '?')} is not a name at the top of {code.co_filename}"
    texts = [source_text(v) for v in args]
    named = {str(k): source_text(v) for k, v in kwargs.items()}
    missing = next((i for i, t in enumerate(texts) if t is None), None)
    if missing is not None:
        return {}, f"argument {missing + 1} of {name}(...) is a {type(args[missing]).__name__}, which has no source text"
    bad = next((k for k, t in named.items() if t is None), None)
    if bad is not None:
        return {}, f"argument {bad}= of {name}(...) is a {type(kwargs[bad]).__name__}, which has no source text"
    return {"file": code.co_filename, "module": module_name, "name": name, "args": texts, "kwargs": named}, ""


def source_text(value: Any) -> str | None:
    """Python source that evaluates to value in a script that imports torch and tilelang.language as T; None when none."""
    kind = type(value)
    if kind.__name__ in ("dtype", "DataType") and kind.__module__.startswith(("tvm", "tilelang")):
        return f"T.dtype({str(value)!r})"  # before str: TileLang's dtype is a str
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if value == value and value not in (float("inf"), float("-inf")) else f"float({str(value)!r})"
    if isinstance(value, (list, tuple)):
        items = [source_text(v) for v in value]
        if any(t is None for t in items):
            return None
        inside = ", ".join(t for t in items if t is not None)
        return f"[{inside}]" if isinstance(value, list) else f"({inside}{',' if len(items) == 1 else ''})"
    if kind.__module__ == "torch" and kind.__name__ == "dtype":
        return str(value)  # torch.float16
    return None


def _versions() -> dict[str, str]:
    versions = {}
    for name in ("tilelang", "torch"):
        module = sys.modules.get(name)
        if module is not None:
            versions[name] = str(getattr(module, "__version__", ""))
    return versions
