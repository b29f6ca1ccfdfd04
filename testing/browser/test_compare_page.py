"""Comparisons in Chromium: the page `lower-trace diff --html` writes, and the run report's
"compare with…". Answers are checked against lower_trace.analysis.compare (itself checked
against ground truth in test_compare.py) and against diffs computed here."""

import os
import subprocess

import pytest

from lower_trace import load_trace
from lower_trace.analysis import text_diff as diff
from lower_trace.analysis.compare import Side, compare
from report_fixtures import EVIL_IR, EVIL_NAME, Page, hostile_run

pytest.importorskip("tilelang")

import kernels
from support import lower_trace_cli

# k1 gemm, k2 gemm without shuffle-elect (same passes, one behaves differently), k3 gemm without
# warp specialization (fewer passes), k4 / k5 two variants of one kernel, k6 = k1 again.
PAIRS = [("k1", "k2"), ("k1", "k3"), ("k4", "k5"), ("k1", "k6"), ("k3", "k1"), ("k4", "k1")]


@pytest.fixture(scope="module")
def sweep_trace(tmp_path_factory):
    import tilelang
    from tilelang import tvm

    import lower_trace

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    configs = [{}, {"tl.disable_shuffle_elect": True}, {"tl.disable_warp_specialized": True}]
    with lower_trace.trace(mode="html", trace_dir=str(tmp_path_factory.mktemp("cmp"))) as run, target:
        for config in configs:
            with tvm.transform.PassContext(config=config):
                tilelang.lower(kernels.gemm(), target=target)
        tilelang.lower(kernels.scaled_add(factor=3.0), target=target)
        tilelang.lower(kernels.scaled_add(factor=5.0), target=target)
        tilelang.lower(kernels.gemm(), target=target)
    return load_trace(run.run_dir)


def python_compare(trace, a, b):
    return compare(Side(trace.kernel(a), trace.snapshot), Side(trace.kernel(b), trace.snapshot))


def row_key(row):
    return [row.a.seq if row.a else None, row.b.seq if row.b else None, row.same_input, row.same_output]


@pytest.fixture
def opened(browser):
    pages = []

    def open_(path, hash_=""):
        page = Page(browser, path, hash_)
        pages.append(page)
        return page

    yield open_
    for page in pages:
        assert not page.errors(), page.messages
        assert all(url.startswith(("file:", "data:", "blob:")) for url in page.requests), page.requests
        page.close()


def test_the_page_compares_as_python_does(opened, sweep_trace):
    view = opened(os.path.join(sweep_trace.path, "report.html"))
    got = view.page.evaluate(
        """async (pairs) => {
          const kernels = new Map(LTBlocks.gather().kernels.map((k) => [k.id, k]));
          const out = [];
          for (const [a, b] of pairs) {
            const cmp = LTCompare.compare(await LTBlocks.open(kernels.get(a)), await LTBlocks.open(kernels.get(b)));
            out.push({
              rows: cmp.rows.map((r) => [r.a ? r.a.seq : null, r.b ? r.b.seq : null, r.sameInput, r.sameOutput]),
              divergence: cmp.divergence && [cmp.divergence.kind, cmp.divergence.row],
              sameSource: cmp.sameSource, identical: cmp.identical,
            });
          }
          return out;
        }""",
        PAIRS,
    )
    kinds = set()
    for (a, b), page in zip(PAIRS, got, strict=False):
        result = python_compare(sweep_trace, a, b)
        assert page["rows"] == [row_key(row) for row in result.rows], (a, b)
        divergence = result.divergence and [result.divergence.kind, result.divergence.row]
        assert page["divergence"] == divergence, (a, b)
        assert (page["sameSource"], page["identical"]) == (result.same_source, result.identical)
        kinds.add(divergence[0] if divergence else "identical")
    assert kinds == {"behaves differently", "one-sided", "input", "identical"}  # every answer is exercised


def test_diff_html_page_opens_on_the_first_divergence(opened, sweep_trace, tmp_path):
    page_path = str(tmp_path / "gemm-ws.html")
    done = subprocess.run(
        [lower_trace_cli(), "diff", f"{sweep_trace.path}:k1", f"{sweep_trace.path}:k3", "--html", page_path, "--color", "never"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert f"comparison page: file://{page_path}" in done.stderr
    result = python_compare(sweep_trace, "k1", "k3")
    divergence = result.divergence
    assert divergence is not None and divergence.row >= 0
    view = opened(page_path)
    page = view.page
    # Opens on the first divergence, with the pass's name and the deep link.
    active = page.locator(".cmp-row.active")
    assert active.get_attribute("data-row") == str(divergence.row)
    assert page.evaluate("location.hash") == f"#{divergence.row}"
    record = divergence.a or divergence.b
    assert f"#{record.seq} {record.name}" in page.locator(".cmp-detail h2").inner_text()
    assert page.locator(".cmp-verdict").inner_text().startswith("first divergence:")
    # The diff it shows has the counts of the pass's own diff (one-sided) computed here.
    side = 0 if divergence.a else 1
    before, after = result.text(side, record.before), result.text(side, record.after)
    stats = diff.stats(before, after)
    assert page.locator(".cmp-detail .diff-box .label").first.inner_text() == f"+{stats.added} −{stats.removed} lines"
    # Both pass lists: every pass of each side is in its column, in order.
    columns = page.locator(".cmp-rows .cmp-row:not(.source)").evaluate_all(
        "rows => rows.map((r) => [r.querySelector('.cmp-a').textContent, r.querySelector('.cmp-b').textContent])"
    )
    assert [a for a, _ in columns if a] == [f"{p.seq} {p.name}" for p in sweep_trace.kernel("k1").passes]
    assert [b for _, b in columns if b] == [f"{p.seq} {p.name}" for p in sweep_trace.kernel("k3").passes]
    # n: the next row where a pass behaves differently or runs on one side; j / k: next and previous row.
    differing = [i for i, row in enumerate(result.rows) if not (row.a and row.b and row.same_input and row.same_output)]
    telling = [i for i, row in enumerate(result.rows) if row.one_sided or (row.same_input and not row.same_output)]
    view.press("n")
    assert active.get_attribute("data-row") == str(next(i for i in telling if i > divergence.row))
    view.press("k")
    view.press("k")
    assert active.get_attribute("data-row") == str(next(i for i in telling if i > divergence.row) - 2)
    # A row that behaves the same shows one IR; a pair whose outputs differ shows A against B.
    same = next(i for i, row in enumerate(result.rows) if row.a and row.b and row.same_output)
    page.locator(f'.cmp-row[data-row="{same}"]').click()
    assert page.locator(".cmp-detail").inner_text().count("Both sides made the same IR") == 1
    both = next(i for i, row in enumerate(result.rows) if row.a and row.b and row.same_output is False)
    page.locator(f'.cmp-row[data-row="{both}"]').click()
    row = result.rows[both]
    stats = diff.stats(result.text(0, row.a.after), result.text(1, row.b.after))
    assert page.locator(".cmp-detail .diff-box .label").first.inner_text() == f"+{stats.added} −{stats.removed} lines"
    # Hide same: what is left is every row that differs (the count computed here).
    page.locator(".cmp-hide-same").check()
    shown = len(differing) + 1  # and the generated-source row
    assert page.locator(".cmp-count").inner_text() == f"{len(differing)} of {len(result.rows)} rows shown"
    assert page.locator(".cmp-rows .cmp-row").count() == shown
    # The generated sources side by side, as compared.
    page.locator('.cmp-row[data-row="source"]').click()
    assert page.evaluate("location.hash") == "#source"
    panes = page.locator(".cmp-detail .panes").first.locator("pre.ir").all_inner_texts()
    assert [text.rstrip("\n") for text in panes] == [text.rstrip("\n") for text in result.sources]
    # The deep link survives a reload.
    view.goto("#source")
    assert page.locator(".cmp-row.active").get_attribute("data-row") == "source"
    # And so does "hide same" (the page's saved state), at once, before another row is picked.
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert page.locator(".cmp-row.active").get_attribute("data-row") == "source"
    assert page.locator(".cmp-hide-same").is_checked() and page.locator(".cmp-rows .cmp-row").count() == shown
    page.locator(".cmp-hide-same").uncheck()
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert not page.locator(".cmp-hide-same").is_checked() and page.locator(".cmp-rows .cmp-row").count() == len(result.rows) + 1


def test_identical_compiles_and_the_terminal_summary(opened, sweep_trace, tmp_path):
    page_path = str(tmp_path / "same.html")
    done = subprocess.run(
        [lower_trace_cli(), "diff", f"{sweep_trace.path}:k1", f"{sweep_trace.path}:k6", "--html", page_path],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0 and done.stdout.splitlines()[2].startswith("identical"), done.stdout
    view = opened(page_path)
    assert view.page.locator(".cmp-verdict").inner_text().startswith("identical")
    assert view.page.locator(".cmp-row.differs, .cmp-row.input-differs, .cmp-row.only-a, .cmp-row.only-b").count() == 0


def test_hostile_kernels_compare_as_inert_text(opened, tmp_path):
    first, second = hostile_run(str(tmp_path / "run-a")), hostile_run(str(tmp_path / "run-b"))
    page_path = str(tmp_path / "evil.html")
    done = subprocess.run(
        [lower_trace_cli(), "diff", os.path.dirname(first) + ":k1", os.path.dirname(second) + ":k1", "--html", page_path],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    view = opened(page_path)
    page = view.page
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img").count() == 0 and page.locator("b").count() == 0
    text = page.locator("#compare").inner_text()
    assert "k</script><script>window.__pwned=1</script><!--" in text and "⟨U+202E⟩evil" in text and "\u202e" not in text
    assert EVIL_IR.splitlines()[0] in text
    assert EVIL_NAME[:10] in page.title()


def test_compare_with_in_the_run_report(opened, sweep_trace):
    view = opened(os.path.join(sweep_trace.path, "report.html"), "#k1")
    page = view.page
    view.settle()
    options = page.locator("#compare-with option").evaluate_all("os => os.map((o) => o.value)")
    assert options[0] == "" and set(options[1:]) == {"k2", "k3", "k4", "k5", "k6"}
    assert options[1:4] == ["k2", "k3", "k6"]  # the other gemm compiles first
    page.select_option("#compare-with", "k2")
    view.settle()
    result = python_compare(sweep_trace, "k1", "k2")
    assert result.divergence is not None and result.divergence.kind == "behaves differently"
    assert page.locator("#detail .cmp-row.active").get_attribute("data-row") == str(result.divergence.row)
    assert page.evaluate("location.hash") == f"#k1~k2/{result.divergence.row}"
    a = result.divergence.a
    stats = diff.stats(result.text(0, a.after), result.text(1, result.divergence.b.after))
    assert page.locator("#detail .cmp-detail .diff-box .label").first.inner_text() == f"+{stats.added} −{stats.removed} lines"
    assert page.locator("#detail .cmp-detail h2").inner_text() == f"A #{a.seq} {a.name} · B #{result.divergence.b.seq} {result.divergence.b.name}"
    # j moves through the comparison while it is shown.
    view.press("j")
    assert page.locator("#detail .cmp-row.active").get_attribute("data-row") == str(result.divergence.row + 1)
    # The deep link reopens the comparison; a click on a pass of the list goes back to that pass.
    view.goto(f"#k1~k2/{result.divergence.row}")
    view.settle()
    assert page.locator("#detail .cmp-row.active").get_attribute("data-row") == str(result.divergence.row)
    page.locator('#passes .step[data-seq="3"]').click()
    assert page.locator("#detail .cmp").count() == 0 and view.active() == 3
    assert page.locator("#compare-with").input_value() == ""


def test_a_failed_pass_shows_its_error_in_the_comparison(opened, real_trace, tmp_path):
    """The real run's failing kernel (a pass raises) against a kernel that compiles."""
    failing = next(k for k in real_trace.kernels if any(p.error for p in k.passes))
    fine = real_trace.kernel("elementwise_add")
    page_path = str(tmp_path / "failed.html")
    done = subprocess.run(
        [lower_trace_cli(), "diff", f"{real_trace.path}:{failing.kernel_id}", f"{real_trace.path}:{fine.kernel_id}", "--html", page_path],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1, done.stderr
    result = compare(Side(failing, real_trace.snapshot), Side(fine, real_trace.snapshot))
    row = next(i for i, r in enumerate(result.rows) if r.a is not None and r.a.error is not None)
    view = opened(page_path, f"#{row}")
    page = view.page
    assert page.locator(".cmp-row.active").get_attribute("data-row") == str(row)
    assert page.locator(".cmp-row.active .cmp-a.failed").count() == 1
    error = result.rows[row].a.error
    box = page.locator(".cmp-detail section.error")
    assert box.locator(".error-type").inner_text() == error.type
    assert error.message.splitlines()[0] in box.locator("pre.message").inner_text()


@pytest.fixture(scope="module")
def named_trace(tmp_path_factory):
    """k1 the GEMM compiled as `main`, k2 the same as `gemm` (TileLang's op's name); k3, k4 two
    variants of one kernel whose passes change the IR on one side only."""
    import tilelang
    from tilelang import tvm

    import lower_trace

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    with lower_trace.trace(mode="html", trace_dir=str(tmp_path_factory.mktemp("named"))) as run, target:
        for func in (kernels.gemm().with_attr("global_symbol", "main"), kernels.gemm(), kernels.elementwise_add(), kernels.elementwise_add(block_N=1)):
            tilelang.lower(func, target=target)
    return load_trace(run.run_dir)


def test_compare_with_renames_only_the_kernel_and_lists_one_sided_changes(opened, named_trace):
    """The report's "compare with...": main vs gemm is identical, as Python says, and the page's
    normalised text keeps T.gemm (it used to write T.main); variants list the passes that changed
    the IR on one side only, as Python's comparison does."""
    view = opened(os.path.join(named_trace.path, "report.html"))
    got = view.page.evaluate(
        """async () => {
          const kernels = new Map(LTBlocks.gather().kernels.map((k) => [k.id, k]));
          const a = await LTBlocks.open(kernels.get("k1")), b = await LTBlocks.open(kernels.get("k2"));
          const cmp = LTCompare.compare(a, b);
          const first = b.steps.find((s) => s.kind === "pass");
          return { identical: cmp.identical, divergence: cmp.divergence, text: cmp.text(1, first.before) };
        }"""
    )
    assert python_compare(named_trace, "k1", "k2").identical
    assert got["identical"] is True and got["divergence"] is None
    assert "T.gemm(" in got["text"] and "T.main(" not in got["text"] and "def main(" in got["text"]
    page = view.page
    view.goto("#k1")
    view.settle()
    page.select_option("#compare-with", "k2")
    view.settle()
    assert page.locator("#detail .cmp-verdict").inner_text().startswith("identical")

    result = python_compare(named_trace, "k3", "k4")
    view.goto("#k3")
    view.settle()
    page.select_option("#compare-with", "k4")
    view.settle()
    for side, label in ((0, "A"), (1, "B")):
        rows = result.changed_on_one_side(side)
        assert rows  # both sides have such passes here
        (line,) = [t for t in page.locator("#detail .cmp-one-changed").all_inner_texts() if t.startswith(f"changed the IR in {label}")]
        assert f"({len(rows)}):" in line
        assert page.locator(f"#detail .cmp-row.changed-in-{label.lower()}").count() == len(rows)
