"""capture/faults.py's Guard, the one guard around the tracer's own work, on a real TraceRun: a
fault is one warning and a traceback in the run's tracer-faults.txt, the code after it runs, and
what is not the tracer's to swallow (KeyboardInterrupt, SystemExit) goes through."""

from __future__ import annotations

import io
import os

import pytest

from lower_trace.capture.faults import Guard, guarded, guarded_job
from lower_trace.capture.messages import Messages
from lower_trace.capture.run import TraceRun
from lower_trace.capture.tracker import PassTracker
from lower_trace.config import config_from_env
from lower_trace.store.layout import TRACER_FAULTS


def traced_run(tmp_path) -> tuple[TraceRun, io.StringIO]:
    stderr = io.StringIO()
    config = config_from_env({"TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_DIR": str(tmp_path)})
    return TraceRun(config, messages=Messages(stderr)), stderr


def fails_here() -> int:
    return 1 // 0  # the line the kept traceback must name


def test_a_fault_is_one_warning_its_tracebacks_kept_and_the_code_after_it_runs(tmp_path):
    run, stderr = traced_run(tmp_path)
    after = []
    with run.faults:
        fails_here()
        after.append("inside")  # never reached: the block is left at the fault
    after.append("with")
    assert run.faults.call(fails_here) is None
    guarded_job(run.tracer_fault, fails_here)  # the worker's form
    after.append("call")
    assert run.faults.call(divmod, 7, 2) == (3, 1)  # no fault: the function's own result
    assert after == ["with", "call"]
    lines = [line for line in stderr.getvalue().splitlines() if line]
    assert len(lines) == 1, lines  # three faults of one kind: one line
    assert "internal error" in lines[0] and "ZeroDivisionError" in lines[0] and "your compile is not affected" in lines[0]
    kept = open(os.path.join(run.run_dir, TRACER_FAULTS), encoding="utf-8").read()
    assert kept.count("ZeroDivisionError") == 3 and kept.count("return 1 // 0") == 3
    assert os.path.join(run.run_dir, TRACER_FAULTS) in lines[0]
    run.close(quiet_if_empty=True)


@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_what_is_not_the_tracers_to_swallow_goes_through(kind):
    reported: list[BaseException] = []
    guard = Guard(reported.append)
    with pytest.raises(kind), guard:
        raise kind()
    with pytest.raises(kind):
        guard.call(lambda: (_ for _ in ()).throw(kind()))
    with pytest.raises(kind):
        guarded(reported.append, lambda: (_ for _ in ()).throw(kind()))
    with pytest.raises(kind):
        guarded_job(reported.append, lambda: (_ for _ in ()).throw(kind()))
    assert reported == []


class FaultySession:
    """A session whose pass_started fails: what the tracker does with a fault in a pass callback."""

    def __init__(self) -> None:
        self.faults: list[BaseException] = []
        self.finished: list[object] = []

    def pass_started(self, mod, name, depth, parent):
        raise RuntimeError(f"cannot start {name}")

    def pass_finished(self, open_pass, mod):
        self.finished.append(open_pass)

    def passes_interrupted(self, open_passes, error=None):
        raise AssertionError("not reached")

    def should_run(self, mod, name, depth, parent):
        return True

    def tracer_fault(self, exc):
        self.faults.append(exc)


def test_a_pass_callback_that_faults_never_reaches_the_compile():
    class Info:
        name = "tl.LowerTileOp"

    session = FaultySession()
    tracker = PassTracker(session)
    tracker.enter_pass_ctx()
    tracker.run_before_pass(object(), Info())  # raises nothing
    tracker.run_after_pass(object(), Info())  # the pass whose start faulted has no record to finish
    tracker.exit_pass_ctx()
    assert [str(exc) for exc in session.faults] == ["cannot start tl.LowerTileOp"]
    assert session.finished == []
