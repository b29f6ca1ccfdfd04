"""The report's side-by-side diff in Chromium at a common laptop width: a real GEMM pass's IR lines
keep one line each, the two sides stay level row for row, and each side scrolls sideways alone."""

import os

from report_fixtures import Page

# Each side's rows: its text, and where the row is drawn (top, height) and the line height of its code.
ROWS = """side => [...document.querySelectorAll(`#detail table.diff.${side} tr`)].map(tr => {
    const code = tr.querySelector('td.code'), box = tr.getBoundingClientRect();
    return {fold: tr.classList.contains('fold'), text: code ? code.textContent : null, top: box.top, height: box.height,
            codeHeight: code ? code.getBoundingClientRect().height : 0, line: code ? parseFloat(getComputedStyle(code).lineHeight) : 0};
})"""


def test_side_by_side_keeps_a_gemm_passs_lines_whole_at_1440_px(browser, real_trace):
    gemm = real_trace.kernel("gemm")
    tile_op = next(p for p in gemm.passes if p.name == "tl.LowerTileOp")
    before, after = real_trace.snapshot(tile_op.before).splitlines(), real_trace.snapshot(tile_op.after).splitlines()
    view = Page(browser, os.path.join(real_trace.path, "report.html"), f"#{gemm.kernel_id}/{tile_op.seq}", width=1440)
    view.settle()
    page = view.page
    cells = page.eval_on_selector_all(
        "#detail table.diff td.code",
        "tds => tds.filter(td => td.textContent).map(td => [td.textContent, td.getBoundingClientRect().height, parseFloat(getComputedStyle(td).lineHeight)])",
    )
    assert len(cells) > 50 and all(text in before or text in after for text, _, _ in cells)  # the pass's own lines
    # Half of a 1440 px window's pane holds ~50 characters; most of this pass's lines are longer.
    assert sum(len(text) > 50 for text, _, _ in cells) > len(cells) / 3
    one_line = [text for text, height, line in cells if height < 1.5 * line]
    assert len(one_line) >= 0.9 * len(cells), f"{len(cells) - len(one_line)} of {len(cells)} lines wrap"
    old, new = page.evaluate(f"() => [({ROWS})('old'), ({ROWS})('new')]")
    assert [row["text"] for row in old if row["text"]] + [row["text"] for row in new if row["text"]] == [text for text, _, _ in cells]
    # Row i of one side is level with row i of the other: the same pair of lines, side by side.
    assert len(old) == len(new)
    assert [(round(a["top"], 1), round(a["height"], 1), a["fold"]) for a in old] == [(round(b["top"], 1), round(b["height"], 1), b["fold"]) for b in new]
    # Each side scrolls sideways on its own; the diff stays inside the pane.
    sides = "[...document.querySelectorAll('#detail .diff-side')]"
    widths = page.evaluate(f"() => {sides}.map(s => [s.scrollWidth, s.clientWidth])")
    assert len(widths) == 2 and all(scroll > client for scroll, client in widths)  # long lines are there, to scroll to
    page.evaluate(f"() => {{ {sides}[0].scrollLeft = 200; }}")
    assert page.evaluate(f"() => {sides}.map(s => s.scrollLeft)") == [200, 0]
    right = page.evaluate("() => document.querySelector('#detail .diff-split').getBoundingClientRect().right")
    assert right <= page.evaluate("() => document.getElementById('detail').getBoundingClientRect().right")
    # Opening folded lines opens them on both sides, still level.
    page.click("#detail table.diff.new tr.fold >> nth=0")
    old, new = page.evaluate(f"() => [({ROWS})('old'), ({ROWS})('new')]")
    assert len(old) == len(new) and [round(a["top"], 1) for a in old] == [round(b["top"], 1) for b in new]
    assert view.errors() == []
    view.close()
