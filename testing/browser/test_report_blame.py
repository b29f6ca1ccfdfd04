"""The report's blame toggle in Chromium: the page blames every line as lower_trace.analysis.blame
does (itself checked against the pass records in test_blame.py), and a blamed line's pass is a
click away from that pass's diff."""

import os

import pytest

from lower_trace.analysis.blame import blame_lines, history
from lower_trace.model import PassStatus
from report_fixtures import Page


@pytest.fixture
def gemm_page(browser, real_trace):
    kernel = real_trace.kernel("gemm")
    page = Page(browser, os.path.join(real_trace.path, "report.html"), f"#{kernel.kernel_id}")
    page.page.evaluate("localStorage.removeItem('lt-blame')")
    page.settle()
    yield page, kernel
    assert not page.errors(), page.messages
    assert all(url.startswith(("file:", "data:", "blob:")) for url in page.requests), page.requests
    page.close()


def python_blame(trace, kernel, seq):
    return [[line.text, None if line.by is None else line.by.seq] for line in blame_lines(history(kernel, trace.snapshot, seq))]


def test_the_page_blames_every_line_as_python_does(gemm_page, real_trace):
    view, kernel = gemm_page
    seqs = [p.seq for p in kernel.passes if p.after] + [None]
    page_blame = view.page.evaluate(
        """async ([id, seqs]) => {
          const summary = LTBlocks.gather().kernels.find((k) => k.id === id);
          const kernel = await LTBlocks.open(summary);
          return seqs.map((seq) => LTBlame.at(kernel, seq === null ? undefined : seq).map((l) => [l.text, l.by ? l.by.seq : null]));
        }""",
        [kernel.kernel_id, seqs],
    )
    assert len(seqs) > 60
    for seq, blamed in zip(seqs, page_blame, strict=False):
        assert blamed == python_blame(real_trace, kernel, seq), seq
    final = page_blame[-1]
    assert len({by for _, by in final}) > 5  # many passes made the final IR, not one


def test_blame_toggle_on_the_codegen_tir_links_each_line_to_its_pass(gemm_page, real_trace):
    view, kernel = gemm_page
    device = next(c for c in kernel.codegen if c.role == "device")
    view.page.locator(f'#passes .step[data-seq="{device.seq}"]').click()
    box = view.page.locator(".ir-box").filter(has_text="final TIR handed to codegen")
    box.locator(".blame-toggle").click()
    rows = box.locator("table.blame tr")
    # The TIR codegen got, line for line, each with the pass that last changed it.
    made_by = next(p for p in reversed(kernel.passes) if p.after and real_trace.snapshot(p.after) == real_trace.snapshot(device.tir))
    expected = python_blame(real_trace, kernel, made_by.seq)
    shown = rows.evaluate_all("rows => rows.map((r) => [r.querySelector('td.code').textContent, r.dataset.seq])")
    assert shown == [[text, "input" if by is None else str(by)] for text, by in expected]
    # Click the pass of a line that tl.* or tir.* made: the pass list and the detail go to that pass's diff.
    line = next(i for i, (_, by) in enumerate(expected) if by is not None and by != made_by.seq)
    target = expected[line][1]
    record = next(p for p in kernel.passes if p.seq == target)
    label = view.page.locator(f"table.blame tr[data-seq='{target}'] .blame-by").first
    label.click()
    assert view.active() == target
    assert view.page.locator("#detail h2").inner_text() == f"#{target} {record.name}"
    if record.status is PassStatus.CHANGED:
        assert view.page.locator("#detail .diff-box").count() == 1
    # The toggle stays on: the full IR of that pass opens blamed.
    view.page.locator("#detail .diff-box button", has_text="show full IR").click()
    after = view.page.locator(".ir-box").filter(has_text="IR after")
    assert after.locator(".blame-toggle").inner_text() == "blame: on"
    owners = after.locator("table.blame tr").evaluate_all("rows => rows.map((r) => r.dataset.seq)")
    assert owners == ["input" if by is None else str(by) for _, by in python_blame(real_trace, kernel, target)]
    assert str(target) in owners


def test_an_unchanged_pass_blames_the_ir_it_passed_on(gemm_page, real_trace):
    view, kernel = gemm_page
    record = next(p for p in kernel.passes if p.status is PassStatus.UNCHANGED and p.seq > 20)
    view.page.locator(f'#passes .step[data-seq="{record.seq}"]').click()
    view.page.locator(".ir-box .blame-toggle").click()
    owners = view.page.locator("table.blame tr").evaluate_all("rows => rows.map((r) => r.dataset.seq)")
    assert owners == ["input" if by is None else str(by) for _, by in python_blame(real_trace, kernel, record.seq)]
    # Off again: the plain IR is back.
    view.page.locator(".ir-box .blame-toggle").click()
    assert view.page.locator("table.blame").count() == 0
    assert view.page.locator("pre.ir").count() == 1


def test_the_page_and_python_run_the_same_diff(gemm_page):
    """LTDiff.myers and diff.myers keep the same pairs (ties broken alike), so both blame and align alike."""
    import random

    from lower_trace.analysis.text_diff import myers

    view, _ = gemm_page
    rng = random.Random(11)
    cases = [[[rng.choice("abcd") for _ in range(rng.randint(0, 30))] for _ in range(2)] for _ in range(300)]
    page = view.page.evaluate("cases => cases.map(([a, b]) => LTDiff.myers(a, b).filter((op) => op[0] === '=').map((op) => [op[1], op[2]]))", cases)
    assert page == [[list(pair) for pair in myers(a, b)] for a, b in cases]
