"""A kernel's device stage summed up: resources, launch shape, occupancy, instruction counts."""
from __future__ import annotations

from collections.abc import Callable

from lower_trace.analysis.device.attribution import reattribute
from lower_trace.analysis.device.launch import launch_shape
from lower_trace.analysis.device.occupancy import occupancy
from lower_trace.analysis.device.sass import ListingLine, kind_counts, opcode_counts, ptx_lines, sass_lines
from lower_trace.analysis.text_diff import split_lines
from lower_trace.device_model import DeviceRecord, DeviceSummary, Occupancy
from lower_trace.model import CodegenRecord, KernelTrace, Trace


def cuda_source_step(kernel: KernelTrace) -> CodegenRecord | None:
    """The kernel's last CUDA device codegen with a stored source: what a device compile compiles
    (None: a CPU or host-only kernel, which has no device stage)."""
    steps = [c for c in kernel.codegen if c.role == "device" and c.language == "cuda" and c.source]
    return steps[-1] if steps else None


def device_summary(trace: Trace, kernel: KernelTrace, record: DeviceRecord | None = None) -> DeviceSummary | None:
    """The summary of the kernel's latest device compile (or `record`); None when it has none."""
    return summarize(kernel, trace.read_snapshot, record)


def summarize(kernel: KernelTrace, text_of: Callable[[str], str], record: DeviceRecord | None = None) -> DeviceSummary | None:
    """device_summary over a snapshot reader (the report's writer has no Trace)."""
    record = record or kernel.device_stage
    if record is None:
        return None
    step = next((c for c in kernel.codegen if c.seq == record.seq), None)
    launch = launch_shape(text_of(step.tir) or "") if step is not None and step.tir else None
    resources = record.function()
    occupied = None
    if resources is not None and launch is not None:
        occupied = occupancy(record.arch, launch.threads, resources.registers, resources.shared_static + launch.dynamic_shared)
    counts: tuple[tuple[str, int], ...] = ()
    if record.sass:
        counts = tuple(kind_counts(opcode_counts(sass_lines(text_of(record.sass) or "", record.source_name))).items())
    variant = kernel.working_copy or (f"block {launch.threads} grid {launch.blocks}" if launch else "")
    return DeviceSummary(kernel.kernel_id, kernel.name, variant, record, resources, launch, occupied, counts)


def listing(trace: Trace, record: DeviceRecord, which: str) -> list[ListingLine]:
    """The record's SASS or PTX, line by line with the generated-source line each comes from."""
    return listing_of(trace.read_snapshot, record, which)


def listing_of(text_of: Callable[[str], str], record: DeviceRecord, which: str) -> list[ListingLine]:
    """listing() over a snapshot reader. SASS instructions nvcc's line table puts on a line that
    cannot have made them are on the nearest one that can (attribution.py), nvcc's line kept."""
    digest = record.sass if which == "sass" else record.ptx
    text = (text_of(digest) or "") if digest else ""
    if which != "sass":
        return ptx_lines(text, record.source_name)
    source = (text_of(record.source) or "") if record.source else ""
    return reattribute(sass_lines(text, record.source_name), split_lines(source))


def cuda_lines(text_of: Callable[[str], str], record: DeviceRecord, which: str) -> list[int]:
    """Per line of the record's SASS or PTX, the generated-source line it comes from (0: none)."""
    return [line.line for line in listing_of(text_of, record, which)]


def device_differences(a: DeviceSummary | None, b: DeviceSummary | None) -> list[tuple[str, str, str]]:
    """What differs between two compiles' device stages: (what, A's, B's), in the views' order;
    [] when both are alike or neither has one. Instruction counts are compared when both have SASS."""
    if a is None and b is None:
        return []
    if a is None or b is None:
        return [("device stage", "none" if a is None else a.record.arch, "none" if b is None else b.record.arch)]
    out: list[tuple[str, str, str]] = []

    def differ(name: str, left: object, right: object, unit: str = "") -> None:
        if left != right:
            out.append((name, f"{left}{unit}", f"{right}{unit}"))

    ra, rb = a.resources, b.resources
    differ("arch", a.record.arch, b.record.arch)
    if ra is not None and rb is not None:
        for name, unit in (("registers", ""), ("spill_stores", " B"), ("spill_loads", " B"), ("stack", " B"), ("shared_static", " B"), ("barriers", "")):
            differ(name.replace("_", " "), getattr(ra, name), getattr(rb, name), unit)
    differ("dynamic shared", a.launch.dynamic_shared if a.launch else None, b.launch.dynamic_shared if b.launch else None, " B")
    differ("threads", a.launch.threads if a.launch else None, b.launch.threads if b.launch else None)
    differ("grid", "x".join(map(str, a.launch.grid)) if a.launch else None, "x".join(map(str, b.launch.grid)) if b.launch else None)
    differ("occupancy", a.occupancy and occupancy_phrase(a.occupancy), b.occupancy and occupancy_phrase(b.occupancy))
    if a.counts and b.counts:
        counts_b = dict(b.counts)
        for kind, count in a.counts:
            differ(kind, count, counts_b.get(kind, 0))
    return out


def occupancy_phrase(occupied: Occupancy) -> str:
    """"1 block/SM (8 warps, limited by registers)": what limits it too (diff compares that)."""
    if occupied.blocks_per_sm == 0:
        return f"0: {occupied.why}"
    block = "block" if occupied.blocks_per_sm == 1 else "blocks"
    return f"{occupied.blocks_per_sm} {block}/SM ({occupied.warps_per_sm} warps, limited by {occupied.limiter})"
