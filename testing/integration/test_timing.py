"""Where compile time goes: analysis/timing.py on real TileLang compiles, `show --timing`, and the
report's two charts in Chromium, checked against the trace's own records. (Ground truth made on
purpose, nested passes that sleep a known time, is in test_plain_tvm.py.)"""

import dataclasses
import io
import json
import os
import re

import pytest

from lower_trace.analysis.timing import kernel_timing, line_count, run_timing
from lower_trace.cli.main import main
from lower_trace.model import CodegenRecord, PassStatus
from lower_trace.render.timing_view import ms_text, write_run_table
from report_fixtures import Page, sweep_report, wait_until


def test_time_is_conserved_and_nested_passes_lie_inside_their_parents(real_trace):
    for kernel in real_trace.kernels:
        times = kernel_timing(kernel)
        assert [t.seq for t in times] == [s.seq for s in kernel.steps]
        by_seq = {t.seq: t for t in times}
        top = [t for t in times if t.depth == 0]
        # Self times add up to the top-level steps' inclusive time: nothing counted twice.
        assert sum(t.self_ms for t in times) == pytest.approx(sum(t.ms for t in top), abs=0.002 * len(times))
        at = 0.0
        for t in top:  # one after another, in the order they ran
            assert t.at == pytest.approx(at, abs=0.002 * len(times))
            at += t.ms
        for t in times:
            parent = getattr(t.step, "parent", None)
            if parent is None:
                continue
            outer = by_seq[parent]
            children = [c for c in times if getattr(c.step, "parent", None) == parent]
            assert outer.self_ms == pytest.approx(max(0.0, outer.ms - sum(c.ms for c in children)), abs=0.002)
            assert outer.at - 0.002 <= t.at and t.at + t.ms <= outer.at + outer.ms + 0.002 * len(children) + 0.002
    gemm = real_trace.kernel("gemm")
    assert any(t.depth > 0 for t in kernel_timing(gemm))  # tl.LowerTileOp runs passes inside itself


def test_show_timing_prints_a_kernel_table_and_the_runs_slowest_steps(real_trace, capsys):
    gemm = real_trace.kernel("gemm")
    assert main(["show", "--timing", "-k", gemm.kernel_id, real_trace.path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{gemm.kernel_id} gemm: compile {gemm.ms:.1f} ms")
    rows = {int(line.split()[0]): line for line in lines[2:-1]}
    for t in kernel_timing(gemm):
        row = rows[t.seq]
        assert row.split()[1] == t.name.split()[0]
        digest = t.step.source if isinstance(t.step, CodegenRecord) else t.step.after
        assert row.split()[-1] == str(line_count(real_trace.snapshot(digest)))  # IR lines after it
        if getattr(t.step, "status", None) is not PassStatus.FAILED:
            assert ms_text(t.ms) in row and ms_text(t.self_ms) in row
        assert row.index(t.name) - row.index(str(t.seq)) - len(str(t.seq)) == 2 + 2 * t.depth  # nested: indented
    # Several kernels: the step names over all of them, slowest first, as --json says.
    assert main(["show", "--timing", real_trace.path]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith(f"{len(real_trace.kernels)} kernels")
    truth = run_timing(real_trace.kernels)
    assert [line.split()[0] for line in table[2 : 2 + 10]] == [t.name.split()[0] for t in truth[:10]]
    assert main(["show", "--timing", "--json", real_trace.path]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in data["totals"]] == [t.name for t in truth]
    assert [k["id"] for k in data["kernels"]] == [k.kernel_id for k in real_trace.kernels]
    assert sum(t["calls"] for t in data["totals"]) == sum(len(k.steps) for k in real_trace.kernels)


def recorded_times(path):
    """{kernel: (compile ms, ms in its top-level passes and codegen)}, read off trace.jsonl itself."""
    compile_ms, steps_ms = {}, {}
    with open(os.path.join(path, "trace.jsonl")) as records:
        for line in records:
            record = json.loads(line)
            if record["type"] == "kernel_end":
                compile_ms[record["kernel_id"]] = record["ms"]
            elif record["type"] == "codegen" or (record["type"] == "pass" and "parent" not in record):
                steps_ms[record["kernel"]] = steps_ms.get(record["kernel"], 0.0) + record.get("ms", 0.0)
    return {kernel: (compile_ms[kernel], steps_ms.get(kernel, 0.0)) for kernel in compile_ms}


def test_the_run_tables_shares_are_of_the_compile_and_it_says_what_the_rest_is(real_trace):
    times = recorded_times(real_trace.path)
    assert sorted(times) == sorted(k.kernel_id for k in real_trace.kernels)
    compile_ms = sum(c for c, _ in times.values())
    steps_ms = sum(s for _, s in times.values())
    assert 0 < steps_ms < 0.99 * compile_ms  # the compile is more than its steps: 100% would be wrong
    out = io.StringIO()
    write_run_table(out, real_trace.kernels)
    lines = out.getvalue().splitlines()
    number = r"([\d.]+)"
    head = re.match(
        rf"4 kernels: compile {number} ms in all: {number} ms \({number}%\) in passes and codegen, {number} ms \({number}%\) between steps \(",
        lines[0],
    )
    assert head, lines[0]
    shown_compile, shown_steps, steps_share, shown_between, between_share = map(float, head.groups())
    assert shown_compile == pytest.approx(compile_ms, abs=0.051)
    assert shown_steps == pytest.approx(steps_ms, abs=0.051 + 0.002 * sum(len(k.steps) for k in real_trace.kernels))
    assert steps_share == pytest.approx(100 * steps_ms / compile_ms, abs=0.051)
    assert shown_between == pytest.approx(compile_ms - steps_ms, abs=0.1) and steps_share + between_share == pytest.approx(100, abs=0.11)
    rows = [line.split() for line in lines[2:] if not line.startswith("...")]
    assert len(rows) == min(40, len(run_timing(real_trace.kernels)))
    for row in rows:  # each step name's share, of the compile too
        self_ms, share = row[-6:-4]  # names may hold spaces ("device codegen"): from the right
        # The share is rounded to 0.1 and the ms it is checked against to 0.01: both roundings are allowed for.
        assert float(share.rstrip("%")) == pytest.approx(100 * float(self_ms) / compile_ms, abs=0.05 + 100 * 0.005 / compile_ms + 1e-9), row
    # Counts agree with their nouns.
    out = io.StringIO()
    names = len(run_timing(real_trace.kernels))
    write_run_table(out, real_trace.kernels, limit=names - 1)
    assert out.getvalue().splitlines()[-1] == "... and 1 more step name (--json lists them all)"
    out = io.StringIO()
    write_run_table(out, real_trace.kernels[:1])
    assert out.getvalue().startswith("1 kernel: compile ")


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
    assert len(rows) == 40 and all(n == t.name or (n.endswith("…") and t.name.startswith(n[:-1])) for n, t in zip(names, truth))
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
    for name, self_ms, pct, calls, *_, tip in rows:
        t = truth[name] if name in truth else next(t for n, t in truth.items() if n.startswith(name[:-1]))
        assert pct == f"{100 * t.self_ms / compile_ms:.1f}%"
        assert f" over {t.calls} call{'' if t.calls == 1 else 's'} in 1 kernel;" in tip, tip
    assert any(int(row[3]) == 1 for row in rows) and any(int(row[3]) > 1 for row in rows)  # both nouns seen
    assert view.errors() == []
    view.close()
