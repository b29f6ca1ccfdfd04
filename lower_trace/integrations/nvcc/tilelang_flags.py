"""The nvcc flags and include paths TileLang compiles a CUDA kernel with, for `lower-trace device`.

The options TileLang's CUDA callback gives nvcc (tilelang/cuda/backend.py on 0.1.15,
tilelang/engine/lower.py on 0.1.9-0.1.13): its C++ standard (C++17 before 0.1.10, C++20 since),
its templates and CUTLASS on the include path, then what the kernel's pass configs ask for, in
TileLang's order:

- ``tl.device_compile_flags``: a string split as a shell would, or a list whose strings are each
  split so (``tilelang.compile(compile_flags=...)`` ends up here too);
- ``tl.enable_fast_math``: ``--use_fast_math`` when true (off by default since 0.1.7);
- ``tl.ptxas_register_usage_level``: ``--ptxas-options=--register-usage-level=N``;
- ``tl.enable_ptxas_verbose_output`` (0.1.8-0.1.11; later releases read TILELANG_VERBOSE, which a
  trace does not record): ``--ptxas-options=--verbose -w``, which change no code.

The configs are JSON values (the trace's typed context), or, in a trace from before it recorded
them, the text TVM printed (``"T.bool(True)"``, ``"T.int32(2)"``, ``"2"``), read back here.
testing/integration/test_device_flags.py checks each against TileLang's own nvcc call.
"""
from __future__ import annotations

import re
import shlex
from typing import Any

from lower_trace.analysis.configs import config_from_text
from lower_trace.integrations.nvcc.arch import sass_arch

FAST_MATH = "tl.enable_fast_math"
REGISTER_LEVEL = "tl.ptxas_register_usage_level"
DEVICE_FLAGS = "tl.device_compile_flags"
PTXAS_VERBOSE = "tl.enable_ptxas_verbose_output"

_TRUE_TEXT = ("1", "true", "yes", "on")


def tilelang_nvcc_flags(target: str, pass_configs: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the arch flags, the other options) for a kernel compiled for `target` (its text, as the
    trace keeps it) under `pass_configs`. Raises ImportError when TileLang is not installed (its
    headers are needed), ValueError for a target without an sm_ arch or a config nvcc cannot take."""
    import tilelang
    from tilelang import env as tl_env

    sm = sass_arch(target)
    if not sm:
        raise ValueError(f"target {target!r} names no sm_ architecture to compile for")
    arch = [f"-arch={sm}"]  # as TileLang's callback writes one SASS arch
    std = "-std=c++17" if _release(str(getattr(tilelang, "__version__", ""))) < (0, 1, 10) else "-std=c++20"
    options = [std, "-I" + str(tl_env.TILELANG_TEMPLATE_PATH), "-I" + str(tl_env.CUTLASS_INCLUDE_DIR)]
    return arch, options + config_options(pass_configs)


def config_options(configs: dict[str, Any]) -> list[str]:
    """The nvcc options TileLang adds for these pass configs, in the order it adds them."""
    options = extra_flags(configs.get(DEVICE_FLAGS))
    if is_on(configs.get(FAST_MATH)):
        options.append("--use_fast_math")
    level = register_level(configs.get(REGISTER_LEVEL))
    if level is not None:
        options.append(f"--ptxas-options=--register-usage-level={level}")
    if is_on(configs.get(PTXAS_VERBOSE)):
        options += ["--ptxas-options=--verbose", "-w"]
    return options


def plain(value: Any) -> Any:
    """A config value as JSON would hold it: text TVM printed is read back (T.bool(True) -> True)."""
    return config_from_text(value.strip()) if isinstance(value, str) else value


def is_on(value: Any) -> bool:
    """A switch as TileLang reads it (bool(value)); printed text by what it says, not by being text."""
    value = plain(value)
    if isinstance(value, str):  # not TVM's form: "True", "false", "0"
        return value.strip().lower() in _TRUE_TEXT
    return bool(value)


def register_level(value: Any) -> int | None:
    """The register usage level (TileLang's int(value)), None when unset."""
    value = plain(value)
    if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
        return None
    if isinstance(value, (bool, int)):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ValueError(f"{REGISTER_LEVEL} is {value!r}, not a whole number")


def extra_flags(value: Any) -> list[str]:
    """tl.device_compile_flags as nvcc arguments: a string split as a shell would, and so each
    string of a list; anything else in a list as its text."""
    value = plain(value)
    if not value:
        return []
    if isinstance(value, str):
        return shlex.split(value)
    if not isinstance(value, (list, tuple)):
        return [str(value)]
    tokens: list[str] = []
    for flag in value:
        tokens += shlex.split(flag) if isinstance(flag, str) else [str(flag)]
    return tokens


def _release(version: str) -> tuple[int, ...]:
    """(0, 1, 15) from "0.1.15", "0.1.15.post1+cu128"; a version it cannot read counts as the newest."""
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    return tuple(int(part) for part in found.groups()) if found else (1 << 30,)
