"""The nvcc flags and include paths TileLang compiles a CUDA kernel with, for `lower-trace device`.

The same options TileLang's CUDA callback gives nvcc (tilelang/cuda/backend.py on 0.1.15,
tilelang/contrib/nvcc.py's defaults before it): C++20, its templates and CUTLASS on the include
path, fast math and the register usage level when the kernel's pass configs asked for them.
"""
from __future__ import annotations

import shlex
from typing import Any

from lower_trace.integrations.nvcc.arch import sass_arch

_FAST_MATH = "tl.enable_fast_math"
_REGISTER_LEVEL = "tl.ptxas_register_usage_level"
_DEVICE_FLAGS = "tl.device_compile_flags"


def tilelang_nvcc_flags(target: str, pass_configs: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the arch flags, the other options) for a kernel compiled for `target` (its text, as the
    trace keeps it). Raises ImportError when TileLang is not installed (its headers are needed)."""
    from tilelang import env as tl_env

    sm = sass_arch(target)
    if not sm:
        raise ValueError(f"target {target!r} names no sm_ architecture to compile for")
    arch = [f"-arch={sm}"]  # as TileLang's callback writes one SASS arch
    options = ["-std=c++20", "-I" + str(tl_env.TILELANG_TEMPLATE_PATH), "-I" + str(tl_env.CUTLASS_INCLUDE_DIR)]
    extra = pass_configs.get(_DEVICE_FLAGS)
    if extra:
        options += shlex.split(str(extra)) if isinstance(extra, str) else [str(flag) for flag in extra]
    if str(pass_configs.get(_FAST_MATH, "")).lower() in ("1", "true"):
        options.append("--use_fast_math")
    level = pass_configs.get(_REGISTER_LEVEL)
    if level not in (None, "", "None"):
        options.append(f"--ptxas-options=--register-usage-level={int(str(level))}")
    return arch, options
