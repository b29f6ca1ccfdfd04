"""Rerunning a pass outside the compile that ran it: its input as TVM's own JSON (which keeps
TileLang IR whole, spans too, and whose layouts tilelang_layout_restore.py brings back
exactly; TVMScript text does not parse back), how to build the pass from Python (with the
arguments ir_reading/pass_calls.py recorded), and the target and pass configs it ran under.

Used by capture (the input of a failed pass; of every pass with TL_LOWER_TRACE_REPLAY=1)
and by ``lower-trace replay``. Every TVM import of this is here, in the integrations.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import subprocess
import sys
import threading
from typing import Any

try:  # TileLang's TVM is importable once TileLang is (and its passes registered)
    import tilelang  # noqa: F401
except ImportError:
    pass
import tvm

from lower_trace.integrations.ir_reading.stack_walk import FactoryRef
from lower_trace.integrations.reruns.pass_factories import ANONYMOUS, FACTORY_MODULES
from lower_trace.model import PassBuild, PassCall


class JSONBroken(RuntimeError):
    """TVM's JSON writer cannot be used in this environment."""


_PROBE = """
try:
    import tilelang
except ImportError:
    pass
import tvm
ns = getattr(tvm, "tirx", None) or tvm.tir
text = tvm.ir.save_json(tvm.ir.IRModule({}).with_attr("probe", ns.const(1, "int32")))
assert tvm.ir.load_json(text) is not None
"""


_probe_lock = threading.Lock()
_probed: list[str] = []


def json_problem() -> str:
    """Why TVM's JSON cannot be used here ("" when it can); see _probe. Callers wait for one probe."""
    with _probe_lock:
        if not _probed:
            _probed.append(_probe())
        return _probed[0]


def probe_soon() -> None:
    """Start the check on a thread now (replay mode needs it at the first pass: the program's own
    imports hide most of its time)."""
    threading.Thread(target=json_problem, name="lower-trace-json-probe", daemon=True).start()


def _probe() -> str:
    """Why TVM's JSON cannot be used here ("" when it can). Checked once per process, in a child
    interpreter: some TVM builds crash the process in save_json (apache-tvm 0.27.0.post1 with
    apache-tvm-ffi 0.1.15.post2 segfaults on any node), which must never happen to the user's."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("TL_LOWER_TRACE")}
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"TVM's JSON writer could not be checked ({type(exc).__name__}: {exc})"
    if done.returncode == 0:
        return ""
    how = f"the process died with signal {-done.returncode}" if done.returncode < 0 else "it raised"
    versions = ", ".join(f"{name} {version}" for name, version in _versions().items())
    return f"TVM's JSON writer (tvm.ir.save_json) is broken in this environment ({versions}: {how} on a one-node module)"


def _versions() -> dict[str, str]:
    from importlib import metadata

    found = {}
    for name in ("tilelang", "apache-tvm", "apache-tvm-ffi"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def module_json(mod: Any) -> str:
    problem = json_problem()
    if problem:
        raise JSONBroken(problem)
    return tvm.ir.save_json(mod)


def load_module(text: str) -> tuple[Any, str]:
    """The module TVM's JSON holds, its TileLang layouts restored exactly (tilelang_layout_restore);
    and a note, "" unless something could not be restored."""
    from lower_trace.integrations.reruns.tilelang_layout_restore import restore_layouts

    return restore_layouts(tvm.ir.load_json(text), text)


def print_module(mod: Any) -> str:
    """As capture prints a snapshot (TVMIR.print_ir), so a rerun compares with the record."""
    return mod.script()


@functools.cache
def find_factory(name: str) -> FactoryRef | None:
    """The factory that builds the pass TVM calls `name`, with no arguments; None when no
    factory of that name builds it so (it needs arguments, or lives only in C++)."""
    short = name.rsplit(".", 1)[-1]
    for module_name in FACTORY_MODULES:
        try:
            module = importlib.import_module(module_name)
        except Exception:
            continue
        factory = getattr(module, short, None)
        if not callable(factory):
            continue
        try:
            built: Any = factory()
            made = str(built.info.name)
        except Exception:
            continue
        # A pass made from a plain function is called pass_fn; the trace named it after its factory.
        if made == name or (made in ANONYMOUS and short == name):
            return FactoryRef(module_name, short)
    return None


def pass_build(name: str, call: PassCall | None, nested_in: str = "") -> PassBuild | str:
    """How to build the pass `name` again: with the arguments Python built it with (call), else by
    its factory with none; a one-line reason when it cannot be built."""
    if call is not None:
        if call.problem:
            return f"{name} cannot be built again: {call.problem}"
        return PassBuild(name, call.expression, call.imports)
    factory = find_factory(name)
    if factory is not None:
        return PassBuild(name, f"{factory.module}.{factory.name}()", (factory.module,))
    if nested_in:
        return f"{name} cannot be built from Python: {nested_in}'s C++ code built it, and no Python line says with what"
    return f"{name} cannot be built from Python: no factory of that name builds it without arguments, and no call with arguments was recorded"


def build_pass(build: PassBuild) -> Any:
    """The pass, made by its recorded Python expression."""
    namespace: dict[str, Any] = {"tvm": tvm, "json": json, "importlib": importlib}
    for module_name in build.imports:
        importlib.import_module(module_name)
        top = module_name.split(".", 1)[0]
        namespace.setdefault(top, sys.modules[top])
    return eval(build.expression, namespace)  # written by pass_calls.describe: literals, targets, module paths


def config_value(value: Any) -> Any:
    """A PassContext config value as plain Python (bool, int, float, str, a list of them), for a script or JSON."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) or type(value).__name__ == "Array":
        return [config_value(item) for item in value]  # tl.device_compile_flags: a list, not its repr
    dtype = str(getattr(value, "dtype", ""))
    inner = getattr(value, "value", None)
    if dtype == "bool" and inner is not None:
        return bool(inner)
    if isinstance(inner, (int, float, str)):
        return inner
    return str(value)


def current_context() -> dict[str, Any]:
    """The target (with its host, as TVM's JSON) and the typed pass configs now in force."""
    target = tvm.target.Target.current(allow_none=True)
    try:
        config = {str(key): config_value(value) for key, value in tvm.transform.PassContext.current().config.items()}
    except Exception:
        config = {}
    return {"target": target_json(target) if target is not None else "", "configs": config}


def target_json(target: Any) -> str:
    """The target (and its host) as JSON that tvm.target.Target(json.loads(...)) rebuilds; older
    TVMs print a target as a repr, so it is built from target.export()."""
    try:
        return json.dumps(_plain(target.export()))
    except Exception:
        text = str(target)
        json.loads(text)  # 0.25+ prints JSON itself; anything else cannot be rebuilt
        return text


def _plain(value: Any) -> Any:
    """TVM containers and scalars as plain JSON values."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "export") and hasattr(value, "kind"):
        return _plain(value.export())  # a nested Target: the host
    if hasattr(value, "items"):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "Array":
        return [_plain(item) for item in value]
    return config_value(value)


def run_pass(build: PassBuild, mod: Any, context: dict[str, Any]) -> Any:
    """The pass run alone on mod, under the recorded target and pass configs."""
    target = context.get("target") or ""
    with tvm.transform.PassContext(config=dict(context.get("configs") or {})):
        if target:
            with tvm.target.Target(json.loads(target)):
                return build_pass(build)(mod)
        return build_pass(build)(mod)
