"""Where compile time goes, in the report's two charts in Chromium, checked against the trace's
own records and analysis/timing.py (the same numbers in `show --timing`: integration/test_timing.py)."""

import dataclasses
import os

from lower_trace.analysis.timing import kernel_timing, line_count, run_timing
from lower_trace.model import CodegenRecord
from lower_trace.render.timing_view import ms_text
from report_fixtures import Page, recorded_times, sweep_report, wait_until


def _chart_rows(page):
    return page.eval_on_selector_all(
        "#detail svg.timing-chart .bar-row",
        """rows => rows.map(g => ({
            seq: g.dataset.seq, kernel: g.dataset.kernel || null,
            texts: [...g.querySelectorAll('text')].map(t => t.textContent),
            incl: (b => b && [Number(b.getAttribute('x')), Number(b.getAttribute('width'))])(g.querySelector('rect.incl')),
        }))""",
    )


def _ms(value):
    return ms_text(value)  # the page prints what show --timing prints


def _fits(page):
    """The chart is no wider than the detail pane: nothing is cut off at the right."""
    script = "() => document.querySelector('#detail svg.timing-chart').getBoundingClientRect().right"
    return page.evaluate(script) <= page.evaluate("() => document.getElementById('detail').getBoundingClientRect().right")


def test_the_kernel_chart_draws_the_traces_numbers_and_opens_a_pass(browser, real_trace):
    gemm = real_trace.kernel("gemm")
    view = Page(browser, os.path.join(real_trace.path, "report.html"), f"#{gemm.kernel_id}/timing", width=1600)
    page = view.page
    view.settle()
    assert _fits(page)
    times = kernel_timing(gemm)
    rows = _chart_rows(page)
    assert [int(r["seq"]) for r in rows] == [t.seq for t in times]
    by_seq = {t.seq: t for t in times}
    for row in rows:
        t = by_seq[int(row["seq"])]
        digest = t.step.source if isinstance(t.step, CodegenRecord) else t.step.after
        seq, name, *numbers = row["texts"]
        assert (seq, name) == (str(t.seq), t.name)
        assert numbers == [_ms(t.ms), _ms(t.self_ms), str(line_count(real_trace.snapshot(digest)))]
    # A nested pass's bar lies inside its parent's.
    bars = {int(r["seq"]): r["incl"] for r in rows}
    nested = [t for t in times if getattr(t.step, "parent", None) is not None]
    assert nested
    for t in nested:
        (x, w), (px, pw) = bars[t.seq], bars[t.step.parent]
        assert px - 0.5 <= x and x + w <= px + pw + 1.5
    # "slowest first" sorts by self time; a click opens that pass.
    page.click(".timing-toggle button[data-value='self']")
    rows = _chart_rows(page)
    assert [int(r["seq"]) for r in rows] == [t.seq for t in sorted(times, key=lambda t: (-t.self_ms, t.seq))]
    slowest = rows[0]["seq"]
    page.click(f"#detail .bar-row[data-seq='{slowest}']")
    view.settle()
    assert view.active() == int(slowest) and page.evaluate("location.hash") == f"#{gemm.kernel_id}/{slowest}"
    # Back returns to the chart, still slowest first; t opens it too, and Back from there returns to the pass.
    page.go_back()
    wait_until(page, "() => document.querySelector('#detail svg.timing-chart') !== null")
    assert page.evaluate("location.hash") == f"#{gemm.kernel_id}/timing"
    assert _chart_rows(page)[0]["seq"] == slowest
    page.click(f"#passes .step[data-seq='{slowest}']")
    view.press("t")
    assert page.evaluate("location.hash") == f"#{gemm.kernel_id}/timing"
    page.go_back()
    wait_until(page, f"() => location.hash === '#{gemm.kernel_id}/{slowest}'")
    view.settle()
    assert view.active() == int(slowest)
    page.click("#timing-kernel")
    assert page.evaluate("location.hash") == f"#{gemm.kernel_id}/timing"
    other = real_trace.kernels[-1]
    page.locator(f"#kernels .kernel-row[data-kernel='{other.kernel_id}']").click()
    view.settle()
    assert page.evaluate("location.hash") == f"#{other.kernel_id}/timing"
    assert len(_chart_rows(page)) == len(other.steps)
    assert view.errors() == []
    view.close()
    # On a smaller screen it still fits the pane: long names end in "…" (whole in the tooltip).
    narrow = Page(browser, os.path.join(real_trace.path, "report.html"), f"#{gemm.kernel_id}/timing", width=1280)
    narrow.settle()
    assert _fits(narrow.page)
    for row in _chart_rows(narrow.page):
        t = by_seq[int(row["seq"])]
        assert row["texts"][1] == t.name or (row["texts"][1].endswith("…") and t.name.startswith(row["texts"][1][:-1]))
    narrow.close()


def test_the_run_chart_ranks_step_names_over_a_sweep_and_opens_the_slowest(browser, real_trace, tmp_path):
    from lower_trace import load_trace

    path = str(tmp_path / "sweep.html")
    sweep_report(real_trace, path, 60)
    view = Page(browser, path, "#timing", width=1280)
    page = view.page
    view.settle()
    assert _fits(page)
    # What the page drew from the summaries, against run_timing over the same 60 kernels, built here.
    bases = real_trace.kernels
    kernels = [dataclasses.replace(bases[(i - 1) % len(bases)], kernel_id=f"k{i}") for i in range(1, 61)]
    truth = run_timing(kernels)
    rows = _chart_rows(page)
    names = [r["texts"][0] for r in rows]
    assert len(rows) == 40 and all(n == t.name or (n.endswith("…") and t.name.startswith(n[:-1])) for n, t in zip(names, truth, strict=False))
    assert [r["kernel"] + "/" + r["seq"] for r in rows] == [f"{t.max_kernel}/{t.max_seq}" for t in truth[:40]]
    first = truth[0]
    compile_ms = sum(max(k.ms, sum(t.self_ms for t in kernel_timing(k))) for k in kernels)
    share = f"{100 * first.self_ms / compile_ms:.1f}%"  # of the compile, as show --timing says
    assert rows[0]["texts"][1:6] == [_ms(first.self_ms), share, str(first.calls), str(first.kernels), _ms(first.max_self_ms)]
    page.click("#detail .timing-more")
    assert len(_chart_rows(page)) == len(truth)
    page.click("#detail .bar-row >> nth=0")
    view.settle()
    wait_until(page, "() => location.hash !== '#timing'")
    assert page.evaluate("location.hash") == f"#{first.max_kernel}/{first.max_seq}"
    assert view.active() == first.max_seq
    assert view.errors() == []
    view.close()
    assert load_trace(real_trace.path)  # the trace itself is untouched by the page


def test_the_run_chart_of_one_kernel_says_one_kernel_and_shares_of_its_compile(browser, real_trace, tmp_path):
    path = str(tmp_path / "one.html")
    sweep_report(real_trace, path, 1)  # k1: the gemm, its records as traced
    gemm = real_trace.kernels[0]
    compile_ms, steps_ms = recorded_times(real_trace.path)[gemm.kernel_id]
    view = Page(browser, path, "#timing", width=1280)
    view.settle()
    facts = view.page.locator("#detail .timing-facts").inner_text()
    share = f"{100 * steps_ms / compile_ms:.1f}%"
    assert facts.startswith(f"1 kernel · compile {compile_ms:.1f} ms in all: ") and f"({share}) in passes and codegen" in facts, facts
    assert "1 kernels" not in facts and "(100%)" not in facts
    rows = view.page.eval_on_selector_all(
        "#detail svg.timing-chart .bar-row",
        "rows => rows.map(g => [...g.querySelectorAll('text')].map(t => t.textContent).concat(g.querySelector('title').textContent))",
    )
    truth = {t.name: t for t in run_timing([gemm])}
    for name, _self_ms, pct, _calls, *_, tip in rows:
        t = truth[name] if name in truth else next(t for n, t in truth.items() if n.startswith(name[:-1]))
        assert pct == f"{100 * t.self_ms / compile_ms:.1f}%"
        assert f" over {t.calls} call{'' if t.calls == 1 else 's'} in 1 kernel;" in tip, tip
    assert any(int(row[3]) == 1 for row in rows) and any(int(row[3]) > 1 for row in rows)  # both nouns seen
    assert view.errors() == []
    view.close()
