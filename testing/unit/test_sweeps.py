"""Sweeps: many variants of one kernel in one run stay quiet, filtered and correct.

The worker and message tests need no compiler; the sweep tests lower real
TileLang kernel variants (CUDA source on the CPU) in a fresh interpreter.
"""

import io
import os
import re
import threading
import time

import pytest

from lower_trace.capture.messages import GROUP_LIMIT, Messages
from lower_trace.capture.worker import Worker
from lower_trace.config import ConfigError, LiveFilter, color_wanted, config_from_env, parse_filter

# --- the worker ------------------------------------------------------------------


def test_worker_runs_every_job_in_submission_order_urgent_or_not():
    seen, faults = [], []
    worker = Worker(faults.append, threaded=True)
    for i in range(1000):
        worker.submit(lambda i=i: seen.append(i), urgent=(i % 97 == 0))
    worker.wait()
    assert seen == list(range(1000))
    worker.submit(lambda: seen.append("late"))  # not urgent: nobody wakes the worker ...
    worker.close()  # ... but closing runs what is queued
    assert seen[-1] == "late" and not faults


def test_worker_calls_on_idle_after_a_batch_and_reports_faults():
    idles, faults = [], []
    worker = Worker(faults.append, on_idle=lambda: idles.append(1), threaded=True)
    worker.submit(lambda: 1 / 0, urgent=True)
    worker.wait()
    assert [type(f) for f in faults] == [ZeroDivisionError]
    assert idles  # the store flushes when the queue runs dry
    worker.close()


def test_worker_backlog_makes_a_runaway_producer_wait():
    gate = threading.Event()
    worker = Worker(lambda exc: None, threaded=True)
    worker.submit(gate.wait, urgent=True)  # the worker is stuck until the gate opens
    started = time.monotonic()
    threading.Timer(0.3, gate.set).start()
    for _ in range(5000):  # more than the backlog: submit blocks until the worker drains
        worker.submit(lambda: None)
    assert time.monotonic() - started >= 0.25
    worker.close()


def test_an_inline_worker_runs_each_job_at_once_and_flushes_after_it():
    events = []
    worker = Worker(events.append, on_idle=lambda: events.append("flush"))
    worker.submit(lambda: events.append("job"), urgent=False)
    assert events == ["job", "flush"] and worker._thread is None  # one core: a thread could only cost
    worker.wait()
    worker.close()


def test_the_run_uses_a_thread_only_with_a_spare_core(run_python, tilelang):
    code = """
import lower_trace
run = lower_trace.enable(mode="html")
print(run.worker.threaded)
"""
    pinned = run_python("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n" + code)
    assert pinned.stdout.strip() == "False"
    if len(os.sched_getaffinity(0)) > 1:
        assert run_python(code).stdout.strip() == "True"


# --- messages ---------------------------------------------------------------------


def test_messages_of_a_group_are_said_a_few_times_then_summarised():
    stream = io.StringIO()
    messages = Messages(stream)
    for i in range(50):
        messages.say(f"k{i}: generated source saved", group="created", more="{n} more working copies saved")
    messages.say("warning", once="w")
    messages.say("warning", once="w")
    messages.flush_groups()
    lines = stream.getvalue().splitlines()
    assert lines[:GROUP_LIMIT] == [f"lower-trace: k{i}: generated source saved" for i in range(GROUP_LIMIT)]
    assert lines[GROUP_LIMIT:] == ["lower-trace: warning", f"lower-trace: {50 - GROUP_LIMIT} more working copies saved"]
    messages.flush_groups()  # groups start afresh: nothing left to say
    assert len(stream.getvalue().splitlines()) == len(lines)


def test_a_summary_names_what_it_counted():
    stream = io.StringIO()
    messages = Messages(stream)
    for i in range(GROUP_LIMIT + 5):
        messages.say(f"softmax {i}", group="created", more="{n} more ({by})", label="softmax")
    for i in range(2):
        messages.say(f"mm {i}", group="created", more="{n} more ({by})", label="mm")
    messages.flush_groups()
    assert stream.getvalue().splitlines()[-1] == "lower-trace: 7 more (softmax 5, mm 2)"


# --- configuration ----------------------------------------------------------------


def test_the_filter_syntax():
    assert parse_filter("") == LiveFilter()
    assert parse_filter("kernel=gemm.*; pass=Simplify|LowerTileOp ;changed") == LiveFilter("gemm.*", "Simplify|LowerTileOp", "", True)
    assert parse_filter("phase=pipeline_cuda").phase == "pipeline_cuda"
    for bad in ("kernels=x", "changed=1", "pass=(", "gemm"):
        with pytest.raises(ConfigError, match="TL_LOWER_TRACE_FILTER"):
            parse_filter(bad)


def test_a_bad_filter_is_reported_and_ignored_not_fatal():
    config = config_from_env({"TL_LOWER_TRACE": "terminal", "TL_LOWER_TRACE_FILTER": "pass=("})
    assert config.enabled and not config.live_filter.active
    assert "TL_LOWER_TRACE_FILTER" in config.filter_error and "not filtered" in config.filter_error


def test_where_a_setting_came_from_does_not_make_it_another_setting(monkeypatch):
    from lower_trace.config import make_config

    monkeypatch.delenv("TL_LOWER_TRACE_DIR", raising=False)
    from_env = config_from_env({"TL_LOWER_TRACE": "html"})
    from_api = make_config("html")
    assert from_env == from_api  # so enable() in a script run with TL_LOWER_TRACE=html keeps the run
    assert (from_env.mode_setting, from_api.mode_setting) == ("TL_LOWER_TRACE", "mode=")
    assert from_api.dir_setting == "TL_LOWER_TRACE_DIR" and make_config("html", "d").dir_setting == "trace_dir="


def test_term_dumb_means_no_colour_unless_forced():
    assert color_wanted(True, {"TERM": "dumb"}) is False
    assert color_wanted(True, {"TERM": "xterm-256color"}) is True
    assert color_wanted(False, {"TERM": "dumb", "FORCE_COLOR": "1"}) is True


# --- real sweeps ----------------------------------------------------------------------

SWEEP = """
import kernels, tilelang
from tilelang import tvm
target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
for variant in kernels.sweep_variants(COUNT):
    with target:
        tilelang.lower(kernels.scaled_add(**variant), target=target)
"""


def lowering(*calls):
    """A user's script that lowers kernels.<call> for each call to CUDA sm_90a source."""
    lines = "\n".join(f"    tilelang.lower(kernels.{call}, target=target)" for call in calls)
    return f"""
import kernels, tilelang
from tilelang import tvm
target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
with target:
{lines}
"""


def lower_trace_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("lower-trace:")]


@pytest.mark.tilelang
def test_a_sweep_of_40_variants_says_under_20_lines(run_python, tmp_path, tilelang):
    count = 40
    proc = run_python(SWEEP.replace("COUNT", str(count)), env={"TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_DIR": str(tmp_path / "traces")})
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) < 20, proc.stderr
    ours = lower_trace_lines(proc.stderr)
    assert ours[-1].startswith(f"lower-trace: traced {count} kernels, ") and "report: file://" in ours[-1]
    # Ground truth from the folder itself: every working copy written is either named or counted.
    edits = tmp_path / "traces" / "user_kernel" / "edits"
    copies = sorted(p.name for p in edits.glob("scaled_add*.cu"))
    named = [line for line in ours if "generated source saved to" in line]
    assert len(named) == min(GROUP_LIMIT, len(copies))
    if len(copies) > GROUP_LIMIT:
        (summary,) = [line for line in ours if "more working copies (" in line]
        assert f"{len(copies) - GROUP_LIMIT} more working copies (scaled_add) saved in" in summary and "lower-trace edits" in summary


@pytest.mark.tilelang
def test_the_live_filter_prints_only_what_it_selects(run_python, tmp_path, tilelang):
    import lower_trace
    from lower_trace.model import PassStatus

    code = lowering("elementwise_add()", "row_sum()")
    env = {
        "TL_LOWER_TRACE": "both",
        "TL_LOWER_TRACE_DIR": str(tmp_path),
        "TL_LOWER_TRACE_FILTER": "kernel=^row_sum$;pass=Simplify|LowerTileOp;changed",
        "NO_COLOR": "1",
    }
    proc = run_python(code, env=env)
    trace = lower_trace.load_trace(str(tmp_path))
    assert [k.name for k in trace.kernels] == ["elementwise_add", "row_sum"]  # the trace itself is whole
    row_sum = trace.kernel("row_sum")
    expected = [p.seq for p in row_sum.passes if re.search("Simplify|LowerTileOp", p.name) and p.status is PassStatus.CHANGED]
    assert expected  # the filter selects something real
    headers = [line for line in proc.stderr.splitlines() if line.startswith("== lower-trace: kernel")]
    assert len(headers) == 1 and "row_sum" in headers[0]
    shown = [int(m.group(1)) for m in re.finditer(r"^\s*(\d+) \S+\s+\S", proc.stderr, re.M)]
    codegen = {c.seq for c in row_sum.codegen}
    assert [seq for seq in shown if seq not in codegen] == expected


@pytest.mark.tilelang
def test_a_bad_filter_warns_once_and_traces_unfiltered(run_python, tmp_path, tilelang):
    code = lowering("row_sum()")
    proc = run_python(code, env={"TL_LOWER_TRACE": "terminal", "TL_LOWER_TRACE_FILTER": "pass=(", "NO_COLOR": "1"})
    warnings = [line for line in proc.stderr.splitlines() if "TL_LOWER_TRACE_FILTER" in line]
    assert len(warnings) == 1 and "not filtered" in warnings[0]
    assert "== lower-trace: kernel k1 row_sum" in proc.stderr


def test_a_closed_worker_stops_its_thread_and_runs_later_jobs_inline():
    worker = Worker(lambda exc: None, threaded=True)
    worker.submit(lambda: None, urgent=True)
    thread = worker._thread
    worker.close()
    assert thread is not None and not thread.is_alive()
    ran_on = []
    worker.submit(lambda: ran_on.append(threading.current_thread()))
    assert ran_on == [threading.current_thread()]
