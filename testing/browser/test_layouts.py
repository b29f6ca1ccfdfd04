"""Fragment layout pictures: the grid the report draws in Chromium, checked against TileLang's own
Fragment API element by element (map_forward_thread / map_forward_index on the module
tl.LayoutInference returned, captured through TileLang's instrumentation, not through
lower-trace: testing/shared_runs.py). What the tracer reads off the layout objects:
integration/test_layouts_read.py."""

import os

import pytest

from report_fixtures import Page, wait_until

pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")  # 0.1.15: the modules after each pass, for the ground truth


def _grid(page):
    return page.eval_on_selector_all("#layouts rect[data-e]", "rs => rs.map(r => [r.dataset.t, r.dataset.l])")


def test_the_report_draws_each_fragment_as_tilelang_maps_it(browser, layouts_traced):
    trace, truth = layouts_traced
    for kernel in trace.kernels:
        (inference,) = [p for p in kernel.passes if p.layouts]
        view = Page(browser, os.path.join(trace.path, "report.html"), f"#{kernel.kernel_id}/{inference.seq}")
        view.settle()
        page = view.page
        assert page.locator(f'#passes .step[data-seq="{inference.seq}"] .layout-badge').count() == 1
        for layout in inference.layouts:
            page.click(f"#layouts .layout-buffers button[data-buffer='{layout.buffer}']")
            wait_until(page, f"() => document.querySelector('#layouts .layout-buffers button.on').dataset.buffer === '{layout.buffer}'")
            _, threads, local = truth[kernel.name][layout.buffer]
            drawn = _grid(page)
            assert len(drawn) == len(threads)
            assert [sorted(int(t) for t in cell[0].split(",")) for cell in drawn] == threads, layout.buffer
            assert [cell[1] for cell in drawn] == local, layout.buffer
        # Highlight one thread: exactly the elements TileLang gives it stay lit.
        first = inference.layouts[0]
        _, threads, _ = truth[kernel.name][first.buffer]
        page.click(f"#layouts .layout-buffers button[data-buffer='{first.buffer}']")
        pick = first.thread_min + 5
        page.fill("#layouts .layout-thread", str(pick))
        held = sum(1 for ts in threads if pick in ts)
        assert held and page.locator("#layouts rect.mine").count() == held
        assert page.locator("#layouts .layout-status").inner_text().startswith(f"thread {pick} (warp {pick // 32}, lane {pick % 32}) holds {held} element")
        # Clicking an element highlights the thread that holds it.
        page.click("#layouts rect[data-e='0']")
        assert page.locator("#layouts .layout-thread").input_value() == str(threads[0][0])
        # Zoomed in, every cell carries its thread and local index; the highlight stays.
        page.click("#layouts .layout-zoom")
        labels = page.eval_on_selector_all("#layouts .cell-t", "ts => ts.map(t => t.textContent)")
        plus = "+" if first.replicate > 1 else ""
        assert labels == [f"T{ts[0]}{plus}" for ts in threads]
        assert page.locator("#layouts rect.mine").count() == sum(1 for ts in threads if threads[0][0] in ts)
        # Another buffer keeps the thread lit; a thread outside the layout's range says so; clearing resets.
        if len(inference.layouts) > 1:
            other = inference.layouts[1]
            page.click(f"#layouts .layout-buffers button[data-buffer='{other.buffer}']")
            assert page.locator("#layouts .layout-thread").input_value() == str(threads[0][0])
            lit = sum(1 for ts in truth[kernel.name][other.buffer][1] if threads[0][0] in ts)
            assert page.locator("#layouts rect.mine").count() == lit
        outside = first.thread_min + first.threads + 7
        page.fill("#layouts .layout-thread", str(outside))
        assert f"holds 0 elements (not one of this layout's threads {first.thread_min}–" in page.locator("#layouts .layout-status").inner_text()
        page.fill("#layouts .layout-thread", "")
        assert page.locator("#layouts rect.mine").count() == 0 and "point at an element" in page.locator("#layouts .layout-status").inner_text()
        assert view.errors() == []
        view.close()


def test_see_the_picture_below_brings_the_buffer_buttons_into_view_uncovered(browser, layouts_traced):
    trace, _ = layouts_traced
    for kernel in trace.kernels:
        (inference,) = [p for p in kernel.passes if p.layouts]
        for width, height in ((1440, 900), (1280, 720)):
            view = Page(browser, os.path.join(trace.path, "report.html"), f"#{kernel.kernel_id}/{inference.seq}", width=width)
            view.page.set_viewport_size({"width": width, "height": height})
            view.settle()
            page = view.page
            page.click("#detail .layout-jump")
            # Every buffer button lies below the page's header, inside the pane, and is what a click there hits.
            seen = page.eval_on_selector_all(
                "#layouts .layout-buffers button",
                """buttons => buttons.map(b => {
                    const box = b.getBoundingClientRect(), pane = document.getElementById('detail').getBoundingClientRect();
                    const top = document.querySelector('header').getBoundingClientRect().bottom;
                    const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
                    return [b.dataset.buffer, box.top >= top && box.top >= pane.top && box.bottom <= pane.bottom, hit === b || b.contains(hit)];
                })""",
            )
            assert [buffer for buffer, _, _ in seen] == [layout.buffer for layout in inference.layouts]
            assert all(inside and hit for _, inside, hit in seen), (kernel.name, width, seen)
            assert view.errors() == []
            view.close()


def test_the_page_evaluates_tvm_expressions_as_tvm_does(browser, layouts_traced, tmp_path):
    """Each operator TVM may print in an index expression, on negative values too, against
    TVM's own constant folding of the same expression."""
    from tvm import tirx
    from tvm.arith import Analyzer

    trace, _ = layouts_traced
    i, j = tirx.Var("_i", "int32"), tirx.Var("_j", "int32")
    exprs = [
        tirx.floordiv(i * 7 - j, 4) + tirx.floormod(i - j * 3, 5),
        tirx.truncdiv(i - 9, 4) * 3 + tirx.truncmod(j - 7, 3),
        tirx.Min(i, j) * 2 - tirx.Max(i - 3, j),
        tirx.Select(i < j, i * 2, j + 1) + tirx.if_then_else(i >= 2, 1, 0),
        tirx.Cast("int64", i) * tirx.IntImm("int64", 3) + tirx.Cast("int64", j),
        (i + j) % 2 * 16 - i // 3,
    ]
    view = Page(browser, os.path.join(trace.path, "report.html"))
    analyzer = Analyzer()
    for expr in exprs:
        text = str(expr)
        for a, b in [(0, 0), (3, 5), (-4, 7), (9, -2), (-5, -6)]:
            expected = int(analyzer.simplify(tirx.stmt_functor.substitute(expr, {i: tirx.IntImm("int32", a), j: tirx.IntImm("int32", b)})))
            got = view.page.evaluate("([t, a, b]) => LTLayout.compile(t)({_i: a, _j: b})", [text, a, b])
            assert got == expected, (text, a, b)
    # TVM's simplifier does not fold bitwise calls: those against C's (Python's) operators on int32.
    bitwise = tirx.shift_right(i * 8 + j, 2) + tirx.bitwise_xor(i, j) + tirx.bitwise_and(i, 6) + tirx.bitwise_or(j, 1)
    for a, b in [(0, 0), (3, 5), (-4, 7), (9, -2), (-5, -6)]:
        got = view.page.evaluate("([t, a, b]) => LTLayout.compile(t)({_i: a, _j: b})", [str(bitwise), a, b])
        assert got == ((a * 8 + b) >> 2) + (a ^ b) + (a & 6) + (b | 1), (str(bitwise), a, b)
    with pytest.raises(Exception, match="cannot evaluate"):
        view.page.evaluate("() => LTLayout.compile('T.weird_op(_i)')({_i: 1})")
    view.close()
