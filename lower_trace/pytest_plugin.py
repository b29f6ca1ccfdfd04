"""The pytest plugin (entry point ``pytest11``): ``pytest --lower-trace`` traces each test's compiles
into a run of its own, keeps the traces of failing tests (all with --lower-trace-keep=all), and
puts the report's path in the failure's section of pytest's output.

A test's runs are a script folder of their own, named after the test, in <dir>/pytest (so
``lower-trace list <dir>/pytest`` shows the latest, ``list --runs`` every one). The folder's name is
a safe path part made from the node id; the report, the CLI and the messages name the test by its
node id, as pytest does (``tests/test_k.py::test_axpy``). Loaded by every
pytest where lower-trace is installed, so it imports nothing of lower-trace (nor TVM) until the
option is given. Under pytest-xdist each worker traces its own tests; the controller counts them.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

MODES = ("html", "terminal", "both", "trace")
KEEPS = ("failed", "all")
_STATE = pytest.StashKey[dict]()
_KEPT = "lower_trace_kept"  # a report's user property: the folder kept for the test (crosses xdist)


def _take_back_a_path(config: Any) -> None:
    """`pytest --lower-trace tests/`: the option's value is optional, so argparse gave it the path.
    A value that is no mode but names tests is given back to pytest as what to run (html)."""
    value = config.option.lower_trace
    if value is None or value in MODES:
        return
    if not (os.path.exists(value.split("::")[0]) or "::" in value or value.endswith(".py")):
        raise pytest.UsageError(
            f"--lower-trace {value!r}: neither a mode nor a test file or folder that exists; use --lower-trace, or --lower-trace=html, terminal or both"
        )
    config.option.lower_trace = "html"
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        config.args.insert(0, value)
    else:  # nothing else was named: pytest had fallen back to testpaths or the current folder
        config.args[:] = [value]
        config.args_source = pytest.Config.ArgsSource.ARGS


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("lower-trace", "trace TileLang / TVM compiles per test")
    group.addoption(
        "--lower-trace", nargs="?", const="html", default=None, dest="lower_trace", metavar="html|terminal|both",
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
    if mode is None and config.getoption("lower_trace_keep"):
        raise pytest.UsageError("--lower-trace-keep needs --lower-trace (or lower_trace = html in the ini file)")
    keep = config.getoption("lower_trace_keep") or (config.getini("lower_trace_keep") or "").strip() or "failed"
    if keep not in KEEPS:
        raise pytest.UsageError(f"lower_trace_keep = {keep!r}: use failed or all")
    folder = config.getoption("lower_trace_dir")
    if folder is None and mode is not None:  # lower-trace is imported only when asked for
        from lower_trace.config import default_trace_dir
        from lower_trace.store.layout import PYTEST_DIR

        folder = os.path.join(default_trace_dir(), PYTEST_DIR)
    return mode, keep, os.path.abspath(folder or ".")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: Any) -> None:
    _take_back_a_path(config)
    mode, keep, folder = _settings(config)
    config.stash[_STATE] = {"mode": mode, "keep": keep, "folder": folder, "kept": []}
    if mode is not None:
        config.pluginmanager.register(_KeptCounter(config.stash[_STATE]), "lower-trace-kept")


def _test_name(nodeid: str) -> str:
    from lower_trace.store.paths import safe_component

    return safe_component(nodeid.replace("::", "--").replace("/", "-"), "test")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Any:
    state = item.config.stash[_STATE]
    if state["mode"] is None:
        yield
        return
    import lower_trace

    mine: dict[str, Any] = {"failed": False, "kept": False}
    item.stash[_STATE] = mine
    with lower_trace.trace(mode=state["mode"], trace_dir=state["folder"], script=_test_name(item.nodeid), title=item.nodeid) as run:
        mine["run"] = run
        run.quiet_close = True  # the failure's section names the report; a passing test's is deleted
        yield
        run.worker.wait()
    if not mine["kept"]:
        shutil.rmtree(run.script_dir, ignore_errors=True)  # a passing test (or one that compiled nothing) leaves nothing


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    mine = item.stash.get(_STATE, None)
    if mine is None or "run" not in mine:
        return
    run = mine["run"]
    if call.when == "teardown":  # the test's last report: is its trace kept?
        run.worker.wait()
        mine["kept"] = bool(run.kernel_summaries) and (mine["failed"] or report.failed or item.config.stash[_STATE]["keep"] == "all")
        if mine["kept"]:
            report.user_properties.append((_KEPT, run.script_dir))
    if not report.failed:
        return
    mine["failed"] = True
    run.worker.wait()  # the kernels the test compiled have been handed over
    count = len(run.kernel_summaries)
    if not count:
        report.sections.append(("lower-trace", "this test compiled no kernel before it failed: nothing was traced"))
        return
    from lower_trace.text_safety import plural

    where = f"report: file://{run.report_path}" if run.config.writes_report else f"trace: {run.run_dir}"
    report.sections.append(("lower-trace", f"traced {plural(count, 'kernel')}; {where}"))


class _KeptCounter:
    """Collects the tests whose traces were kept (node ids) where reports arrive: in this process,
    or from the xdist workers on the controller."""

    def __init__(self, state: dict) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: Any) -> None:
        if any(name == _KEPT for name, _ in getattr(report, "user_properties", ())):
            self.state["kept"].append(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any, config: Any) -> None:
    state = config.stash.get(_STATE, None)
    if state and state["mode"] is not None and state["kept"]:
        from lower_trace.text_safety import plural, printable

        kept = state["kept"]
        tests = plural(len(kept), "test")
        names = ", ".join(printable(nodeid) for nodeid in kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
        terminalreporter.write_line(f"lower-trace: traces of {tests} kept in {state['folder']} (lower-trace list --runs {state['folder']}): {names}")
