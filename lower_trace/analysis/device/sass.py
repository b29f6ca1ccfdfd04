"""nvdisasm -gi listings and PTX: each instruction's CUDA line, and instruction counts by kind.

nvdisasm -gi writes a line record before the instructions it covers, the innermost location
first and the chain it was inlined through after it::

    //## File "/…/intrin.h", line 149 inlined at "/tmp/…/tvm_kernels.cu", line 29
    //## File "/tmp/…/tvm_kernels.cu", line 29
            /*0a80*/                   HGMMA.64x128x16.F32 R24, gdesc[UR8].tnspB, R24 ;

PTX says the same with ``.loc FILE LINE COL[, function_name …, inlined_at FILE LINE COL]``
against its ``.file N "path"`` table. An instruction's line in the generated source is the
last record that names that file, as its own location or as the place it was inlined at;
the innermost location (a TileLang or CUTLASS header) is kept beside it.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass

from lower_trace.analysis.text_diff import split_lines

_SASS_RECORD = re.compile(r'//## File "([^"]*)", line (\d+)(?: inlined at "([^"]*)", line (\d+))?')
_SASS_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")
_SASS_FUNCTION = re.compile(r"^\s*\.text\.([^:\s]+):")
_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(?:.*inlined_at\s+(\d+)\s+(\d+))?")

# What `diff` and the kernel views count, by SASS opcode (the part before the first dot); each
# label names exactly the opcodes it counts (docs/usage.md lists them).
KINDS: dict[str, tuple[str, ...]] = {
    "HGMMA/HMMA": ("HGMMA", "HMMA", "IMMA", "QGMMA", "IGMMA", "BGMMA", "UTCHMMA", "UTCQMMA", "UTCIMMA"),  # tensor cores
    "LDG/STG": ("LDG", "STG", "LDGSTS"),  # global memory (LDGSTS: cp.async)
    "LDS/STS": ("LDS", "STS", "LDSM", "STSM"),  # shared memory
    "UTMALDG/UTMASTG": ("UTMALDG", "UTMASTG"),  # TMA loads and stores
    "BAR": ("BAR",),  # block barriers (__syncthreads, named barriers)
    "SYNCS": ("SYNCS",),  # mbarrier operations
    "LDL/STL": ("LDL", "STL"),  # local memory: spills and local arrays
}


@dataclass(frozen=True)
class ListingLine:
    """One line of a SASS or PTX listing, with the generated-source line it comes from."""

    text: str
    line: int = 0  # 1-based line of the generated source, 0: none known
    location: str = ""  # the innermost file:line when that is a header (inlined code)
    function: str = ""  # the kernel function the line is in (SASS)
    opcode: str = ""  # SASS: the instruction's opcode without modifiers ("" for other lines)
    nvcc_line: int = 0  # nvcc's own line where attribution.py moved the instruction to `line` (0: not moved)

    @property
    def is_record(self) -> bool:
        """One of nvdisasm's `//## File` line records (the views show them as a column, not a row)."""
        return self.text.lstrip().startswith("//##")

    @property
    def is_label(self) -> bool:
        """A label in a SASS listing (`gemm_kernel:`, `.L_x_3:`): what branches name."""
        text = self.text.strip()
        return not self.opcode and text.endswith(":") and " " not in text and not text.startswith("//")


def _is_source(path: str, source_name: str) -> bool:
    return bool(path) and os.path.basename(path) == source_name


def sass_lines(sass: str, source_name: str) -> list[ListingLine]:
    """Every line of an nvdisasm -gi listing, instructions with their generated-source line."""
    out: list[ListingLine] = []
    line, location, function = 0, "", ""
    fresh = False  # a new group of records started: the first record of it is the innermost
    for text in split_lines(sass):
        record = _SASS_RECORD.search(text)
        if record:
            path, number, outer, outer_number = record.groups()
            if not fresh:
                location = "" if _is_source(path, source_name) else f"{os.path.basename(path)}:{number}"
                fresh = True
            if _is_source(path, source_name):
                line = int(number)
            elif outer is not None and _is_source(outer, source_name):
                line = int(outer_number)
            out.append(ListingLine(text, line, location, function))
            continue
        fresh = False
        if match := _SASS_FUNCTION.match(text):
            function, line, location = match.group(1), 0, ""
        instruction = _SASS_INSTRUCTION.match(text)
        opcode = instruction.group(2).split(".")[0] if instruction else ""
        out.append(ListingLine(text, line if instruction else 0, location if instruction else "", function, opcode))
    return out


def shown_rows(lines: list[ListingLine]) -> list[tuple[int, ListingLine]]:
    """What the views show of a SASS listing, with each line's index in it: its instructions and
    labels; not nvdisasm's line records (a column of each row instead) nor its directives."""
    return [(index, item) for index, item in enumerate(lines) if item.opcode or item.is_label]


def ptx_lines(ptx: str, source_name: str) -> list[ListingLine]:
    """Every line of a PTX listing, with the generated-source line of the last .loc before it."""
    files: dict[str, str] = {}
    for text in split_lines(ptx):
        if match := _PTX_FILE.match(text):
            files[match.group(1)] = match.group(2)
    out: list[ListingLine] = []
    line, location = 0, ""
    for text in split_lines(ptx):
        if text.lstrip().startswith(".entry") or text.lstrip().startswith(".visible .entry"):
            line, location = 0, ""
        match = _PTX_LOC.match(text)
        if match:
            file, number, outer, outer_number = match.groups()
            path = files.get(file, "")
            if _is_source(path, source_name):
                line, location = int(number), ""
            else:
                location = f"{os.path.basename(path)}:{number}" if path else ""
                if outer is not None and _is_source(files.get(outer, ""), source_name):
                    line = int(outer_number)
        stripped = text.strip()
        instruction = bool(stripped) and not stripped.startswith((".", "//", "{", "}", ")", "(")) and not stripped.endswith(":")
        out.append(ListingLine(text, line if instruction or match else 0, location if instruction else ""))
    return out


def opcode_counts(lines: list[ListingLine]) -> Counter[str]:
    """How many instructions of each opcode a SASS listing holds."""
    return Counter(line.opcode for line in lines if line.opcode)


def kind_counts(counts: Counter[str]) -> dict[str, int]:
    """The counts grouped by KINDS, plus "instructions" (all of them)."""
    out = {kind: sum(counts.get(opcode, 0) for opcode in opcodes) for kind, opcodes in KINDS.items()}
    out["instructions"] = sum(counts.values())
    return out
