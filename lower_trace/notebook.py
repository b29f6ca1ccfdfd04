"""The notebook front end: a run's report inline in Jupyter (JupyterLab, classic Notebook, VS Code).

    with lower_trace.trace() as run:       # a cell; `run` as the cell's last expression shows the report
        kernel = tilelang.compile(...)
    lower_trace.show(run, kernel="gemm", view="timing")   # one view of it
    %load_ext lower_trace                  # then %%lower_trace [--mode terminal|html|both] [--dir DIR]

The frame itself is render/notebook.py's. IPython is imported only by the magic, which IPython
itself loads (%load_ext): importing lower_trace never imports it.
"""

from __future__ import annotations

import argparse
import os
import shlex
from typing import Any

from lower_trace.model import KernelStatus, KernelTrace
from lower_trace.render.notebook import DEFAULT_HEIGHT, css_height, frame
from lower_trace.store.layout import REPORT, TraceNotFound, find_run_dir
from lower_trace.store.reader import load_trace

VIEWS = ("diff", "source", "timing", "device")
MODES = ("html", "both", "terminal")
USAGE = "%%lower_trace [--mode terminal|html|both] [--dir DIR]"


class ReportFrame:
    """One view of a run's report, shown by a notebook as the cell's value (or display(frame))."""

    def __init__(self, html: str, report_path: str, start: str) -> None:
        self.html = html
        self.report_path = report_path
        self.start = start  # the hash the frame opens on (#k1/12)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        return {"text/plain": repr(self), "text/html": self.html}

    def __repr__(self) -> str:
        return f"lower-trace report: {self.report_path}#{self.start}"


def show(run: Any, kernel: str | None = None, view: str = "diff", height: int | str = DEFAULT_HEIGHT) -> ReportFrame:
    """One view of a run's report, to show in a notebook: run is what trace()/enable() returned
    (once closed) or a trace folder; kernel its name or id (default: a failed kernel, else the
    first); view one of diff (its first changed pass), source (the generated source), timing,
    device (nvcc's PTX, SASS, resources)."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
    css_height(height)  # a bad height says so before anything is read
    run_dir = _run_dir(run)
    report = os.path.join(run_dir, REPORT)
    if not os.path.exists(report):
        raise ValueError(f"{run_dir} has no report.html (a run in terminal or trace mode): `lower-trace report {run_dir}` writes one")
    chosen = _kernel(load_trace(run_dir).kernels, kernel, run_dir)
    start = _start(chosen, view)
    with open(report, encoding="utf-8") as file:
        page = file.read()
    return ReportFrame(frame(page, height, start, title=f"lower-trace report: {chosen.name} ({view})"), report, start)


def _run_dir(run: Any) -> str:
    if isinstance(run, (str, os.PathLike)):
        path = os.fspath(run)
        if os.path.basename(path) == REPORT and os.path.isfile(path):
            path = os.path.dirname(path) or "."
        try:
            return find_run_dir(path)
        except TraceNotFound as exc:
            raise ValueError(str(exc)) from None
    run_dir = getattr(run, "run_dir", None)
    if not isinstance(run_dir, str):
        raise TypeError(f"show() takes a run (what lower_trace.trace() or enable() returned) or a trace folder, not {type(run).__name__}")
    if getattr(run, "closed", True) is False:
        raise ValueError("the run is still open: show it after its with block (or after lower_trace.reset() / disable())")
    return run_dir


def _kernel(kernels: tuple[KernelTrace, ...], wanted: str | None, run_dir: str) -> KernelTrace:
    if not kernels:
        raise ValueError(f"no kernel was compiled in {run_dir}")
    if wanted is None:
        return next((k for k in kernels if k.status is KernelStatus.FAILED), kernels[0])
    found = next((k for k in kernels if k.kernel_id == wanted), None) or next((k for k in kernels if k.name == wanted), None)
    if found is None:
        names = ", ".join(dict.fromkeys(k.name for k in kernels))
        ids = "its id k1" if len(kernels) == 1 else f"their ids k1..k{len(kernels)}"
        raise ValueError(f"no kernel {wanted!r} in this run; its kernels: {names} (or {ids})")
    return found


def _start(kernel: KernelTrace, view: str) -> str:
    """The page's deep link for the view (docs/report.md, "Deep links")."""
    if view == "diff":
        return kernel.kernel_id  # the page opens a kernel on its failure, else its first changed pass
    if view == "timing":
        return f"{kernel.kernel_id}/timing"
    steps = sorted(kernel.codegen, key=lambda step: step.role != "device")  # the device source first
    if view == "device" and kernel.device_stage is None:
        raise ValueError(f"kernel {kernel.name!r} has no device stage in this run (nvcc did not compile it; `lower-trace device` builds one for CUDA)")
    if not steps:
        raise ValueError(f"kernel {kernel.name!r} has no generated source (its compile stopped before codegen)")
    return f"{kernel.kernel_id}/{steps[0].seq}"


# --- the cell magic ------------------------------------------------------------------------


class _Options(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, not argparse's usage block and exit
        raise ValueError(f"{message}; usage: {USAGE}")


def parse_options(line: str) -> argparse.Namespace:
    """%%lower_trace's options; a bad one is a one-line ValueError with the usage."""
    parser = _Options(prog="%%lower_trace", add_help=False)
    parser.add_argument("--mode", choices=MODES, default="html")
    parser.add_argument("--dir", default=None)
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise ValueError(f"{exc}; usage: {USAGE}") from None
    return parser.parse_args(words)


def load_ipython_extension(ipython: Any) -> None:
    """%load_ext lower_trace: registers the %%lower_trace cell magic."""

    def lower_trace_magic(line: str, cell: str) -> None:
        """%%lower_trace [--mode terminal|html|both] [--dir DIR]: trace the cell's compiles into a run of
        their own, then show its report (html, both)."""
        from IPython.core.error import UsageError
        from IPython.display import display

        from lower_trace import api

        try:
            options = parse_options(line)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        with api.trace(mode=options.mode, trace_dir=options.dir) as run:
            ipython.run_cell(cell)
        if run.config.writes_report:
            display(run)

    ipython.register_magic_function(lower_trace_magic, magic_kind="cell", magic_name="lower_trace")
