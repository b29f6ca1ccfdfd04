"""The Python API: enable(), reset(), disable(), the trace() context manager, and run_passes();
start(config) for the front ends that make their own Config (the startup hook, ``lower-trace run``).

Here a run is wired: capture gets the edit workflow and the reproducer writer as ports
(capture/ports.py) and the renderers as listeners, so capture imports none of them."""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from lower_trace.capture.messages import Messages
from lower_trace.capture.ports import Ports
from lower_trace.capture.run import TraceRun
from lower_trace.config import Config, make_config
from lower_trace.edits.alias import EditAlias
from lower_trace.edits.working_copies import EditStore
from lower_trace.model import CopyState
from lower_trace.rerun import repro
from lower_trace.store.layout import REPORT
from lower_trace.store.paths import safe_component

_lock = threading.RLock()
_run: TraceRun | None = None
_messages = Messages()
_atexit_registered = False
_first_start = 0.0


class Run(TraceRun):
    """The run the API hands out. As a notebook cell's value it shows its report inline (IPython's
    display protocol; render/notebook_frame.py builds it, nothing here imports IPython)."""

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        from lower_trace.render.notebook_frame import run_bundle

        config = self.config
        return run_bundle(self.report_path, self.run_dir, self.closed, config.writes_report, config.writes_trace, len(self.kernel_summaries))


def current_run() -> TraceRun | None:
    """The run being traced now, or None when tracing is off."""
    return _run


def enable(
    mode: str = "html", trace_dir: str | os.PathLike | None = None, replay: bool | None = None, script: str = "", title: str = "",
    codegen_output: str | os.PathLike | None = "", launches: str | None = None, launch_cap: str | None = None,
) -> TraceRun:
    """Trace every TileLang compile from now on (idempotent).

    mode: "terminal", "html" or "both" (or 1/on/true/yes for html).
    trace_dir: where traces go; default TL_LOWER_TRACE_DIR or ./tmp/lower_trace_dir.
    replay: keep every pass's input for `lower-trace replay` (default TL_LOWER_TRACE_REPLAY, off).
    script: the name of the run's folder under trace_dir (default: the running script's name).
    title: what the report and the CLI call the run (default: that folder's name), shown as given.
    codegen_output: a file that holds the first kernel's editable generated source (as well as
    its working copy in edits/); None: no working copies at all (default: working copies in edits/).
    launches: what each traced kernel's calls keep: "meta" (arguments described), "data" (their tensors
    too, for `lower-trace repro --launch`), "off"; ":N" the first N a kernel (default TL_LOWER_TRACE_LAUNCHES, meta:8).
    launch_cap: data mode's bytes kept a launch[,a run], e.g. "64MiB,1GiB" (default TL_LOWER_TRACE_LAUNCH_CAP).
    Calling it again with the same settings does nothing; with other settings it
    closes the current run and starts a new one.
    """
    config = make_config(mode, trace_dir, replay, safe_component(script, "python") if script else "", title, codegen_output, launches, launch_cap)
    if not config.enabled:
        disable()
        raise ValueError(f"enable() needs a mode that turns tracing on, not {mode!r}; call disable() to switch off")
    return start(config)


def start(config: Config) -> TraceRun:
    """Trace every compile from now on with config (what enable() does once it has made one):
    the same config as the open run's keeps that run; another closes it and starts a new one."""
    global _run, _atexit_registered, _first_start
    from lower_trace import integrations

    with _lock:
        if _run is not None and _run.config == config and not _run.closed:
            return _run
        if _run is not None:
            _run.close()
        _run = Run(config, _messages, _PORTS)
        _attach_renderers(_run)
        _first_start = _first_start or _run.info.started
        if not _atexit_registered:
            atexit.register(_at_exit)
            _atexit_registered = True
        integrations.attach(current_run)
        return _run


def _edited_copies(script_dir: str) -> str | None:
    """The folder of a script's working copies when one of them holds an edit, else None."""
    store = EditStore(script_dir)
    return store.root if any(entry.state is CopyState.EDITED for entry in store.entries()) else None


# What capture reaches outside itself (capture/ports.py): working copies, codegen_output's alias, reproducers.
_PORTS = Ports(working_copies=EditStore, codegen_alias=EditAlias, edited_copies=_edited_copies, reproducers=repro)


def _attach_renderers(run: TraceRun) -> None:
    """The views a run feeds as kernels finish: the live terminal view, the HTML report."""
    try:
        from lower_trace.render.live import ReportListener, TerminalListener
    except Exception as exc:  # a broken renderer must not stop tracing (nor the program)
        run.tracer_fault(exc)
        return
    if run.config.prints_terminal:
        run.add_listener(TerminalListener(lambda: _messages.stream, run.config.live_filter))
    if run.config.writes_report:
        report = os.path.join(run.run_dir, REPORT)
        run.add_listener(ReportListener(report, run.info, latest_link=os.path.join(run.script_dir, REPORT), run_dir=run.run_dir))


def reset() -> TraceRun | None:
    """Close the current run (its report is written) and trace later compiles into a fresh one."""
    with _lock:
        if _run is None:
            return None
        config = _run.config
        _run.close(quiet_if_empty=True)
        return start(config)


def disable() -> None:
    """Stop tracing: close the run and detach from TileLang, restoring what was changed (idempotent)."""
    global _run
    from lower_trace import integrations

    with _lock:
        run, _run = _run, None
        integrations.detach()
        if run is not None:
            run.close(quiet_if_empty=True)


@contextmanager
def trace(
    mode: str = "html", trace_dir: str | os.PathLike | None = None, replay: bool | None = None, script: str = "", title: str = "",
    launches: str | None = None, launch_cap: str | None = None,
) -> Iterator[TraceRun]:
    """Trace the compiles inside the block into a run of their own; the previous state comes back after."""
    previous = _run.config if _run is not None else None
    run = enable(mode, trace_dir, replay, script, title, launches=launches, launch_cap=launch_cap)
    if previous is not None and run.config == previous:
        run = reset() or run  # a run of its own even when the same tracing was already on
    try:
        yield run
    finally:
        if previous is None:
            disable()
        else:
            _run.close() if _run is not None else None
            start(previous)


def instrument(mode: str = "html", trace_dir: str | os.PathLike | None = None) -> object:
    """A TVM PassInstrument any PassContext can carry: one traced compile per PassContext.

        with tvm.transform.PassContext(instruments=[lower_trace.instrument()]):
            tvm.compile(mod, target="llvm")

    Switches tracing on (as enable() does) if it is off.
    """
    if _run is None:
        enable(mode, trace_dir)
    from lower_trace.integrations.adapters.tvm import session_instrument

    return session_instrument(current_run)


def run_passes(
    func_or_mod: object, passes: object, mode: str = "terminal", context: int = 3, html_path: str | os.PathLike | None = "lower_trace_report.html",
    trace_dir: str | os.PathLike | None = None,
) -> list[dict[str, object]]:
    """Run a chain of passes on a PrimFunc or IRModule and show what each did -- TileLang's one-shot
    lower_trace(), in lower-trace: passes is a pass, a list of passes or of (name, pass) pairs.

    The chain is traced as one compile of a run of its own (nested passes too): mode "terminal"
    prints it, "html" writes the report to html_path (and the trace under trace_dir), "both" does
    both. Returns one entry per pass: name, before_script, after_script, diff_lines (a unified
    diff with `context` lines around changes), insertions, deletions, changed; a pass that raised
    has an entry with "error" too, and its exception is raised after the report is written.
    """
    import shutil

    from lower_trace.analysis.text_diff import unified_lines
    from lower_trace.integrations.adapters import one_shot

    text = str(mode).strip().lower()
    if text not in ("terminal", "html", "both"):
        raise ValueError(f"mode must be one of 'terminal', 'html', 'both', got {mode!r}")
    named = one_shot_passes(passes, one_shot.pass_name)
    steps: list[one_shot.Step] = []
    run_dir = ""
    try:
        with trace(mode=text, trace_dir=trace_dir) as run:
            run_dir = run.run_dir if run.config.writes_trace else ""
            one_shot.run_chain(current_run, func_or_mod, named, steps)
    finally:
        if text in ("html", "both") and html_path and run_dir and os.path.exists(os.path.join(run_dir, REPORT)):
            shutil.copyfile(os.path.join(run_dir, REPORT), os.fspath(html_path))
            _messages.stream.write(f"lower-trace: report of the {len(named)} passes: file://{os.path.abspath(os.fspath(html_path))}\n")
    results: list[dict[str, object]] = []
    for index, (name, before, after, error) in enumerate(steps, 1):
        lines = unified_lines(before, after, f"step {index} before", f"step {index} after", context) if not error else []
        insertions = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
        deletions = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
        entry: dict[str, object] = dict(
            name=name, before_script=before, after_script=after, diff_lines=lines, insertions=insertions, deletions=deletions,
            changed=bool(insertions or deletions),
        )
        if error:
            entry["error"] = error
        results.append(entry)
    return results


def one_shot_passes(passes: object, name_of: Callable[[object], str]) -> list[tuple[str, object]]:
    """A pass, a (name, pass) pair, or a list of either -> [(name, pass)]."""
    if (isinstance(passes, tuple) and len(passes) == 2 and isinstance(passes[0], str)) or not isinstance(passes, (list, tuple)):
        passes = [passes]
    named: list[tuple[str, object]] = []
    for item in passes:
        if isinstance(item, (list, tuple)) and len(item) == 2:
            named.append((str(item[0]), item[1]))
        else:
            named.append((name_of(item), item))
    return named


def _at_exit() -> None:
    run = _run
    if run is not None:
        # "Nothing was compiled" is worth saying only when tracing was on the whole time.
        run.close(quiet_if_empty=run.info.started != _first_start)
