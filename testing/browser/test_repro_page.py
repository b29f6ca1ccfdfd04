"""A failed pass's reproducer, in the report page: the note names the command and copies it
(the reproducers themselves: integration/test_repro.py)."""

import os
import shlex
import subprocess

import pytest

import lower_trace
from lower_trace.model import PassStatus

tilelang = pytest.importorskip("tilelang")

from tilelang import tvm  # noqa: E402

import kernels  # noqa: E402
from support import lower_trace_cli  # noqa: E402

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
        assert box.locator("code").first.inner_text() == f"python {failed.repro}/repro.py"
        view.context.grant_permissions(["clipboard-read", "clipboard-write"])
        box.locator("button.copy").first.click()
        assert view.page.evaluate("navigator.clipboard.readText()") == f"python {failed.repro}/repro.py"
        # Beside it, the command that shrinks the same input: it runs as shown (FOLDER filled in).
        reduce = box.locator(".reduce-note code").inner_text()
        assert reduce == f"lower-trace reduce {run.run_dir} -k {failed.kernel} -p {failed.seq} -o FOLDER"
        words = shlex.split(reduce.replace("FOLDER", str(tmp_path / "reduced")))
        done = subprocess.run([lower_trace_cli(), *words[1:]], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0 and done.stdout.startswith("reduced: statements "), done.stderr
        assert not view.errors(), view.messages
    finally:
        view.close()
