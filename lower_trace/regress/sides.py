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

from lower_trace.integrations import side_probe


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


def probe(spec: SideSpec, option: str, owners: dict[str, str] | None = None) -> Interpreter:
    """Ask the side's interpreter what it has; SideError (one line) when it cannot be a side.
    owners: which side's option gave each config (one interpreter asked for both sides)."""
    python = resolve(spec.python, option)
    try:
        proc = subprocess.run([python, side_probe.__file__, json.dumps(sorted(spec.configs))], capture_output=True, text=True, timeout=300)
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
    unknown = found.get("unknown") or []
    if unknown:
        owner = (owners or {}).get(unknown[0], spec.label)
        raise SideError(
            f"{flag_of(owner)} {unknown[0]}: TileLang {found['tilelang']} at {python} knows no such pass config; see tilelang.transform.PassConfigKey"
        )
    return Interpreter(python, found["tilelang"], dict(spec.configs), bool(found.get("plugin")))


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
