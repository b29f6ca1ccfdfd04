"""The pytest plugin (entry point ``pytest11``): ``pytest --lower-trace`` traces each test's compiles
into a run of its own, keeps the traces of failing tests (all with --lower-trace-keep=all), and
puts the report's path in the failure's section of pytest's output.

Loaded by every pytest where lower-trace is installed, so it imports nothing of lower-trace (nor
TVM) until the option is given. Under pytest-xdist each worker traces its own tests.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

MODES = ("html", "terminal", "both")
KEEPS = ("failed", "all")
_STATE = pytest.StashKey[dict]()


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("lower-trace", "trace TileLang / TVM compiles per test")
    group.addoption(
        "--lower-trace", nargs="?", const="html", default=None, choices=MODES, dest="lower_trace",
        help="trace each test's compiles into a run of its own (html, terminal or both; default html)",
    )
    group.addoption("--lower-trace-keep", default=None, choices=KEEPS, dest="lower_trace_keep", help="keep the traces of failed tests (default) or of all")
    group.addoption("--lower-trace-dir", default=None, dest="lower_trace_dir", help="where the per-test traces go (default <TL_LOWER_TRACE_DIR>/pytest)")
    parser.addini("lower_trace", "trace each test's compiles: html, terminal or both (as --lower-trace)", default="")
    parser.addini("lower_trace_keep", "failed (default) or all", default="")


def _settings(config: Any) -> tuple[str | None, str, str]:
    mode = config.getoption("lower_trace") or (config.getini("lower_trace") or "").strip() or None
    if mode is not None and mode not in MODES:
        raise pytest.UsageError(f"lower_trace = {mode!r} in the ini file: use one of {', '.join(MODES)}")
    keep = config.getoption("lower_trace_keep") or (config.getini("lower_trace_keep") or "").strip() or "failed"
    if keep not in KEEPS:
        raise pytest.UsageError(f"lower_trace_keep = {keep!r}: use failed or all")
    folder = config.getoption("lower_trace_dir")
    if folder is None and mode is not None:  # lower-trace is imported only when asked for
        from lower_trace.config import default_trace_dir

        folder = os.path.join(default_trace_dir(), "pytest")
    return mode, keep, os.path.abspath(folder or ".")


def pytest_configure(config: Any) -> None:
    mode, keep, folder = _settings(config)
    config.stash[_STATE] = {"mode": mode, "keep": keep, "folder": folder, "kept": 0}


def _test_folder(folder: str, nodeid: str) -> str:
    from lower_trace.paths import safe_component

    return os.path.join(folder, safe_component(nodeid.replace("::", "--").replace("/", "-"), "test"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Any:
    state = item.config.stash[_STATE]
    if state["mode"] is None:
        yield
        return
    import lower_trace

    folder = _test_folder(state["folder"], item.nodeid)
    item.stash[_STATE] = {"failed": False, "folder": folder}
    with lower_trace.trace(mode=state["mode"], trace_dir=folder) as run:
        item.stash[_STATE]["run"] = run
        run.quiet_close = True  # the failure's section names the report; a passing test's is deleted
        yield
        run.worker.wait()
    kept = state["keep"] == "all" or item.stash[_STATE]["failed"]
    if not kept or not run.kernel_summaries:
        shutil.rmtree(folder, ignore_errors=True)  # a passing test (or one that compiled nothing) leaves nothing
    else:
        state["kept"] += 1


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    mine = item.stash.get(_STATE, None)
    if mine is None or "run" not in mine or not report.failed:
        return
    mine["failed"] = True
    run = mine["run"]
    run.worker.wait()  # the kernels the test compiled have been handed over
    count = len(run.kernel_summaries)
    if not count:
        report.sections.append(("lower-trace", "this test compiled no kernel before it failed: nothing was traced"))
        return
    where = f"report: file://{run.report_path}" if run.config.writes_report else f"trace: {run.run_dir}"
    report.sections.append(("lower-trace", f"traced {count} kernel{'s' if count != 1 else ''}; {where}"))


def pytest_terminal_summary(terminalreporter: Any, config: Any) -> None:
    state = config.stash.get(_STATE, None)
    if state and state["mode"] is not None and state["kept"]:
        terminalreporter.write_line(f"lower-trace: traces of {state['kept']} test(s) kept in {state['folder']}")
