"""Sweeps: many variants of one kernel in one run stay quiet, filtered and correct.

The worker, the messages and the live filter on their own, no compiler; the sweeps of real
TileLang kernel variants are integration/test_real_sweeps.py.
"""

import io
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


def test_a_closed_worker_stops_its_thread_and_runs_later_jobs_inline():
    worker = Worker(lambda exc: None, threaded=True)
    worker.submit(lambda: None, urgent=True)
    thread = worker._thread
    worker.close()
    assert thread is not None and not thread.is_alive()
    ran_on = []
    worker.submit(lambda: ran_on.append(threading.current_thread()))
    assert ran_on == [threading.current_thread()]
