"""What `lower-trace device`, `show --device/--sass/--ptx` and `list --device` print."""
from __future__ import annotations

import os
from typing import Any, TextIO

from lower_trace.analysis.device.sass import ListingLine, shown_rows
from lower_trace.analysis.origin_rules import Origin
from lower_trace.device_model import DeviceSummary
from lower_trace.model import PassRecord
from lower_trace.render.device_text import resources_line
from lower_trace.render.origins_view import origin_json, origin_text

# list --device's columns: (heading, what sorts by it)
COLUMNS = ("kernel", "name", "variant", "regs", "spill st", "spill ld", "stack", "smem static", "smem dyn", "block", "occupancy")
SORT_KEYS = ("registers", "spills", "shared", "occupancy", "kernel")


def write_summary(out: TextIO, summary: DeviceSummary) -> None:
    record = summary.record
    edited = ", your edited working copy" if record.edited else ""
    out.write(f"{summary.kernel_id} {summary.name}  {record.arch}  ({record.how}{edited}; {record.tool or 'nvcc'})\n")
    out.write(f"  {resources_line(summary)}\n")
    if summary.launch:
        grid, block = summary.launch.grid, summary.launch.block
        out.write(f"  launch grid {grid[0]}x{grid[1]}x{grid[2]} · block {block[0]}x{block[1]}x{block[2]} ({summary.launch.threads} threads)\n")
    if summary.counts:
        out.write("  instructions " + " · ".join(f"{kind} {count}" for kind, count in summary.counts) + "\n")
    elif record.binary and not record.error:  # an error says why there is none (nvdisasm missing)
        out.write(f"  SASS not disassembled yet: lower-trace device -k {summary.kernel_id} (with nvdisasm: pip install nvidia-cuda-nvdisasm)\n")
    if record.error and summary.resources is not None:
        out.write(f"  note: {record.error}\n")


def summary_json(summary: DeviceSummary) -> dict[str, Any]:
    """Every field, defaults too (a script reads `spill_stores` of a kernel that does not spill)."""
    from dataclasses import asdict

    return {
        "kernel": summary.kernel_id,
        "name": summary.name,
        "variant": summary.variant,
        "arch": summary.record.arch,
        "how": summary.record.how,
        "edited": summary.record.edited,
        "command": list(summary.record.command),
        "resources": asdict(summary.resources) if summary.resources else None,
        "launch": {**asdict(summary.launch), "threads": summary.launch.threads} if summary.launch else None,
        "occupancy": asdict(summary.occupancy) if summary.occupancy else None,
        "instructions": dict(summary.counts),
        "error": summary.record.error,
    }


def table_row(summary: DeviceSummary) -> list[str]:
    r, launch, occupied = summary.resources, summary.launch, summary.occupancy
    blank = "-"
    return [
        summary.kernel_id, summary.name, summary.variant or blank,
        str(r.registers) if r else blank, f"{r.spill_stores} B" if r else blank, f"{r.spill_loads} B" if r else blank,
        f"{r.stack} B" if r else blank, f"{r.shared_static} B" if r else blank,
        f"{launch.dynamic_shared} B" if launch else blank, str(launch.threads) if launch else blank,
        f"{occupied.blocks_per_sm}/SM {occupied.warps_per_sm}w" if occupied else blank,
    ]  # fmt: skip


def sort_key(by: str):
    def key(summary: DeviceSummary) -> Any:
        r, occupied = summary.resources, summary.occupancy
        if by == "registers":
            return -(r.registers if r else -1)
        if by == "spills":
            return -((r.spill_stores + r.spill_loads) if r else -1)
        if by == "shared":
            return -((r.shared_static if r else 0) + (summary.launch.dynamic_shared if summary.launch else 0))
        if by == "occupancy":
            return occupied.warps_per_sm if occupied else 10**9
        return int(summary.kernel_id.lstrip("k") or 0) if summary.kernel_id.lstrip("k").isdigit() else summary.kernel_id

    return key


def write_table(out: TextIO, summaries: list[DeviceSummary], missing: list[str], cpu: list[str]) -> None:
    rows = [list(COLUMNS), *(table_row(s) for s in summaries)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() + "\n")
    spilling = [s.kernel_id for s in summaries if s.resources and (s.resources.spill_stores or s.resources.spill_loads)]
    out.write(f"{len(summaries)} with a device stage; spilling: {', '.join(spilling) if spilling else 'none'}\n")
    if missing:
        out.write(f"no device stage yet: {', '.join(missing)} (lower-trace device compiles them)\n")
    if cpu:
        out.write(f"no CUDA source (CPU or host-only kernels): {', '.join(cpu)}\n")


def write_listing(out: TextIO, lines: list[ListingLine], cuda: list[str], origins: list[Origin | None] | None, owners: list[PassRecord | None] | None) -> None:
    """A SASS/PTX listing, each instruction with its CUDA line (and, with origins, the pass that
    made that line and the user's line it comes from). SASS shows its instructions and labels,
    not nvdisasm's line records; an instruction moved off nvcc's line says nvcc's beside it."""
    sass = any(item.opcode for item in lines)
    shown = [item for _, item in shown_rows(lines)] if sass else lines
    width = max([8, *(len(where_text(item)) for item in shown)])
    for item in shown:
        if not item.line and not item.opcode:
            if not item.is_record:
                out.write(f"{'':>{width - 2}}  {item.text.rstrip()}\n")
            continue
        extra = ""
        if origins is not None and item.line:
            origin = origins[item.line - 1] if item.line - 1 < len(origins) else None
            owner = owners[item.line - 1] if owners is not None and item.line - 1 < len(owners) else None
            extra = f"  {origin_text(origin, 24)} {('#' + str(owner.seq) + ' ' + owner.name) if owner else ''}".rstrip()
        text = item.text.strip()
        cuda_text = cuda[item.line - 1].strip() if item.line and item.line - 1 < len(cuda) and origins is None else ""
        out.write(f"{where_text(item):>{width}}  {text[:110]:<110}{extra}{('  // ' + cuda_text[:60]) if cuda_text else ''}\n".rstrip() + "\n")


def where_text(item: ListingLine) -> str:
    """cu:79, or cu:79 (nvcc: 86) where the instruction was moved off nvcc's line (attribution.py)."""
    if not item.line:
        return ""
    return f"cu:{item.line}" + (f" (nvcc: {item.nvcc_line})" if item.nvcc_line else "")


def listing_json(lines: list[ListingLine], origins: list[Origin | None] | None) -> list[dict[str, Any]]:
    """Every line of the listing (nvdisasm's records too); `line` is the CUDA line, `nvcc_line`
    nvcc's own where attribution.py moved the instruction off it."""
    out = []
    for item in lines:
        entry: dict[str, Any] = {"text": item.text, "line": item.line}
        if item.opcode:
            entry["opcode"] = item.opcode
        if item.nvcc_line:
            entry["nvcc_line"] = item.nvcc_line
        if item.location:
            entry["inlined_from"] = item.location
        if origins is not None and item.line and item.line - 1 < len(origins):
            entry["origin"] = origin_json(origins[item.line - 1])
        out.append(entry)
    return out


def short(path: str) -> str:
    return os.path.basename(path)


def write_device_differences(out: TextIO, changes: list[tuple[str, str, str]]) -> None:
    """diff's device-stage line: what ptxas and the SASS say differs (nothing when alike or absent)."""
    if changes:
        out.write("device stage: " + " · ".join(f"{what} {a} → {b}" for what, a, b in changes) + "\n")


def device_differences_json(changes: list[tuple[str, str, str]]) -> list[dict[str, str]]:
    return [{"what": what, "a": a, "b": b} for what, a, b in changes]
