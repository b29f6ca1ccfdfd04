"""The device stage's shapes: what nvcc/ptxas (or hipcc) made of a kernel's generated source.

Below model.py (which holds them on its kernel records) and imported by every layer above; it
imports nothing of the package. A HIP build fills the same shapes: its resource names (VGPRs,
SGPRs, LDS, scratch) go in FunctionResources.extra, its ISA in DeviceRecord.sass.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class FunctionResources:
    """One kernel function's resource usage, as the assembler reports it (ptxas --verbose)."""

    function: str
    registers: int = 0
    spill_stores: int = 0  # bytes
    spill_loads: int = 0  # bytes
    stack: int = 0  # bytes of stack frame per thread
    shared_static: int = 0  # bytes of static shared memory ("smem")
    constant: int = 0  # bytes of constant bank 0 ("cmem[0]")
    barriers: int = 0
    extra: tuple[tuple[str, int], ...] = ()  # what another assembler reports besides (HIP: vgpr, sgpr, ...)


@dataclass(frozen=True)
class LaunchShape:
    """How the kernel is launched, read off its final TIR."""

    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    dynamic_shared: int = 0  # bytes

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


@dataclass(frozen=True)
class Occupancy:
    """Theoretical occupancy on one SM by the CUDA occupancy rules (analysis/device/occupancy.py)."""

    arch: str
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limiter: str  # threads, blocks per SM, registers, shared memory (ties: "threads and registers"); "does not fit" when 0
    why: str = ""  # when blocks_per_sm == 0: which per-block limit is exceeded


@dataclass(frozen=True)
class DeviceRecord:
    """A device compile of one kernel's generated source (trace.jsonl "device")."""

    kernel: str
    seq: int  # the codegen record (its seq) whose source was compiled
    how: str  # "capture" (TileLang's own compile, traced) or "on demand" (lower-trace device)
    arch: str  # sm_90a, gfx942, ...
    language: str = "cuda"
    tool: str = ""  # "nvcc 13.0.88"
    command: tuple[str, ...] = ()  # the compiler's command line
    source: str = ""  # digest of the source compiled
    source_name: str = ""  # its file name in the compile (what line records name)
    edited: bool = False  # an edited working copy was compiled, not the fresh codegen
    ptx: str = ""  # digest of the PTX
    binary: str = ""  # digest of the cubin, stored as base64 text
    sass: str = ""  # digest of the SASS (nvdisasm -gi)
    diagnostics: str = ""  # what the assembler printed besides its resource lines
    functions: tuple[FunctionResources, ...] = ()
    ms: float = 0.0
    error: str = ""  # one line: why this stage is incomplete (a compile error, a missing tool)

    def function(self, name: str = "") -> FunctionResources | None:
        """The named kernel function, else the one with the most registers (the kernel)."""
        for resources in self.functions:
            if resources.function == name:
                return resources
        return max(self.functions, key=lambda r: r.registers, default=None)


def device_from_json(data: dict[str, Any]) -> DeviceRecord:
    """A "device" record read back; ValueError/TypeError on one of the wrong shape."""
    names = {f.name for f in fields(DeviceRecord)}
    values = {key: value for key, value in data.items() if key in names}
    for key in ("kernel", "how", "arch", "language", "tool", "source", "source_name", "ptx", "binary", "sass", "diagnostics", "error"):
        if not isinstance(values.get(key, ""), str):
            raise ValueError(f"device record: {key} is not a string")
    values["command"] = tuple(str(item) for item in values.get("command") or ())
    values["functions"] = tuple(_resources_from(item) for item in values.get("functions") or ())
    values["seq"] = int(values.get("seq", 0))
    return DeviceRecord(**values)


def _resources_from(data: dict[str, Any]) -> FunctionResources:
    known = {f.name for f in fields(FunctionResources)}
    values = {key: value for key, value in data.items() if key in known}
    values["function"] = str(values.get("function", ""))
    for key in known - {"function", "extra"}:
        values[key] = int(values.get(key, 0))
    values["extra"] = tuple((str(name), int(count)) for name, count in values.get("extra") or ())
    return FunctionResources(**values)


@dataclass(frozen=True)
class DeviceSummary:
    """One kernel's device stage as the views show it (analysis/device/summary.py)."""

    kernel_id: str
    name: str
    variant: str  # what tells it apart in a sweep (its working copy, else its launch shape)
    record: DeviceRecord
    resources: FunctionResources | None
    launch: LaunchShape | None
    occupancy: Occupancy | None
    counts: tuple[tuple[str, int], ...] = ()  # instruction counts by kind (SASS); () before disassembly
