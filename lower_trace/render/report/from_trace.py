"""``lower-trace report``: the report of a stored trace, built kernel by kernel through the
append-only writer a traced run uses (writer.py), so both give the same file."""

from __future__ import annotations

import os
from collections.abc import Callable

from lower_trace.render.report.writer import ReportWriter, write_pointer
from lower_trace.store.files import replacing
from lower_trace.store.layout import REPORT
from lower_trace.store.reader import load_trace


def write_report(run_dir: str, out_path: str | None = None, latest_link: str | None = None, progress: Callable[[int, int], None] | None = None) -> str:
    """Build the report of the trace in run_dir at out_path (default run_dir/report.html).

    Written to a temporary file renamed over out_path, so a failure never leaves half a
    report (or the temporary) behind. latest_link gets a pointer page. progress(done, total)
    is told before each kernel and at the end.
    """
    trace = load_trace(run_dir)
    out_path = os.path.abspath(out_path or os.path.join(trace.path, REPORT))
    with replacing(out_path) as tmp:
        writer = ReportWriter(tmp, trace.run)
        try:
            writer.start()
            for done, kernel in enumerate(trace.kernels):
                if progress:
                    progress(done, len(trace.kernels))
                writer.add_kernel(kernel, trace.snapshot)
            if progress:
                progress(len(trace.kernels), len(trace.kernels))
            writer.close()
        except BaseException:
            writer.discard()  # its file is closed before the temporary is removed
            raise
    if latest_link:
        write_pointer(latest_link, out_path)
    return out_path
