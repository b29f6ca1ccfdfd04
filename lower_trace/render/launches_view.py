"""``lower-trace show --launches``: each kernel's recorded launches -- arguments before the call, what
the call wrote (a tensor whose digest changed) and returned, its time and call site."""

from __future__ import annotations

import shlex

from lower_trace.config import DEFAULT_LAUNCH_LIMIT
from lower_trace.model import KernelTrace, LaunchRecord, LaunchValue
from lower_trace.text_safety import plural, printable_line


def launches_text(kernels: list[KernelTrace], run_path: str = "") -> str:
    lines = [
        f"the first launches of each kernel are kept (TL_LOWER_TRACE_LAUNCHES=meta:N or data:N, default {DEFAULT_LAUNCH_LIMIT});"
        " digests are blake2b of the bytes; 'kept': the tensor itself is in the trace (data)"
    ]
    for kernel in kernels:
        count = len(kernel.launches)
        lines.append(f"{kernel.kernel_id} {printable_line(kernel.name)}: {plural(count, 'launch', 'launches')} recorded" + ("" if count else
                     " (not called while traced, called through kernel.adapter or TileLang's profiler, or TL_LOWER_TRACE_LAUNCHES=off)"))
        for launch in kernel.launches:
            lines.extend(_launch_lines(launch))
            if run_path and reproducible(launch):
                from_source = kernel.rebuild is not None and bool(kernel.rebuild.factory)
                lines.append(f"      repro: {repro_command(run_path, kernel.kernel_id, launch.n, from_source)}")
    return "\n".join(lines)


def reproducible(launch: LaunchRecord) -> bool:
    """Whether repro --launch can write it: every tensor argument kept."""
    tensors = [v for v in launch.args if v.kind == "tensor"]
    return bool(tensors) and all(v.data for v in tensors)


def repro_command(run_path: str, kernel_id: str, n: int, from_source: bool = True) -> str:
    """The command that writes the launch's repro: from its source where a @tilelang.jit call made it, else its generated code."""
    rebuild = "" if from_source else " --rebuild generated"
    return f"lower-trace repro {shlex.quote(run_path)} --launch {kernel_id}:{n}{rebuild} -o repro-{kernel_id}-{n}"


def _launch_lines(launch: LaunchRecord) -> list[str]:
    head = f"  #{launch.n}  {launch.ms:.3f} ms  {printable_line(launch.site) or 'call site unknown'}"
    if launch.error is not None:
        head += f"  raised {printable_line(launch.error.type)}: {printable_line(launch.error.message)[:200]}"
    out = [head]
    written = {v.name: v for v in launch.after}
    for value in launch.args:
        later = written.get(value.name)
        mark = f"  -> {later.digest[:12]} (written)" if later is not None and later.digest != value.digest else ""
        out.append(f"      {_value(value)}{mark}")
    out += [f"      {_value(v)}  returned" for v in launch.after if v.name.startswith("return")]
    return out


def _value(value: LaunchValue) -> str:
    if value.kind != "tensor":
        return f"{printable_line(value.name)} = {printable_line(str(value.value))}" + (f"  ({value.note})" if value.note else "")
    shape = ",".join(map(str, value.shape))
    text = f"{printable_line(value.name)}  {value.dtype}[{shape}]  {value.device}"
    if value.strides != _contiguous(value.shape):
        text += f"  strides ({','.join(map(str, value.strides))})"
    text += f"  {value.digest[:12]}" if value.digest else ""
    text += "  kept" if value.data else ""
    return text + (f"  ({value.note})" if value.note else "")


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))
