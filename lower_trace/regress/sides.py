"""The two sides of lower-trace regress: an interpreter (a venv with its own TileLang) and the pass
configs forced on every compile of that side. Each interpreter is asked, before anything runs,
whether it is one, which TileLang it has, whether lower-trace is installed in it (its startup hook
and pytest plugin do the tracing there) and whether it knows the configs given: a bad side is one
line that says what to do, not two half-finished runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lower_trace.integrations.reruns import side_probe


class SideError(Exception):
    """A side cannot be run as given (one line, what to do)."""


@dataclass(frozen=True)
class SideSpec:
    label: str  # "base" or "head"
    python: str  # the interpreter, as the user named it
    configs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Interpreter:
    """What a side's interpreter has, as it says itself."""

    python: str  # absolute path
    tilelang: str  # its version
    configs: dict[str, Any]  # the configs forced on its compiles, as given
    plugin: bool = True  # lower-trace's pytest plugin is registered there (else pytest is given -p)


def parse_configs(items: Sequence[str], option: str) -> dict[str, Any]:
    """K=V items; V read as JSON where it is (true, 3, "x"), else as text."""
    configs: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SideError(f"{option} {item!r}: write KEY=VALUE, e.g. {option} tl.disable_warp_specialized=true")
        try:
            configs[key.strip()] = json.loads(value)
        except ValueError:
            configs[key.strip()] = value
    return configs


def probe(spec: SideSpec, option: str, also: Sequence[SideSpec] = ()) -> Interpreter:
    """Ask the side's interpreter what it has; SideError (one line) when it cannot be a side.
    also: other sides with the same interpreter, whose configs are checked in the same call."""
    python = resolve(spec.python, option)
    wanted = [[side.label, key, value] for side in (*also, spec) for key, value in side.configs.items()]
    try:
        proc = subprocess.run([python, side_probe.__file__, json.dumps(wanted)], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SideError(f"{option} {spec.python}: cannot be run ({exc}); name a Python interpreter, e.g. .venvs/tilelang-0.1.13/bin/python") from None
    try:
        found = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise SideError(f"{option} {spec.python}: not a Python interpreter that answers (exit {proc.returncode}); name one, e.g. venv/bin/python") from None
    if "tilelang" not in found:
        why = found.get("tilelang_error", "no module")
        raise SideError(f"{option} {spec.python}: has no TileLang ({why}); pip install tilelang into it, or name a venv that has it")
    if not found.get("lower_trace"):
        raise SideError(f"{option} {spec.python}: has no lower-trace, which traces its compiles there; pip install lower-trace into it")
    for owner, key in found.get("unknown") or []:
        raise SideError(f"{flag_of(owner)} {key}: TileLang {found['tilelang']} at {python} knows no such pass config; see tilelang.transform.PassConfigKey")
    values = {(side.label, key): value for side in (*also, spec) for key, value in side.configs.items()}
    for owner, key, declared, why in found.get("mistyped") or []:
        raise SideError(mistyped(owner, key, values.get((owner, key)), declared, found["tilelang"], why))
    return Interpreter(python, found["tilelang"], dict(spec.configs), bool(found.get("plugin")))


# What each type TVM registers configs with takes, as written after KEY= (read as JSON).
_TAKES = {"ir.IntImm": "true/false or an integer", "ir.FloatImm": "a number", "str": "text", "ffi.String": "text", "ffi.Array": "a JSON list"}


_KINDS = ((str, "text"), (bool, "true/false"), (int, "an integer"), (float, "a number"), (list, "a list"), (dict, "an object"))


def mistyped(owner: str, key: str, value: Any, declared: str, tilelang: str, why: str) -> str:
    """One line: the option, the key, the value as given, the type TileLang declares, TVM's reason."""
    given = json.dumps(value) if not isinstance(value, str) or _is_json(value) else value  # as written (parse_configs read it)
    kind = next((name for cls, name in _KINDS if isinstance(value, cls)), "null")
    takes = _TAKES.get(declared, "a JSON object of its fields")
    return f"{flag_of(owner)} {key}={given}: TileLang {tilelang} declares {key} as {declared} ({takes}), not {kind} (TVM: {why})"


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def flag_of(label: str) -> str:
    return f"--{label}-config"


def resolve(python: str, option: str) -> str:
    """The interpreter's path: as given when it is a path, else found on PATH."""
    if os.sep in python:
        if not os.path.isfile(python):
            raise SideError(f"{option} {python}: no such file; name a Python interpreter, e.g. .venvs/tilelang-0.1.13/bin/python")
        return os.path.abspath(python)
    found = shutil.which(python)
    if found is None:
        raise SideError(f"{option} {python}: not found on PATH; name a Python interpreter by its path")
    return found
