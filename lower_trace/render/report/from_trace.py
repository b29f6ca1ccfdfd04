"""``lower-trace report``: the report of a stored trace, built kernel by kernel through the
append-only writer a traced run uses (writer.py), so both give the same blocks. Each kernel's
source map is computed here, right after its block (a traced run appends them when it closes):
a report of a killed run, which has none, gets them from this rebuild.

A trace copied elsewhere (``cp -r`` of its run folder, or of the script's folder with its
``edits/``) names the paths it was written with: the working copies and reproducers of the
original. The rebuilt report names them where they are beside the copy instead."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from lower_trace.model import CodegenRecord, KernelTrace, PassRecord, Trace
from lower_trace.render.report.writer import ReportWriter, write_pointer
from lower_trace.store.files import replacing
from lower_trace.store.layout import EDITS, REPORT
from lower_trace.store.reader import load_trace


def write_report(run_dir: str, out_path: str | None = None, latest_link: str | None = None, progress: Callable[[int, int], None] | None = None) -> str:
    """Build the report of the trace in run_dir at out_path (default run_dir/report.html).

    Written to a temporary file renamed over out_path, so a failure never leaves half a
    report (or the temporary) behind. latest_link gets a pointer page. progress(done, total)
    is told before each kernel and at the end.
    """
    trace = load_trace(run_dir)
    out_path = os.path.abspath(out_path or os.path.join(trace.path, REPORT))
    move = moved_from(trace)
    with replacing(out_path) as tmp:
        writer = ReportWriter(tmp, trace.run)
        try:
            writer.start()
            for done, kernel in enumerate(trace.kernels):
                if progress:
                    progress(done, len(trace.kernels))
                if move is not None:
                    kernel = relocated(kernel, *move)
                writer.add_kernel(kernel, trace.snapshot)
                writer.add_source_map(kernel, trace.snapshot)
                writer.add_launches(kernel, trace.path)
            if progress:
                progress(len(trace.kernels), len(trace.kernels))
            writer.close()
        except BaseException:
            writer.discard()  # its file is closed before the temporary is removed
            raise
    if latest_link:
        write_pointer(latest_link, out_path)
    return out_path


def moved_from(trace: Trace) -> tuple[str, str] | None:
    """(the script folder the trace was written in, the one it is in now) when it was moved or
    copied since, else None. The old one is read off the paths the records hold: a working copy
    lives in the script folder's edits/, a reproducer under the script folder's run-id folder."""
    here = os.path.dirname(os.path.abspath(trace.path))
    marker = os.sep + trace.run.run_id + os.sep
    for kernel in trace.kernels:
        for step in kernel.codegen:
            folder = os.path.dirname(step.edit_path) if step.edit_path else ""
            if folder and os.path.basename(folder) == EDITS:
                old = os.path.dirname(folder)
                return (old, here) if old != here else None
        for record in kernel.passes:
            if record.repro and marker in record.repro:
                old = record.repro[: record.repro.rindex(marker)]
                return (old, here) if old != here else None
    return None


def relocated(kernel: KernelTrace, old: str, new: str) -> KernelTrace:
    """The kernel with the paths under the script folder old named under new."""

    def moved(path: str) -> str:
        if path and (path == old or path.startswith(old + os.sep)):
            return new + path[len(old) :]
        return path

    def codegen(step: CodegenRecord) -> CodegenRecord:
        return dataclasses.replace(step, edit_path=moved(step.edit_path), edit_backup=moved(step.edit_backup))

    def passed(record: PassRecord) -> PassRecord:
        return dataclasses.replace(record, repro=moved(record.repro)) if record.repro else record

    return dataclasses.replace(kernel, codegen=tuple(codegen(c) for c in kernel.codegen), passes=tuple(passed(p) for p in kernel.passes))
