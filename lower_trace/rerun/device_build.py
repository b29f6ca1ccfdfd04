"""`lower-trace device`: the device stage of kernels whose trace lacks it (or lacks their SASS),
built from the stored generated source (or the working copy as it is now) with the flags
TileLang compiles that target and the kernel's pass configs with (integrations/nvcc/tilelang_flags.py),
several kernels at a time, and appended to the run.

Never on a compile's path: this runs on a finished trace, in the lower-trace command.
"""
from __future__ import annotations

import base64
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from lower_trace.analysis.configs import typed_configs
from lower_trace.analysis.device.ptxas_report import parse_ptxas_report
from lower_trace.analysis.device.summary import cuda_source_step
from lower_trace.device_model import DeviceRecord
from lower_trace.integrations.nvcc import build
from lower_trace.integrations.nvcc.tilelang_flags import tilelang_nvcc_flags
from lower_trace.integrations.nvcc.toolchain import ToolMissing, require, tool_version
from lower_trace.model import CodegenRecord, KernelTrace, Trace
from lower_trace.model_json import to_json
from lower_trace.store.layout import MANIFEST, digest_of
from lower_trace.store.paths import safe_component
from lower_trace.store.writer import TraceWriter
from lower_trace.text_safety import headline


@dataclass(frozen=True)
class Built:
    """One kernel's outcome: its new record, or why it has none."""

    kernel: KernelTrace
    record: DeviceRecord | None
    texts: dict[str, str]  # digest -> text, the snapshots the record names
    problem: str = ""


def build_device_stage(
    trace: Trace, kernels: list[KernelTrace], jobs: int = 0, working_copy: bool = False, rebuild: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> list[Built]:  # fmt: skip
    """Build what each kernel lacks, `jobs` at a time (0: one per core); append it to the run."""
    if any(_needs_compile(k, working_copy, rebuild) for k in kernels):
        require("nvcc", "lower-trace device")
    workers = jobs or os.cpu_count() or 1
    done: list[Built] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:  # each job waits on a child process
        futures = [pool.submit(_build_one, trace, kernel, working_copy, rebuild) for kernel in kernels]
        for count, future in enumerate(futures, 1):
            done.append(future.result())
            if progress:
                progress(count, len(futures))
    _append(trace, [b for b in done if b.record is not None])
    return done


def _needs_compile(kernel: KernelTrace, working_copy: bool, rebuild: bool) -> bool:
    record = kernel.device_stage
    return working_copy or rebuild or record is None or not record.binary


def _build_one(trace: Trace, kernel: KernelTrace, working_copy: bool, rebuild: bool) -> Built:
    step = cuda_source_step(kernel)
    record = kernel.device_stage
    try:
        if record is not None and record.binary and not (working_copy or rebuild):
            if record.sass:
                return Built(kernel, None, {}, "has its device stage already (--rebuild compiles it again)")
            sass = build.disassemble(base64.b64decode(trace.read_snapshot(record.binary)))
            error = "" if "nvdisasm" in record.error else record.error  # it was missing then; it is here now
            return Built(kernel, replace(record, sass=digest_of(sass), error=error), {digest_of(sass): sass})
        if step is None:
            return Built(kernel, None, {}, "has no CUDA source to compile (a CPU or host-only kernel)")
        return _compile(trace, kernel, step, working_copy)
    except ToolMissing as exc:
        return Built(kernel, None, {}, str(exc))
    except build.BuildFailed as exc:
        return Built(kernel, None, {}, "the compile failed: " + headline(str(exc)))
    except ValueError as exc:  # a target without an sm_ arch, a config nvcc cannot take
        return Built(kernel, None, {}, f"cannot get TileLang's flags for {kernel.target!r}: {headline(str(exc))}")
    except ImportError as exc:
        why = headline(str(exc))
        return Built(kernel, None, {}, f"cannot get TileLang's flags for {kernel.target!r} ({why}): run lower-trace device where TileLang is installed")


def _compile(trace: Trace, kernel: KernelTrace, step: CodegenRecord, working_copy: bool) -> Built:
    source = trace.read_snapshot(step.source)
    edited = False
    if working_copy:
        if not step.edit_path or not os.path.isfile(step.edit_path):
            return Built(kernel, None, {}, "has no working copy to compile (run it traced first)")
        with open(step.edit_path, encoding="utf-8") as handle:
            edited_text = handle.read()
        edited, source = edited_text != source, edited_text
    # The configs as JSON values (an old trace's printed "T.bool(True)" read back): what TileLang's callback reads.
    arch_flags, options = tilelang_nvcc_flags(kernel.target, typed_configs(kernel))
    name = safe_component(kernel.name, "kernel") + ".cu"
    started = time.perf_counter()
    built = build.compile_source(source, name, arch_flags, options)
    texts = {digest_of(source): source}
    values: dict[str, Any] = dict(
        kernel=kernel.kernel_id, seq=step.seq, how="on demand", arch=arch_flags[-1].split("=")[-1], tool=tool_version(built.command[0]),
        command=built.command, source=digest_of(source), source_name=name, edited=edited,
    )  # fmt: skip
    if built.ptx:
        texts[digest_of(built.ptx)] = built.ptx
        functions, diagnostics = parse_ptxas_report(build.resource_report(built.ptx, str(values["arch"]), options))
        values.update(ptx=digest_of(built.ptx), functions=functions, diagnostics="\n".join(x for x in (built.output, diagnostics) if x))
    binary = base64.b64encode(built.binary).decode("ascii")
    texts[digest_of(binary)] = binary
    values["binary"] = digest_of(binary)
    try:
        sass = build.disassemble(built.binary)
        texts[digest_of(sass)] = sass
        values["sass"] = digest_of(sass)
    except ToolMissing as exc:  # the resources stand without it
        values["error"] = str(exc)
    values["ms"] = round((time.perf_counter() - started) * 1000.0, 3)
    return Built(kernel, DeviceRecord(**values), texts)


def _append(trace: Trace, built: list[Built]) -> None:
    if not built:
        return
    manifest = os.path.join(trace.path, MANIFEST)
    traced_at = os.stat(manifest)
    writer = TraceWriter(trace.path, trace.run, existing=True)
    try:
        for item in built:
            for digest, text in item.texts.items():
                writer.add_snapshot(digest, text)
            assert item.record is not None
            writer.append("device", to_json(item.record))
        writer.flush()
    finally:
        writer.close()
        # The latest run is the one whose manifest changed last: adding to an older run must not make it the latest.
        os.utime(manifest, ns=(traced_at.st_atime_ns, traced_at.st_mtime_ns))
