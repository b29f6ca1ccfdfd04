"""Theoretical occupancy: how many blocks of a kernel one SM holds at once.

The rules are those of CUDA's header-only calculator (cuda_occupancy.h,
cudaOccMaxActiveBlocksPerMultiprocessor), for a kernel that opted in to the largest
shared memory per block and a device set to the largest shared memory carveout. The
numbers per arch are the CUDA C++ Programming Guide's "Technical Specifications per
Compute Capability" table; the allocation units, sub-partitions and carveout steps come
from cuda_occupancy.h.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from lower_trace.device_model import Occupancy

KB = 1024


@dataclass(frozen=True)
class ArchLimits:
    """One compute capability's per-SM and per-block limits (shared memory in bytes)."""

    name: str  # "sm_90"
    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm: int  # the largest carveout
    max_shared_per_block: int  # the opt-in maximum (cudaFuncAttributeMaxDynamicSharedMemorySize)
    reserved_shared_per_block: int  # the driver's per-block reservation, on top of what the kernel asks
    shared_alloc_unit: int
    max_threads_per_block: int = 1024
    regs_per_sm: int = 64 * KB
    max_regs_per_block: int = 64 * KB
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256  # registers, per warp
    warp_size: int = 32
    sub_partitions: int = 4  # registers are split evenly between the SM's warp schedulers

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


def _limits(cc: int, threads: int, blocks: int, shared_sm_kb: int, shared_block_kb: int) -> ArchLimits:
    # From sm_80 on the driver reserves 1 KB per block and shared memory is allocated in
    # 128-byte units; Volta and Turing reserve nothing and allocate in 256-byte units.
    ampere_on = cc >= 80
    return ArchLimits(
        name=f"sm_{cc}", max_threads_per_sm=threads, max_blocks_per_sm=blocks,
        shared_per_sm=shared_sm_kb * KB, max_shared_per_block=shared_block_kb * KB,
        reserved_shared_per_block=KB if ampere_on else 0, shared_alloc_unit=128 if ampere_on else 256,
    )


# compute capability: threads/SM, blocks/SM, shared KB/SM, opt-in shared KB/block
_ARCHS: dict[int, ArchLimits] = {
    cc: _limits(cc, *row)
    for cc, row in {
        70: (2048, 32, 96, 96),
        75: (1024, 16, 64, 64),
        80: (2048, 32, 164, 163),
        86: (1536, 16, 100, 99),
        87: (1536, 16, 164, 163),
        89: (1536, 24, 100, 99),
        90: (2048, 32, 228, 227),
        100: (2048, 32, 228, 227),
        103: (2048, 32, 228, 227),
        120: (1536, 24, 100, 99),
    }.items()
}

_ARCH_NAME = re.compile(r"(?:sm_|compute_)?(\d{2,3})[af]?", re.IGNORECASE)


def arch_limits(arch: str) -> ArchLimits | None:
    """The limits of "sm_90a", "sm_90", "compute_90a", "90", ...; None for an arch not in the table."""
    m = _ARCH_NAME.fullmatch(arch.strip())
    return _ARCHS.get(int(m.group(1))) if m else None


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(arch: str, threads_per_block: int, registers_per_thread: int, shared_bytes_per_block: int) -> Occupancy | None:
    """Active blocks per SM; shared_bytes_per_block is static + dynamic as the kernel asks. None: unknown arch."""
    lim = arch_limits(arch)
    if lim is None:
        return None
    if threads_per_block <= 0 or registers_per_thread < 0 or shared_bytes_per_block < 0:
        raise ValueError(f"occupancy: bad launch ({threads_per_block} threads, {registers_per_thread} registers, {shared_bytes_per_block} bytes shared)")
    warps = -(-threads_per_block // lim.warp_size)  # a partial warp takes a whole warp's slot and registers
    regs_per_warp = _round_up(registers_per_thread * lim.warp_size, lim.reg_alloc_unit)
    # The launch check assumes every sub-partition gets as many warps as the fullest one.
    regs_checked = regs_per_warp * _round_up(warps, lim.sub_partitions)
    shared = _round_up(shared_bytes_per_block + lim.reserved_shared_per_block, lim.shared_alloc_unit)

    why = ""
    if threads_per_block > lim.max_threads_per_block:
        why = f"{threads_per_block} threads per block > {lim.max_threads_per_block}"
    elif registers_per_thread > lim.max_regs_per_thread:
        why = f"{registers_per_thread} registers per thread > {lim.max_regs_per_thread}"
    elif regs_checked > lim.max_regs_per_block:
        why = f"{regs_checked} registers per block ({registers_per_thread}/thread, {warps} warps) > {lim.max_regs_per_block}"
    elif shared > lim.max_shared_per_block + lim.reserved_shared_per_block:
        why = (f"{shared_bytes_per_block} bytes of shared memory per block > {lim.max_shared_per_block}"
               f" (the opt-in maximum on {lim.name})")
    if why:
        return Occupancy(arch, 0, 0, lim.max_warps_per_sm, "does not fit", why)

    # Each sub-partition holds the warps its quarter of the register file fits; a block's
    # warps may spread over all of them.
    regs_blocks = (lim.regs_per_sm // lim.sub_partitions // regs_per_warp * lim.sub_partitions // warps) if regs_per_warp else None
    # Every block that fits the opt-in maximum fits the largest carveout, which is then what
    # the SM holds (cudaOccMaxBlocksPerSMSmemLimit with SHAREDMEM_CARVEOUT_MAX_SHARED).
    shared_blocks = lim.shared_per_sm // shared if shared else None
    candidates = [
        ("threads", lim.max_warps_per_sm // warps),
        ("blocks per SM", lim.max_blocks_per_sm),
        ("registers", regs_blocks),
        ("shared memory", shared_blocks),
    ]
    blocks = min(n for _, n in candidates if n is not None)
    # Every factor that allows no more (as cudaOccResult.limitingFactors flags them): where two tie,
    # easing one alone would not help, so both are named.
    limiter = " and ".join(name for name, n in candidates if n == blocks)
    return Occupancy(arch, blocks, blocks * warps, lim.max_warps_per_sm, limiter)
