"""A kernel's launch shape, read off the final TIR's printed text (what codegen was handed)."""
from __future__ import annotations

import re

from lower_trace.device_model import LaunchShape

_THREAD = re.compile(r'launch_thread\("(blockIdx|threadIdx)\.([xyz])",\s*(\d+)\)')
_DYN_ATTR = re.compile(r'"dyn_shared_memory_buf":\s*(\d+)')
_DYN_BUFFER = re.compile(r'alloc(?:ate|_buffer)\(\(?\[?(\d+),?\)?\]?,\s*"uint8",\s*(?:scope=)?"shared\.dyn"')


def launch_shape(tir: str) -> LaunchShape | None:
    """Grid, block and dynamic shared memory of the (one) device kernel in a TIR module's text;
    None when the text launches no thread (a host-only or CPU module). A thread extent that is
    not a constant is not counted (it stays 1)."""
    extents = {"blockIdx": [1, 1, 1], "threadIdx": [1, 1, 1]}
    found = False
    for kind, axis, extent in _THREAD.findall(tir):
        extents[kind]["xyz".index(axis)] = int(extent)
        found = True
    if not found:
        return None
    attr = _DYN_ATTR.search(tir)
    dynamic = int(attr.group(1)) if attr else sum(int(size) for size in _DYN_BUFFER.findall(tir))
    grid, block = extents["blockIdx"], extents["threadIdx"]
    return LaunchShape(grid=(grid[0], grid[1], grid[2]), block=(block[0], block[1], block[2]), dynamic_shared=dynamic)
