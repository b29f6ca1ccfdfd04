"""SASS instructions put back on a CUDA line that can have produced them.

nvcc's line table (nvdisasm's ``//## File`` records) is written after ptxas has scheduled the
code, and it puts some instructions on lines that cannot have made them: a GEMM's HGMMA on its
loop head or on an ``mbarrier[...].arrive()``, where only a ``wgmma`` call makes one. For the
instruction classes below, whose source is a call the generated CUDA names, an instruction whose
line does not name that call is given the nearest line that does, and nvcc's line is kept beside
it (``ListingLine.nvcc_line``). An instruction whose line can have made it is left alone.

"Nearest" is decided per class, in this order:

- A class with a fence (the GMMAs: ``WARPGROUP.ARRIVE``, warpgroup_arrive's ``wgmma.fence``,
  which ptxas keeps ahead of the wgmma it orders): the first line that can, at or after the CUDA
  line of the closest preceding fence in the same function. A batch's wgmma calls follow its
  warpgroup_arrive in the source; the instruction stream alone misleads, since nvcc also puts
  HGMMAs of one batch on another batch's wgmma line (flash attention's P·V HGMMAs on Q·K's).
- Else: the line of the closest preceding instruction of the same function whose own (nvcc's)
  line can produce it (it consumes what that line computed: a TMA load's coordinates), else of
  the closest following one. None in the function: nvcc's line stays.

nvcc's inlined-at chain offers nothing better: in every kernel measured (docs/usage.md) each
record group's chain ends at the line the group's last record names, never at a second CUDA line.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from lower_trace.analysis.device.sass import ListingLine


@dataclass(frozen=True)
class Producer:
    """Instructions (by opcode) that only a CUDA line whose text matches `call` can make."""

    name: str
    opcodes: frozenset[str]
    call: re.Pattern[str]
    fence: re.Pattern[str] | None = None  # an instruction ptxas keeps ahead of every one of the class


# The classes whose calls the generated CUDA names. Looked at on real kernels (docs/usage.md): the
# HMMA and LDGSTS of sm_80 GEMM and flash attention, and every UTMALDG measured, all sit on lines
# naming their call; HGMMAs do not. tl::gemm_* is TileLang's whole-GEMM template (wgmma or mma inside).
PRODUCERS: tuple[Producer, ...] = (
    Producer("wgmma", frozenset({"HGMMA", "IGMMA", "QGMMA", "BGMMA"}), re.compile(r"wgmma|\btl::gemm_"), re.compile(r"\bWARPGROUP\.ARRIVE\b")),
    Producer("mma", frozenset({"HMMA"}), re.compile(r"(?<!wg)mma|\btl::gemm_")),
    Producer("tma_load", frozenset({"UTMALDG"}), re.compile(r"tma_load")),
    Producer("tma_store", frozenset({"UTMASTG"}), re.compile(r"tma_store")),
    Producer("cp_async", frozenset({"LDGSTS"}), re.compile(r"cp_async|cp\.async")),
)
_BY_OPCODE = {opcode: producer for producer in PRODUCERS for opcode in producer.opcodes}


def producer_of(opcode: str) -> Producer | None:
    """The rule an opcode falls under (None: any line may have made it)."""
    return _BY_OPCODE.get(opcode)


def reattribute(lines: Sequence[ListingLine], source: Sequence[str]) -> list[ListingLine]:
    """The listing with each instruction whose nvcc line cannot have produced it moved to the
    nearest line that can (nvcc's kept as `nvcc_line`); every other line as it was."""
    cache: dict[tuple[str, int], bool] = {}

    def can(producer: Producer, number: int) -> bool:
        key = (producer.name, number)
        if key not in cache:
            cache[key] = 0 < number <= len(source) and bool(producer.call.search(source[number - 1]))
        return cache[key]

    out = list(lines)
    for index, item in enumerate(lines):
        producer = producer_of(item.opcode)
        if producer is None or not item.line or can(producer, item.line):
            continue
        fits = functools.partial(can, producer)
        better = _after_fence(lines, index, producer.fence, fits, len(source)) if producer.fence else 0
        better = better or _nearest(lines, index, fits)
        if better:
            out[index] = replace(item, line=better, nvcc_line=item.line, location="")  # the header location was nvcc line's
    return out


def _after_fence(lines: Sequence[ListingLine], index: int, fence: re.Pattern[str], fits: Callable[[int], bool], last: int) -> int:
    """The first line that fits at or after the line of the closest fence before `index` in its function; 0: none."""
    function = lines[index].function
    at = index - 1
    while at >= 0 and lines[at].function == function:
        if lines[at].opcode and fence.search(lines[at].text):
            start = lines[at].line
            return next((n for n in range(start, last + 1) if fits(n)), 0) if start else 0
        at -= 1
    return 0


def _nearest(lines: Sequence[ListingLine], index: int, fits: Callable[[int], bool]) -> int:
    """The line of the closest instruction before `index` (else after it) in the same function whose line fits; 0: none."""
    function = lines[index].function
    for step in (-1, 1):
        at = index + step
        while 0 <= at < len(lines) and lines[at].function == function:
            if lines[at].opcode and fits(lines[at].line):
                return lines[at].line
            at += step
    return 0

