"""The device stage where TileLang compiles: its nvcc call, traced (TileLang 0.1.15+).

TileLang's instrumentation has no device-compile event: its CUDA callback calls
``tilelang.contrib.nvcc.compile_cuda`` inside the codegen call our tool wraps. While tracing,
that function is replaced (undone exactly on disable) by one that, for a traced kernel's cubin
only, adds ``--keep --keep-dir`` (nvcc's intermediate files, the PTX among them; the cubin is
byte for byte the same) and hands the PTX and the binary to the worker thread, which asks
ptxas for its resource report and stores the record (without a thread, one core: when the
run closes, so that the compile does not wait for ptxas). Everything else reaches TileLang's
function untouched; a failure of ours is one warning and the compile goes on.
"""
from __future__ import annotations

import base64
import functools
import glob
import os
import tempfile
import time
from typing import Any

from tilelang.contrib import nvcc as tl_nvcc

from lower_trace.analysis.device.ptxas_report import parse_ptxas_report
from lower_trace.capture.codegen_step import ActiveCodegen, current_codegen
from lower_trace.capture.sink import GetRun
from lower_trace.device_model import DeviceRecord
from lower_trace.integrations.adapters.patching import Patches
from lower_trace.integrations.nvcc import build
from lower_trace.integrations.nvcc.arch import sass_arch
from lower_trace.integrations.nvcc.toolchain import ToolMissing, tool_version
from lower_trace.text_safety import headline


class DeviceCapture:
    """Replaces TileLang's compile_cuda while tracing; uninstall() puts the original back."""

    def __init__(self, get_run: GetRun) -> None:
        self._get_run = get_run
        self._patches = Patches()

    def install(self) -> None:
        original = tl_nvcc.compile_cuda

        @functools.wraps(original)
        def compile_cuda(code: Any, target_format: str = "ptx", arch: Any = None, options: Any = None, path_target: Any = None, verbose: bool = False) -> Any:
            return self._compile(original, code, target_format, arch, options, path_target, verbose)

        self._patches.replace(tl_nvcc, "compile_cuda", compile_cuda)

    def uninstall(self) -> None:
        self._patches.undo()

    def _compile(self, original: Any, code: Any, target_format: str, arch: Any, options: Any, path_target: Any, verbose: bool) -> Any:
        active = current_codegen.get()
        run = self._get_run()
        arch_flags = [arch] if isinstance(arch, str) else list(arch) if isinstance(arch, list) else []
        sm = sass_arch(arch_flags)
        if active is None or run is None or run.config.device == "off" or target_format != "cubin" or not sm or not isinstance(code, str):
            return original(code, target_format, arch, options, path_target, verbose)
        flags = [options] if isinstance(options, str) else [str(item) for item in options or []]
        try:
            keep = tempfile.mkdtemp(prefix="lower-trace-nvcc-")
        except OSError as exc:
            run.tracer_fault(exc)
            return original(code, target_format, arch, options, path_target, verbose)
        command = (tl_nvcc.get_nvcc_compiler(), f"--{target_format}", "-O3", "-lineinfo", *arch_flags, *flags)
        started = time.perf_counter()
        try:
            binary = original(code, target_format, arch, [*flags, *build.keep_flags(keep)], path_target, verbose)
        except Exception as exc:
            ms = (time.perf_counter() - started) * 1000.0
            job = _Job(active, keep, code, b"", sm, command, flags, ms, run.config.device, error=headline(str(exc)) or type(exc).__name__)
            active.session.worker.submit(job.finish)
            raise
        ms = (time.perf_counter() - started) * 1000.0
        try:
            job = _Job(active, keep, code, bytes(binary), sm, command, flags, ms, run.config.device)
            # ptxas' report is derived from the PTX: on one core it waits for the run's close
            # rather than lengthen the compile (the report adds a late device block then).
            active.session.worker.defer(job.finish)
        except Exception as exc:
            run.tracer_fault(exc)
        return binary


class _Job:
    """What the worker thread does with one traced nvcc call."""

    def __init__(
        self, active: ActiveCodegen, keep: str, code: str, binary: bytes, sm: str, command: tuple[str, ...], flags: list[str], ms: float, mode: str,
        error: str = "",
    ) -> None:  # fmt: skip
        self.active, self.keep, self.code, self.binary, self.sm = active, keep, code, binary, sm
        self.command, self.flags, self.ms, self.mode, self.error = command, flags, ms, mode, error

    def finish(self) -> None:
        session = self.active.session
        try:
            record = self._record(session.snapshots.store_text)
        except Exception as exc:
            session.tracer_fault(exc)
            return
        finally:
            build.remove_later(self.keep)
        session.device_steps.append(record)
        session.run.append_record("device", record)

    def _record(self, store: Any) -> DeviceRecord:
        ptx = build.kept_ptx(self.keep)
        stems = [os.path.basename(path)[: -len(".ptx")] for path in glob.glob(os.path.join(self.keep, "*.ptx"))]
        values: dict[str, Any] = dict(
            kernel=self.active.session.kernel_id, seq=self.active.seq, how="capture", arch=self.sm, tool=tool_version(self.command[0]),
            command=self.command, source=store(self.code), source_name=f"{stems[0]}.cu" if stems else "",
            edited=bool(self.active.edit and self.active.edit[0].uses_edit), ms=round(self.ms, 3), error=self.error,
        )  # fmt: skip
        if ptx:
            values["ptx"] = store(ptx)
        if self.binary:
            values["binary"] = store(base64.b64encode(self.binary).decode("ascii"))
        if self.error or not ptx:
            return DeviceRecord(**values)
        try:
            functions, diagnostics = parse_ptxas_report(build.resource_report(ptx, self.sm, self.flags, background=True))
            values.update(functions=functions, diagnostics=diagnostics)
            if self.mode == "sass" and self.binary:
                values["sass"] = store(build.disassemble(self.binary, background=True))
        except ToolMissing as exc:
            self.active.session.run.note(str(exc), once="device-tool")
            values["error"] = str(exc)
        except build.BuildFailed as exc:
            values["error"] = headline(str(exc))
        return DeviceRecord(**values)
