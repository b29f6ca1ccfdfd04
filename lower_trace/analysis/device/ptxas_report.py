"""ptxas --verbose output -> each kernel function's resources (FunctionResources), and the rest.

The lines read (ptxas 12 and 13)::

    ptxas info    : Compiling entry function 'gemm_kernel' for 'sm_90a'
    ptxas info    : Function properties for gemm_kernel
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 240 registers, used 1 barriers, 1024 bytes smem, 904 bytes cmem[0]

Anything else that is not an "info" line (warnings, errors) is the diagnostics.
"""
from __future__ import annotations

import re

from lower_trace.device_model import FunctionResources

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_FIELDS = (
    ("barriers", re.compile(r"used (\d+) barriers")),
    ("shared_static", re.compile(r"(\d+) bytes smem")),
    ("constant", re.compile(r"(\d+) bytes cmem\[0\]")),
)


def parse_ptxas_report(output: str) -> tuple[tuple[FunctionResources, ...], str]:
    """(the entry functions' resources in the order ptxas compiled them, the diagnostics)."""
    entries: dict[str, dict[str, int]] = {}
    frames: dict[str, dict[str, int]] = {}  # "Function properties" come for device functions too
    current = ""  # the function the next "Used" line is about
    properties = ""  # the function the next stack-frame line is about
    diagnostics: list[str] = []
    for line in output.splitlines():
        if match := _ENTRY.search(line):
            current = match.group(1)
            entries.setdefault(current, {})
        elif match := _PROPERTIES.search(line):
            properties = match.group(1)
        elif match := _FRAME.search(line):
            stack, stores, loads = (int(group) for group in match.groups())
            frames[properties] = {"stack": stack, "spill_stores": stores, "spill_loads": loads}
        elif match := _USED.search(line):
            values = {"registers": int(match.group(1))}
            for name, pattern in _FIELDS:
                if found := pattern.search(line):
                    values[name] = int(found.group(1))
            if current in entries:
                entries[current].update(values)
        elif line.strip() and not line.startswith("ptxas info"):
            diagnostics.append(line)
    functions = tuple(_resources(name, {**frames.get(name, {}), **values}) for name, values in entries.items())
    return functions, "\n".join(diagnostics)


def _resources(name: str, values: dict[str, int]) -> FunctionResources:
    return FunctionResources(
        function=name, registers=values.get("registers", 0), spill_stores=values.get("spill_stores", 0), spill_loads=values.get("spill_loads", 0),
        stack=values.get("stack", 0), shared_static=values.get("shared_static", 0), constant=values.get("constant", 0), barriers=values.get("barriers", 0),
    )  # fmt: skip
