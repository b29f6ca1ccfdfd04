"""Where NVIDIA's tools are: PATH, CUDA_HOME/bin, /usr/local/cuda/bin, and the pip wheels
(nvidia-cuda-nvdisasm, nvidia-cuda-cuobjdump put theirs under site-packages/nvidia/*/bin)."""
from __future__ import annotations

import functools
import glob
import importlib.util
import os
import shutil
import subprocess

from lower_trace.config import cuda_home_folders

# What to install when a tool is missing.
_HOW_TO_GET = {
    "nvcc": "install the CUDA toolkit (nvcc) or put it on PATH",
    "ptxas": "install the CUDA toolkit (ptxas comes with nvcc) or put it on PATH",
    "nvdisasm": "pip install nvidia-cuda-nvdisasm",
    "cuobjdump": "pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm",
}


class ToolMissing(RuntimeError):
    """A tool the device stage needs is not installed; the message says how to get it."""


@functools.cache
def find_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for folder in cuda_home_folders():
        candidate = os.path.join(folder, "bin", name)
        if os.access(candidate, os.X_OK):
            return candidate
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for candidate in sorted(glob.glob(os.path.join(root, "*", "bin", name))):
            if os.access(candidate, os.X_OK):
                return candidate
    return None


def require(name: str, for_what: str) -> str:
    """The tool's path, or ToolMissing saying what it is for and how to get it."""
    path = find_tool(name)
    if path is None:
        raise ToolMissing(f"{for_what} needs {name}, which is not on PATH, in CUDA_HOME/bin or in a pip wheel: {_HOW_TO_GET[name]}")
    return path


@functools.cache
def tool_version(path: str) -> str:
    """"nvcc 13.0.88" from `nvcc --version`'s last release line ("" when it says nothing readable)."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    for line in reversed(out.splitlines()):
        if ", V" in line:
            return f"{os.path.basename(path)} {line.rsplit(', V', 1)[1].strip()}"
    return ""
