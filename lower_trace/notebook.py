"""The notebook front end: a run's report inline in Jupyter (JupyterLab, classic Notebook, VS Code).

    with lower_trace.trace() as run:       # a cell; `run` as the cell's last expression shows the report
        kernel = tilelang.compile(...)
    lower_trace.show(run, kernel="gemm", view="timing")   # one view of it
    %load_ext lower_trace                  # then %%lower_trace [--mode terminal|html|both] [--dir DIR]

The frame itself is render/notebook_frame.py's. IPython is imported only by the magic, which IPython
itself loads (%load_ext): importing lower_trace never imports it.
"""

from __future__ import annotations

import argparse
import os
import shlex
from typing import Any

from lower_trace.analysis.text_diff import myers, split_lines
from lower_trace.model import KernelStatus, KernelTrace, PassStatus, Trace
from lower_trace.render.notebook_frame import DEFAULT_HEIGHT, css_height, frame
from lower_trace.store.layout import REPORT, TraceNotFound, find_run_dir
from lower_trace.store.reader import load_trace

VIEWS = ("diff", "source", "timing", "device", "launches")
MODES = ("html", "both", "terminal")
USAGE = "%%lower_trace [--mode terminal|html|both] [--dir DIR]"


class ShowError(ValueError):
    """A wrong argument to show(): IPython prints it as its one line, without a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"ShowError: {self}"]


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


def show(
    run: Any, kernel: str | None = None, view: str = "diff", step: int | str | None = None, height: int | str = DEFAULT_HEIGHT
) -> ReportFrame:
    """One view of a run's report, to show in a notebook: run is what trace()/enable() returned
    (once closed) or a trace folder; kernel its name or id (default: a failed kernel, else the
    first); view one of diff (the kernel's failure, else its largest change), source (the generated
    source), timing, device (nvcc's PTX, SASS, resources), launches (what it was called with, and the
    command that writes a launch as a repro: on its codegen step); step a pass (its number in the report,
    or its name: its first run that changed the IR) for the diff view. A wrong argument is a
    one-line ShowError (a ValueError) naming the right ones."""
    if view not in VIEWS:
        raise ShowError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
    if step is not None and view != "diff":
        raise ShowError(f"step= opens a pass's diff: use it with view='diff', not view={view!r}")
    try:
        css_height(height)  # a bad height says so before anything is read
    except ValueError as exc:
        raise ShowError(str(exc)) from None
    run_dir = _run_dir(run)
    report = os.path.join(run_dir, REPORT)
    if not os.path.exists(report):
        raise ShowError(f"{run_dir} has no report.html (a run in terminal or trace mode): `lower-trace report {run_dir}` writes one")
    trace = load_trace(run_dir)
    chosen = _kernel(trace.kernels, kernel, run_dir)
    start = _start(trace, chosen, view, step)
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
            raise ShowError(str(exc)) from None
    run_dir = getattr(run, "run_dir", None)
    if not isinstance(run_dir, str):
        raise TypeError(f"show() takes a run (what lower_trace.trace() or enable() returned) or a trace folder, not {type(run).__name__}")
    if getattr(run, "closed", True) is False:
        raise ShowError("the run is still open: show it after its with block (or after lower_trace.reset() / disable())")
    return run_dir


def _kernel(kernels: tuple[KernelTrace, ...], wanted: str | None, run_dir: str) -> KernelTrace:
    if not kernels:
        raise ShowError(f"no kernel was compiled in {run_dir}")
    if wanted is None:
        return next((k for k in kernels if k.status is KernelStatus.FAILED), kernels[0])
    found = next((k for k in kernels if k.kernel_id == wanted), None) or next((k for k in kernels if k.name == wanted), None)
    if found is None:
        names = ", ".join(dict.fromkeys(k.name for k in kernels))
        ids = "its id k1" if len(kernels) == 1 else f"their ids k1..k{len(kernels)}"
        raise ShowError(f"no kernel {wanted!r} in this run; its kernels: {names} (or {ids})")
    return found


def _start(trace: Trace, kernel: KernelTrace, view: str, step: int | str | None) -> str:
    """The page's deep link for the view (docs/report.md, "Deep links")."""
    if view == "diff":
        if step is not None:
            return f"{kernel.kernel_id}/{_pass_seq(kernel, step)}"
        if kernel.status is KernelStatus.FAILED:
            return kernel.kernel_id  # the page opens a failed kernel on its failure
        largest = _largest_change(trace, kernel)
        return f"{kernel.kernel_id}/{largest}" if largest is not None else kernel.kernel_id
    if view == "timing":
        return f"{kernel.kernel_id}/timing"
    steps = sorted(kernel.codegen, key=lambda step: step.role != "device")  # the device source first
    if view == "launches" and not kernel.launches:
        raise ShowError(f"kernel {kernel.name!r} was not called while traced (TileLang 0.1.15 records a traced kernel's calls; TL_LOWER_TRACE_LAUNCHES)")
    if view == "device" and kernel.device_stage is None:
        raise ShowError(f"kernel {kernel.name!r} has no device stage in this run (nvcc did not compile it; `lower-trace device` builds one for CUDA)")
    if not steps:
        raise ShowError(f"kernel {kernel.name!r} has no generated source (its compile stopped before codegen)")
    return f"{kernel.kernel_id}/{steps[0].seq}"


def _pass_seq(kernel: KernelTrace, step: int | str) -> int:
    """A pass by its number in the report (#12) or its name (its first run that changed the IR, else its first)."""
    if isinstance(step, int) and not isinstance(step, bool):
        if any(p.seq == step for p in kernel.passes):
            return step
        raise ShowError(f"kernel {kernel.name!r} has no pass #{step}: its passes are #0..#{len(kernel.passes) - 1}")
    named = [p for p in kernel.passes if p.name == step]
    if not named:
        raise ShowError(f"kernel {kernel.name!r} ran no pass named {step!r} (its passes: `lower-trace list RUN --passes -k {kernel.name}`)")
    return next((p for p in named if p.status is PassStatus.CHANGED), named[0]).seq


def _largest_change(trace: Trace, kernel: KernelTrace) -> int | None:
    """The changed pass that added and removed the most lines (the first of equals), counted as the
    page's pass list counts them (the same Myers diff): the diff worth opening on, where the first
    changed pass is most often the target's one-line attribute."""
    best: tuple[int, int] | None = None
    enclosing = {record.parent for record in kernel.passes}
    for record in kernel.passes:
        if record.status is not PassStatus.CHANGED or record.seq in enclosing:
            continue  # a pass that ran others (a Sequential): its change is theirs
        before, after = split_lines(trace.snapshot(record.before)), split_lines(trace.snapshot(record.after))
        size = len(before) + len(after) - 2 * len(myers(before, after))  # lines removed + lines added
        if best is None or size > best[0]:
            best = (size, record.seq)
    return best[1] if best is not None else None


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
