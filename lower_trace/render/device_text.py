"""A kernel's device stage in words: its resources and occupancy as one line, the same wherever
it is shown (the terminal's device views, device_view.py; the report page, report/page.py)."""

from __future__ import annotations

from lower_trace.analysis.device.summary import occupancy_phrase
from lower_trace.device_model import DeviceSummary


def resources_line(summary: DeviceSummary) -> str:
    """registers 232 · spill stores 0 B · … · occupancy 1 block/SM (8 warps)"""
    resources, launch = summary.resources, summary.launch
    if resources is None:
        return summary.record.error or "no resource report"
    if summary.record.language == "hip":
        return hip_line(dict(resources.extra))
    parts = [
        f"registers {resources.registers}",
        f"spill stores {resources.spill_stores} B",
        f"spill loads {resources.spill_loads} B",
        f"stack {resources.stack} B",
        f"shared {resources.shared_static} B static + {launch.dynamic_shared if launch else 0} B dynamic",
        f"barriers {resources.barriers}",
    ]
    parts.append(occupancy_text(summary))
    return " · ".join(parts)


def hip_line(values: dict[str, int]) -> str:
    """A HIP kernel's numbers as hipcc's remarks give them (analysis/device/hip_report.py)."""
    parts = [f"VGPRs {values.get('vgpr', 0)}", f"AGPRs {values.get('agpr', 0)}", f"SGPRs {values.get('sgpr', 0)}"]
    parts += [f"scratch {values.get('scratch', 0)} B/lane", f"LDS {values.get('lds', 0)} B"]
    parts += [f"VGPR spills {values.get('vgpr_spill', 0)}", f"SGPR spills {values.get('sgpr_spill', 0)}"]
    if "waves_per_simd" in values:
        parts.append(f"occupancy {values['waves_per_simd']} waves/SIMD")
    return " · ".join(parts)


def occupancy_text(summary: DeviceSummary) -> str:
    occupied = summary.occupancy
    if occupied is None:
        return "occupancy unknown" + ("" if summary.launch else " (no launch shape in the TIR)")
    return f"occupancy {occupancy_phrase(occupied)}"
