"""Data mode: a launch's tensors kept as ``.npy`` files (numpy's format, read with ``allow_pickle=False``:
loading one runs no code), within a byte budget a launch and a run. A dtype numpy has (float32, int8,
bool, ...) is written as itself; one it lacks (bfloat16, float8) as the unsigned integers of its width,
the record's dtype saying what the bytes are (``torch.from_numpy(a).view(torch.bfloat16)``)."""

from __future__ import annotations

import os
import sys
from typing import Any

from lower_trace.config import ENV_LAUNCH_CAP
from lower_trace.store.paths import safe_component

_SAME_WIDTH = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}


def mib(size: int) -> str:
    """256 bytes, 1.5 KiB, 64 MiB, 1 GiB."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.4g} {unit}"
    return f"{size} bytes"


class LaunchBudget:
    """What one launch may still keep, and the run's own budget (shared by its launches)."""

    def __init__(self, launch_cap: int, run_left: int) -> None:
        self.launch_cap, self.launch_left, self.run_left = launch_cap, launch_cap, run_left
        self.run_cap_hit = False

    def why_not(self, size: int, run_cap: int) -> str:
        """"" when size bytes fit; else why not (a note for the record)."""
        if size > self.launch_cap:
            return f"not kept: {mib(size)}, over what a launch keeps ({mib(self.launch_cap)}; {ENV_LAUNCH_CAP})"
        if size > self.launch_left:
            return f"not kept: {mib(size)}, over what is left of the launch's {mib(self.launch_cap)} ({ENV_LAUNCH_CAP})"
        if size > self.run_left:
            self.run_cap_hit = True
            return f"not kept: {mib(size)}, over what is left of the run's {mib(run_cap)} ({ENV_LAUNCH_CAP})"
        return ""

    def spend(self, size: int) -> None:
        self.launch_left -= size
        self.run_left -= size


def save_tensor(folder: str, file_name: str, tensor: Any) -> int:
    """The tensor's elements (row-major) into folder/file_name (.npy); its bytes."""
    import numpy

    torch = sys.modules["torch"]
    data = tensor.detach().contiguous().cpu()
    try:
        array = data.numpy()
    except TypeError:  # a dtype numpy has not: its bytes as unsigned integers of the same width
        array = data.view(getattr(torch, _SAME_WIDTH[data.element_size()])).numpy()
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, file_name), "wb") as handle:
        numpy.save(handle, array, allow_pickle=False)
    return int(array.nbytes)


def file_name(when: str, name: str) -> str:
    """in-A.npy, out-C.npy, out-return.npy."""
    return f"{when}-{safe_component(name, 'tensor')}.npy"
