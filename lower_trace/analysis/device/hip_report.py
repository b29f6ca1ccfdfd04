"""hipcc/clang's ``-Rpass-analysis=kernel-resource-usage`` remarks -> FunctionResources (HIP).

The remarks (LLVM's AMDGPU backend; TileLang's HIP compile passes the flag)::

    remark: kernel.cpp:12:0: Function Name: main_kernel
    remark: kernel.cpp:12:0:     VGPRs: 9
    remark: kernel.cpp:12:0:     ScratchSize [bytes/lane]: 0
    ...

The same shape as CUDA's: VGPRs are `registers`, scratch is `stack`, LDS `shared_static`; every
number the remarks give is also kept under its own name in `extra` (AMD's spill counts are
registers, not bytes, so they are not `spill_stores`).
"""
from __future__ import annotations

import re

from lower_trace.device_model import FunctionResources

_REMARK = re.compile(r"remark: [^:]*:\d+:\d+:\s+(?P<key>[A-Za-z][A-Za-z ]*?)(?: \[[^\]]*\])?:\s+(?P<value>\S+)")
# What the remarks call each number -> our name for it.
_NAMES = {
    "SGPRs": "sgpr", "TotalSGPRs": "sgpr", "VGPRs": "vgpr", "AGPRs": "agpr", "ScratchSize": "scratch",
    "Occupancy": "waves_per_simd", "SGPRs Spill": "sgpr_spill", "VGPRs Spill": "vgpr_spill", "LDS Size": "lds",
}  # fmt: skip


def parse_hip_report(output: str) -> tuple[FunctionResources, ...]:
    """Each kernel the remarks name, in their order; lines that are no remark are ignored."""
    found: list[tuple[str, dict[str, int]]] = []
    for line in output.splitlines():
        match = _REMARK.search(line)
        if not match:
            continue
        key, value = match.group("key").strip(), match.group("value")
        if key == "Function Name":
            found.append((value, {}))
        elif found and key in _NAMES and value.isdigit():
            found[-1][1][_NAMES[key]] = int(value)
    return tuple(_resources(name, values) for name, values in found)


def _resources(name: str, values: dict[str, int]) -> FunctionResources:
    return FunctionResources(
        function=name, registers=values.get("vgpr", 0), stack=values.get("scratch", 0), shared_static=values.get("lds", 0),
        extra=tuple(sorted(values.items())),
    )
