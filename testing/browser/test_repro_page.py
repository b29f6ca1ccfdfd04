"""A failed pass's reproducer, in the report page: the note names the command and copies it
(the reproducers themselves: integration/test_repro.py)."""

import os

import pytest

import lower_trace
from lower_trace.model import PassStatus

tilelang = pytest.importorskip("tilelang")

from tilelang import tvm  # noqa: E402

import kernels  # noqa: E402

CUDA = {"kind": "cuda", "arch": "sm_90a"}


def lower(func):
    """As integration/test_repro.py lowers: to CUDA, under a PassContext of its own."""
    target = tvm.target.Target(CUDA)
    with tvm.transform.PassContext(config={}), target:
        return tilelang.lower(func, target=target)


def test_the_report_shows_the_reproducer_command(browser, tmp_path):
    from report_fixtures import Page

    with pytest.raises(Exception), lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        lower(kernels.transposed_fragment())
    (failed,) = [p for p in lower_trace.load_trace(run.run_dir).kernels[0].passes if p.status is PassStatus.FAILED]
    view = Page(browser, os.path.join(run.run_dir, "report.html"))
    try:
        assert view.active() == failed.seq  # the report opens on the failure
        box = view.page.locator("#detail .repro-note")
        assert box.locator("code").inner_text() == f"python {failed.repro}/repro.py"
        view.context.grant_permissions(["clipboard-read", "clipboard-write"])
        box.locator("button.copy").click()
        assert view.page.evaluate("navigator.clipboard.readText()") == f"python {failed.repro}/repro.py"
        assert not view.errors(), view.messages
    finally:
        view.close()
