"""The arguments a pass was built with, so that replay and reproducers can build it again.

TVM's pass records name a pass, not its arguments (``tl.ThreadSync`` runs twice in TileLang's
CUDA pipeline, as ``ThreadSync("shared")`` and ``ThreadSync("shared.dyn")``). When Python itself
called a pass (``mod = Factory(args)(mod)``), the calling line says how it was built: each
argument is evaluated again in the caller's frame as the pass starts and written down as
Python source that makes the same value -- a literal, the compile's target, the current pass
context, a module-level function. Only the lines of TileLang and TVM themselves are evaluated
whatever they hold (their helpers, ``have_pdl(target)``, are queries); on a user's line only
arguments that call nothing (names, attributes, literals).
"""

from __future__ import annotations

import json
import sys
from types import FrameType
from typing import Any

import tvm

from lower_trace.integrations.ir_reading.stack_walk import CallShape, FactoryRef
from lower_trace.integrations.reruns.pass_factories import FACTORY_MODULES
from lower_trace.model import PassCall


def recorded_call(shape: CallShape, frame: FrameType, library: bool) -> PassCall | None:
    """The PassCall of the factory call `shape` in `frame`; None when the factory cannot be found."""
    try:
        factory = eval(shape.factory_code, frame.f_globals, frame.f_locals)  # names and attributes only
    except Exception:
        return None
    where = _importable(factory)
    if where is None:
        return None
    name = where.name
    imports = {where.module}
    factory_path = _path(where)
    args: list[str] = []
    kwargs: list[tuple[str, str]] = []
    problem = ""
    for position, arg in enumerate(shape.args):
        label = arg.keyword or f"{position + 1}"
        if not (library or shape.simple):
            text, why = "", f"argument {label} of {name} ({arg.source}) calls a function on your line, which lower-trace does not run again"
        else:
            try:
                value = eval(arg.code, frame.f_globals, frame.f_locals)
            except Exception as exc:
                text, why = "", f"argument {label} of {name} ({arg.source}) could not be evaluated again ({type(exc).__name__})"
            else:
                text, why = describe(value, imports)
                why = why and f"argument {label} of {name} ({arg.source}) is {why}"
        problem = problem or why
        if arg.keyword:
            kwargs.append((arg.keyword, text))
        else:
            args.append(text)
    return PassCall(factory_path, tuple(args), tuple(kwargs), tuple(sorted(imports)), problem)


def _path(where: FactoryRef) -> str:
    """Python that names module.name: the dotted path, or importlib's where an attribute of the
    package hides the module (tilelang.engine.lower is the function lower, not the module)."""
    module_name, name = where
    found: Any = sys.modules.get(module_name.split(".", 1)[0])
    for part in module_name.split(".")[1:]:
        found = getattr(found, part, None)
    if found is sys.modules.get(module_name):
        return f"{module_name}.{name}"
    return f"importlib.import_module({module_name!r}).{name}"


def _importable(obj: object) -> FactoryRef | None:
    """Where an import gets obj back: a public factory module of TileLang or TVM where one holds
    it, else obj's own module."""
    name = getattr(obj, "__qualname__", "") or getattr(obj, "__name__", "")
    if not name or "<" in name:
        return None
    for module_name in FACTORY_MODULES:  # only those imported already: nothing is imported here
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, name, None) is obj:
            return FactoryRef(module_name, name)
    module_name = getattr(obj, "__module__", "")
    try:
        found: Any = sys.modules[module_name]
        for part in name.split("."):
            found = getattr(found, part)
    except Exception:
        return None
    return FactoryRef(module_name, name) if found is obj else None


_TARGETS: dict[str, str] = {}  # what a target prints as -> the Python that makes it again


def _target_source(target: Any) -> str:
    """tvm.target.Target({...}) for a target. A script compiles many kernels for one target (a new
    object each time): its export, the dearest part of writing arguments down, is done once."""
    key = str(target)
    found = _TARGETS.get(key)
    if found is None:
        from lower_trace.integrations.reruns.replay import target_json

        if len(_TARGETS) > 32:
            _TARGETS.clear()
        found = _TARGETS[key] = f"tvm.target.Target({json.loads(target_json(target))!r})"
    return found


def describe(value: Any, imports: set[str]) -> tuple[str, str]:
    """(Python source that makes value again, "" -- or "", what it is when it cannot be written)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value), ""
    if isinstance(value, (list, tuple)):
        parts = [describe(item, imports) for item in value]
        problem = next((why for _, why in parts if why), "")
        if problem:
            return "", problem
        inner = ", ".join(text for text, _ in parts)
        return (f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(parts) == 1 else ''})"), ""
    if isinstance(value, tvm.target.Target):
        imports.add("tvm")
        return _target_source(value), ""
    if isinstance(value, tvm.transform.PassContext):
        imports.add("tvm")
        return "tvm.transform.PassContext.current()", ""
    if type(value).__name__ in ("IntImm", "FloatImm", "StringImm", "Bool"):
        from lower_trace.integrations.reruns.replay import config_value

        return repr(config_value(value)), ""  # T.bool(True) -> True, as configs are read
    where = _importable(value) if callable(value) else None
    if where is not None:
        imports.add(where.module)
        return _path(where), ""
    if callable(value) and "<" in getattr(value, "__qualname__", ""):
        made = f"{value.__qualname__} in {getattr(value, '__module__', '?')}"
        return "", f"a function made while the compile ran ({made}), which cannot be written down"
    return "", f"a {type(value).__name__}, which lower-trace cannot write down"
