"""The HTML report in real headless Chromium (Debian's chromium, driven by playwright)."""

import os
import random
import re

import pytest

from lower_trace import load_trace
from lower_trace.model import PassStatus
from report_fixtures import EVIL_IR, EVIL_NAME, hostile_run, real_run

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM) and not os.environ.get("CI"):
        pytest.skip("Debian chromium is not installed (scripts/test.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api") if not os.environ.get("CI") else __import__("playwright.sync_api").sync_api
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def real_trace(tmp_path_factory):
    pytest.importorskip("tilelang")
    run_dir = real_run(str(tmp_path_factory.mktemp("report")))
    return load_trace(run_dir)


def wait_until(page, predicate, timeout=5.0):
    """Poll a JS predicate (the report's CSP forbids the eval behind wait_for_function)."""
    import time

    deadline = time.monotonic() + timeout
    while not page.evaluate(predicate):
        assert time.monotonic() < deadline, predicate
        time.sleep(0.05)


class Page:
    """A report opened in a fresh tab, recording console messages and requests."""

    def __init__(self, browser, path, hash_=""):
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        self.page = self.context.new_page()
        self.messages, self.requests = [], []
        self.page.on("console", lambda m: self.messages.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.messages.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.messages.append(f"dialog: {d.message}"), d.dismiss()))
        self.url = "file://" + path
        self.goto(hash_)

    def goto(self, hash_=""):
        self.page.goto(self.url + hash_)
        self.page.wait_for_selector("body[data-ready='1']")

    def active(self):
        return self.page.eval_on_selector("#passes .step.active", "e => Number(e.dataset.seq)")

    def visible_seqs(self):
        return self.page.eval_on_selector_all("#passes .step", "rows => rows.map(r => Number(r.dataset.seq))")

    def press(self, key):
        self.page.keyboard.press(key)

    def close(self):
        self.context.close()


@pytest.fixture
def report(browser, real_trace):
    opened = []

    def open_(hash_=""):
        page = Page(browser, os.path.join(real_trace.path, "report.html"), hash_)
        opened.append(page)
        return page

    yield open_
    for page in opened:
        assert not [m for m in page.messages if m.startswith(("error", "pageerror", "dialog"))], page.messages
        page.close()


def test_loads_offline_without_errors_and_opens_on_the_failure(report, real_trace):
    view = report()
    assert [url for url in view.requests if not url.startswith("file://")] == []
    assert view.messages == []
    failing = next(k for k in real_trace.kernels if k.failed_count)
    failed = next(p for p in failing.passes if p.status is PassStatus.FAILED)
    page = view.page
    assert page.locator("#kernels .kernel-row.active .kname").inner_text() == failing.name
    assert view.active() == failed.seq
    error = page.locator("#detail .error").inner_text()
    assert "ValueError" in error and "Nested parallel loops are not allowed" in error and "Traceback" in error
    assert page.locator("#detail pre.ir").inner_text() == real_trace.snapshot(failed.before)
    # The index lists every kernel with its counts.
    rows = page.locator("#kernels .kernel-row")
    assert rows.count() == len(real_trace.kernels) == 4
    for i, kernel in enumerate(real_trace.kernels):
        text = rows.nth(i).inner_text()
        passes = f"{len(kernel.passes)} pass" + ("" if len(kernel.passes) == 1 else "es")
        assert kernel.name in text and f"{passes}\n" in text and f"{kernel.changed_count} changed" in text


def test_clicking_a_pass_shows_its_diff(report, real_trace):
    from lower_trace import diff

    view = report()
    page = view.page
    gemm = real_trace.kernel("gemm")
    page.locator("#kernels .kernel-row", has_text="gemm").click()
    tile_op = next(p for p in gemm.passes if p.name == "tl.LowerTileOp")
    page.locator(f'#passes .step[data-seq="{tile_op.seq}"]').click()
    assert view.active() == tile_op.seq
    assert page.locator("#detail h2").inner_text() == f"#{tile_op.seq} tl.LowerTileOp"
    before, after = real_trace.snapshot(tile_op.before), real_trace.snapshot(tile_op.after)
    added = page.locator("table.diff td.code.add").all_inner_texts()
    removed = page.locator("table.diff td.code.del").all_inner_texts()
    assert added and removed
    assert all(line in after.splitlines() for line in added)
    assert all(line in before.splitlines() for line in removed)
    # The counts shown are those of a minimal line diff (never more than difflib's).
    label = page.locator("#detail .toolbar .label").first.inner_text()
    shown_add, shown_del = map(int, re.match(r"\+(\d+) −(\d+) lines", label).groups())
    stats = diff.stats(before, after)
    assert shown_add - shown_del == stats.added - stats.removed and shown_add <= stats.added
    assert (shown_add, shown_del) == (len(added), len(removed))
    # Unchanged context is folded and opens on click.
    folds = page.locator("table.diff tr.fold")
    assert folds.count() >= 1
    rows_before = page.locator("table.diff tr").count()
    folds.first.click()
    assert page.locator("table.diff tr").count() > rows_before
    # Word-level marks inside changed lines; unified mode shows the same lines.
    assert page.locator("table.diff td.add .word").count() > 0
    page.locator("#mode").click()
    assert page.locator("table.diff.unified td.code.add").count() == len(added)


def test_j_k_and_n_move_through_the_passes(report, real_trace):
    view = report("#k1/3")
    gemm = real_trace.kernels[0]
    seqs = view.visible_seqs()
    assert view.active() == 3
    view.press("j")
    assert view.active() == seqs[seqs.index(3) + 1]
    view.press("k")
    view.press("k")
    assert view.active() == seqs[seqs.index(3) - 1]
    view.press("n")
    changed_after = [p.seq for p in gemm.steps if getattr(p, "status", None) is PassStatus.CHANGED and p.seq > seqs[seqs.index(3) - 1]]
    assert view.active() == changed_after[0]


def test_search_counts_the_passes_a_string_occurs_in(report, real_trace):
    view = report()
    page = view.page
    pattern = r"T\.launch_thread\(\"threadIdx\.x\""
    regex = re.compile(pattern)

    def searched(step):
        digest = step.source if not hasattr(step, "status") else (step.after or step.before)
        return real_trace.snapshot(digest)

    expected = sum(1 for k in real_trace.kernels for s in k.steps if regex.search(searched(s)))
    assert 0 < expected < sum(len(k.steps) for k in real_trace.kernels)
    view.press("/")
    page.keyboard.type(pattern)
    page.keyboard.press("Enter")
    status = page.locator("#search-status")
    assert int(status.get_attribute("data-passes")) == expected
    assert status.inner_text().startswith(f"{expected} passes match")
    page.fill("#search", "([unclosed")
    page.keyboard.press("Enter")
    assert "not a valid regex" in status.inner_text()


def test_hide_unchanged_and_phase_filter_change_the_visible_passes(report, real_trace):
    view = report("#k1/3")
    page = view.page
    gemm = real_trace.kernels[0]
    assert len(view.visible_seqs()) == len(gemm.steps)
    page.check("#hide-unchanged")
    kept = [s.seq for s in gemm.steps if getattr(s, "status", None) is not PassStatus.UNCHANGED]
    assert view.visible_seqs() == kept
    view.press("j")  # the keys still drive the pass list after using the control
    assert view.active() == kept[kept.index(3) + 1]
    assert page.locator("#pass-count").inner_text() == f"{len(kept)} of {len(gemm.steps)} steps shown"
    page.uncheck("#hide-unchanged")
    page.select_option("#phase", "semantic_check")
    expected = [s.seq for s in gemm.steps if getattr(s, "phase", None) == "semantic_check" or not hasattr(s, "status")]
    assert view.visible_seqs() == expected
    view.press("/")
    page.keyboard.type("T.gemm")
    assert page.input_value("#search") == "T.gemm"


def test_the_latest_run_page_keeps_the_deep_link(browser, real_trace):
    pointer = os.path.join(os.path.dirname(real_trace.path), "report.html")
    view = Page.__new__(Page)
    view.context = browser.new_context()
    view.page = view.context.new_page()
    try:
        view.page.goto("file://" + pointer + "#k2/5")
        view.page.wait_for_selector("body[data-ready='1']")
        assert view.page.url.endswith(os.path.basename(real_trace.path) + "/report.html#k2/5")
        assert view.active() == 5
    finally:
        view.context.close()


def test_deep_links_survive_a_reload(report, real_trace):
    view = report("#k2/5")
    assert view.page.locator("#kernels .kernel-row.active .kname").inner_text() == real_trace.kernels[1].name
    assert view.active() == 5
    view.press("j")
    moved = view.active()
    assert view.page.evaluate("location.hash") == f"#k2/{moved}"
    view.page.reload()
    view.page.wait_for_selector("body[data-ready='1']")
    assert view.active() == moved


def test_codegen_shows_final_tir_next_to_the_source(report, real_trace):
    kernel = real_trace.kernels[2]  # the C kernel
    codegen = kernel.codegen[0]
    view = report(f"#{kernel.kernel_id}/{codegen.seq}")
    panes = view.page.locator("#detail .panes pre.ir")
    assert panes.count() == 2
    assert panes.nth(0).inner_text() == real_trace.snapshot(codegen.tir)
    assert panes.nth(1).inner_text() == real_trace.snapshot(codegen.source)
    assert "generated c source (device)" in view.page.locator("#detail").inner_text()


def test_theme_toggle_and_copy_buttons(report, real_trace, browser):
    view = report("#k1/3")
    page = view.page
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.click("#theme")
    assert page.evaluate("document.documentElement.dataset.theme") in ("dark", "light")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != background
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != background  # remembered
    view.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.locator("#detail button.copy", has_text="copy after").click()
    wait_until(page, "() => document.querySelector('#detail button.copy:nth-of-type(3)').textContent !== 'copy after'")
    assert page.evaluate("navigator.clipboard.readText()") == real_trace.snapshot(real_trace.kernels[0].passes[3].after)
    # "copy diff" gives a unified diff that patch applies.
    tile_op = next(p for p in real_trace.kernels[0].passes if p.name == "tl.LowerTileOp")
    page.locator(f'#passes .step[data-seq="{tile_op.seq}"]').click()
    page.locator("#detail button.copy", has_text="copy diff").click()
    wait_until(page, "() => [...document.querySelectorAll('#detail button.copy')].some(b => b.textContent === 'copied')")
    patch_text = page.evaluate("navigator.clipboard.readText()")
    assert patch_text.startswith("--- before tl.LowerTileOp\n+++ after tl.LowerTileOp\n@@ -")
    import shutil
    import subprocess

    if shutil.which("patch"):
        work = real_trace.path + "/patched.py"
        with open(work, "w") as handle:
            handle.write(real_trace.snapshot(tile_op.before))
        subprocess.run(["patch", "-s", work], input=patch_text, text=True, check=True)
        assert open(work).read() == real_trace.snapshot(tile_op.after)


def test_hostile_names_and_ir_render_as_inert_text(browser, tmp_path):
    path = hostile_run(str(tmp_path / "run-hostile"))
    view = Page(browser, path)
    page = view.page
    try:
        assert page.evaluate("window.__pwned") is None
        assert not [m for m in view.messages if not m.startswith("warning")], view.messages
        assert page.locator("img").count() == 0 and page.locator("b").count() == 0
        # The failed pass opens first; its texts are shown literally, bidi controls made visible.
        assert view.active() == 1
        detail = page.locator("#detail").inner_text()
        assert "</script><script>window.__pwned=2</script>" in detail
        assert "⟨U+202E⟩override⟨U+202C⟩" in detail and "⟨U+2066⟩isolate⟨U+2069⟩" in detail
        assert "\u202e" not in detail
        name = page.locator("#kernels .kname").inner_text()
        assert name.startswith("k</script><script>window.__pwned=1</script><!--") and "⟨U+202E⟩evil" in name
        page.locator('#passes .step[data-seq="0"]').click()
        assert "y = 2 </script>" in page.locator("table.diff").inner_text()
        assert EVIL_IR.splitlines()[0] in page.locator("table.diff").inner_text()
        assert EVIL_NAME[:10] in page.title()
    finally:
        view.close()


def test_page_diff_is_a_minimal_edit_script(browser, tmp_path):
    """The page's Myers diff against an LCS computed here, on random inputs."""
    path = hostile_run(str(tmp_path / "run-any"))
    view = Page(browser, path)
    try:
        rng = random.Random(7)
        cases = [["".join(rng.choice("ab\n") for _ in range(rng.randint(0, 40))) for _ in range(2)] for _ in range(200)]
        results = view.page.evaluate(
            """cases => cases.map(([a, b]) => {
                const rows = LTDiff.lineRows(a, b);
                return [rows.filter(r => r.tag === "=").length, LTDiff.stats(rows)];
            })""",
            cases,
        )
        for (a, b), (equal, stats) in zip(cases, results):
            x, y = LTLines(a), LTLines(b)
            assert equal == lcs(x, y)
            assert stats["added"] == len(y) - equal and stats["removed"] == len(x) - equal
    finally:
        view.close()


def LTLines(text):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines if text else []


def lcs(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    return table[0][0]


def test_an_edited_kernel_shows_its_status_and_the_edit(browser, tmp_path):
    """Trace a C kernel, edit its working copy, trace again: the report shows PATCHED and the edit."""
    tilelang = pytest.importorskip("tilelang")
    import glob

    import kernels
    import lower_trace

    with lower_trace.trace(mode="html", trace_dir=tmp_path):
        tilelang.lower(kernels.scale_c(), target="c")
    (working,) = glob.glob(str(tmp_path / "*" / "edits" / "scale.c"))
    text = open(working).read()
    open(working, "w").write(text.replace("3.000000e+00f", "1.000000e+01f"))
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        tilelang.lower(kernels.scale_c(), target="c")
    trace = load_trace(run.run_dir)
    (codegen,) = trace.kernels[0].codegen
    assert codegen.edit_status == "PATCHED"
    view = Page(browser, run.report_path, f"#k1/{codegen.seq}")
    try:
        page = view.page
        assert page.locator("#passes .step.active .edit-badge").inner_text() == "PATCHED"
        note = page.locator("#detail .edit-note").inner_text()
        assert note.startswith("PATCHED") and working in note
        assert page.locator("#detail .panes pre.ir").nth(1).inner_text() == open(working).read()
        added = page.locator("table.diff td.code.add").all_inner_texts()
        removed = page.locator("table.diff td.code.del").all_inner_texts()
        assert [line.strip() for line in added] == ["C[i] = (A[i] * 1.000000e+01f);"]
        assert [line.strip() for line in removed] == ["C[i] = (A[i] * 3.000000e+00f);"]
        assert not [m for m in view.messages if m.startswith(("error", "pageerror"))]
    finally:
        view.close()


def test_a_compile_that_fails_outside_any_pass_opens_on_its_error(browser, tmp_path):
    """An edited C kernel that gcc rejects: no pass failed, the compile did."""
    tilelang = pytest.importorskip("tilelang")
    import glob

    import kernels
    import lower_trace

    with lower_trace.trace(mode="html", trace_dir=tmp_path):
        tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
    (working,) = glob.glob(str(tmp_path / "*" / "edits" / "vector_add.c"))
    text = open(working).read()
    open(working, "w").write(text.replace("(A[i] + B[i]);", "(A[i] + B[i]) oops;"))
    with pytest.raises(Exception):
        with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
            tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
    view = Page(browser, run.report_path)
    try:
        page = view.page
        assert page.evaluate("location.hash") == "#k1/error"
        assert page.locator("#kernels .kernel-row.active").inner_text().count("compile failed") == 1
        detail = page.locator("#detail").inner_text()
        assert "vector_add: the compile failed" in detail and "oops" in detail
        row = page.locator("#passes .step.active")
        assert row.inner_text().startswith("!") and "compile failed" in row.inner_text()
    finally:
        view.close()
