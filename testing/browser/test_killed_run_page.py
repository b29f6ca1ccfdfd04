"""A run killed (SIGKILL) while a nested pass runs, in the report page: the passes open at the
kill show as incomplete under their parent (the run: testing/shared_runs.py; what the trace and
the CLI say of it: integration/test_killed_run.py)."""

import subprocess

import pytest

from lower_trace.model import CRASHED_NESTED
from shared_runs import clean_env
from support import lower_trace_cli

pytest.importorskip("tilelang")


def test_the_report_page_shows_them_under_their_parent(killed, browser, tmp_path):
    from report_fixtures import Page

    path, trace, _, _ = killed
    passes = {p.name: p for p in trace.kernels[0].passes}
    outer, inner = passes["test.Outer"], passes["test.Inner"]
    out = tmp_path / "report.html"
    assert subprocess.run([lower_trace_cli(), "report", path, "-o", str(out)], capture_output=True, env=clean_env(), timeout=120).returncode == 0
    view = Page(browser, str(out))
    try:
        row = view.page.locator(f"#passes .step[data-seq='{inner.seq}']")
        assert "incomplete" in row.get_attribute("class")
        assert row.locator(".ms").inner_text() == f"≥{inner.ms:.2f} ms"
        assert row.locator(".name").evaluate("e => e.style.paddingLeft") == "14px"
        row.click()
        meta = view.page.locator("#detail .meta").first.inner_text()
        assert f"nested (depth 1, in #{outer.seq})" in meta and f"{inner.ms:.2f} ms so far" in meta
        assert CRASHED_NESTED in view.page.locator("#detail .error .message").inner_text()
        assert not view.errors(), view.messages
    finally:
        view.close()
