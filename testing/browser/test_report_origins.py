"""The report's source map in Chromium: every generated line carries the place Python's origins
give it (analysis/origins.py, itself checked against marker comments in test_origins.py);
pointing at a tma_load line lights its T.copy line in the source pane and every line from it;
clicking that source line lists what each pass did to its lines."""

import os

import pytest

tilelang = pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")

import lower_trace  # noqa: E402
import marked_kernels  # noqa: E402
from lower_trace.analysis.origins import trace_origins  # noqa: E402
from report_fixtures import Page  # noqa: E402

MARKS = marked_kernels.markers()


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    from tvm.target import Target

    with lower_trace.trace(mode="html", trace_dir=str(tmp_path_factory.mktemp("origins-page"))) as run, Target({"kind": "cuda", "arch": "sm_90a"}) as target:
        tilelang.lower(marked_kernels.gemm_ws(), target=target)
        with pytest.raises(Exception, match="frag"):
            tilelang.lower(marked_kernels.transposed_fragment_marked(), target=target)
    return lower_trace.load_trace(run.run_dir)


def test_generated_lines_link_to_the_users_lines(browser, traced):
    kernel = traced.kernel("gemm_ws")
    device = next(c for c in kernel.codegen if c.role == "device")
    view = Page(browser, os.path.join(traced.path, "report.html"), f"#{kernel.kernel_id}")
    view.settle()
    view.page.locator(f'#passes .step[data-seq="{device.seq}"]').click()
    source_box = view.page.locator(".ir-box").filter(has_text="generated cuda source")
    lines = source_box.locator("pre.lined > span.ln")
    shown = lines.evaluate_all("spans => spans.map((s) => [s.textContent, s.dataset.o === undefined ? null : s.title])")
    # Line for line, the place Python gives each line.
    expected = trace_origins(traced, kernel).sources[device.seq].origins
    assert len(shown) == len(expected)
    for (text, title), origin in zip(shown, expected, strict=True):
        if origin is None:
            assert title is None, text
        else:
            assert title.startswith(f"from {os.path.basename(origin.file)}:{origin.line}"), (text, title)
    # Point at the A tile's tma_load: its T.copy line in the source pane lights, and so does every shown line from it.
    tma = lines.filter(has_text="tl::tma_load(A_desc").first
    tma.hover()
    lit = view.page.locator(".source-pane .ln.o-hl")
    assert lit.count() == 1 and lit.inner_text().strip().startswith(f"{MARKS['copy_a']}  ")
    same = [i for i, origin in enumerate(expected) if origin is not None and origin.line == MARKS["copy_a"]]
    assert source_box.locator("span.ln.o-hl").count() == len(same)
    # Click the user's line: its lines stay lit, and what each pass did to them is listed, a click from the pass.
    view.page.locator(".source-pane .ln", has_text="T.copy(A[by * block_M").click()
    events = view.page.locator(".line-events li")
    assert events.count() >= 3
    assert view.page.locator(".line-events", has_text="tl.LowerTileOp").count() == 0  # seqs, not names: a link each
    first = events.first.locator("button")
    seq = int(first.inner_text().lstrip("#"))
    first.click()
    assert view.active() == seq
    assert not view.errors(), view.messages
    assert all(url.startswith(("file:", "data:", "blob:")) for url in view.requests), view.requests
    view.close()


def test_a_failed_pass_underlines_the_users_lines_its_error_points_at(browser, traced):
    """TVM's error names the fragment's allocation (its span): that line of the source pane is
    marked failing, and no other is (the failing IR's lines the message does not quote)."""
    kernel = traced.kernel("transposed_fragment")
    failed = next(p for p in kernel.passes if p.error is not None)
    assert f"marked_kernels.py:{MARKS['tf_alloc']}" in failed.error.message  # the ground truth: TVM's own location
    view = Page(browser, os.path.join(traced.path, "report.html"), f"#{kernel.kernel_id}")
    view.settle()
    assert view.active() == failed.seq  # the report opens on the failure
    failing = view.page.locator(".source-pane .ln.o-failing")
    assert failing.count() == 1
    assert failing.inner_text().strip().startswith(f"{MARKS['tf_alloc']}  ")
    assert "T.alloc_fragment" in failing.inner_text()
    # The failing IR beside it carries the user's lines too: the read loop's body names its line.
    body = view.page.locator("#detail pre.ir.lined span.ln", has_text="B[i, j] = frag[i, j] + frag[j, i]")
    assert body.count() == 1 and body.get_attribute("title").startswith(f"from marked_kernels.py:{MARKS['tf_read']}")
    assert not view.errors(), view.messages
    view.close()
