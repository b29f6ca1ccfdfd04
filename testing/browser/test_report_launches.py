"""A kernel's recorded launches in the report page (the launches themselves: integration/test_launches.py and
test_launch_repro.py): on its codegen step, a row per call as torch saw the tensors, what the call wrote,
and a command that writes the launch as a repro -- copied with one click, and it runs as shown."""

import os
import shlex
import subprocess
import sys

import pytest

import lower_trace

tilelang = pytest.importorskip("tilelang")
torch = pytest.importorskip("torch")

import kernels  # noqa: E402
from support import lower_trace_cli  # noqa: E402


def test_the_codegen_step_lists_the_launches_and_copies_a_repro_command_that_works(browser, tmp_path):
    from report_fixtures import Page

    a, b = torch.arange(64, dtype=torch.float32), torch.ones(64)
    with lower_trace.trace(mode="html", trace_dir=tmp_path, launches="data") as run:
        add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
        for _ in range(3):
            add(a, b, torch.zeros(64))
    (kernel,) = lower_trace.load_trace(run.run_dir).kernels
    (codegen,) = [c for c in kernel.codegen if c.role == "device"]
    view = Page(browser, os.path.join(run.run_dir, "report.html"), f"#{kernel.kernel_id}/{codegen.seq}")
    try:
        box = view.page.locator("#detail section.launches")
        box.wait_for(timeout=10000)
        assert box.locator("h3").inner_text() == "launches · 3 recorded"
        rows = box.locator("table.launch-table tr")
        assert rows.count() == 4  # the header and a row per call
        first = rows.nth(1).locator("td")
        assert [first.nth(0).inner_text(), first.nth(4).inner_text()] == ["1", kernel.launches[0].site]
        assert first.nth(2).inner_text().split("\n") == ["A float32[64] cpu · kept", "B float32[64] cpu · kept", "C float32[64] cpu (written) · kept"]
        command = box.locator(".repro-note code").inner_text()
        assert command == f"lower-trace repro {run.run_dir} --launch k1:1 --rebuild generated -o repro-k1-1"
        view.context.grant_permissions(["clipboard-read", "clipboard-write"])
        box.locator("button.copy").click()
        assert view.page.evaluate("navigator.clipboard.readText()") == command
        assert not view.errors(), view.messages
    finally:
        view.close()
    words = shlex.split(command.replace("repro-k1-1", str(tmp_path / "repro")))
    done = subprocess.run([lower_trace_cli(), *words[1:]], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ran = subprocess.run([sys.executable, str(tmp_path / "repro" / "run.py")], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and "results match (bitwise)" in ran.stdout, ran.stdout + ran.stderr[-2000:]


def test_the_notebook_opens_the_launches_where_the_page_shows_them(tmp_path):
    a = torch.arange(64, dtype=torch.float32)
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
        add(a, a, torch.zeros(64))
        tilelang.compile(kernels.scale_c(), target="c", execution_backend="cython")  # never called
    add_kernel, scale = lower_trace.load_trace(run.run_dir).kernels
    device = next(c for c in add_kernel.codegen if c.role == "device")
    assert lower_trace.show(run, kernel="k1", view="launches").start == f"k1/{device.seq}"
    with pytest.raises(ValueError, match=r"^kernel 'scale' was not called while traced"):
        lower_trace.show(run, kernel=scale.kernel_id, view="launches")
