"""The summary page of `lower-trace regress` in Chromium, on the stored result of a real run
(testing/fixtures/regress, made by its make.py): three kernels lowered for CUDA on two sides, warp
specialisation switched off on head, the GEMM compiled by nvcc. The rows are held to regress.json
and to truth.json beside it -- the kernels whose CUDA TileLang itself makes otherwise under head's
config, and nvcc's own register counts; sorting to the column's own values; the links to the
comparison pages they name. Nothing is compiled here: testing/integration/test_regress*.py run
regress for real."""

import json
import os
import shutil

import pytest

from lower_trace.cli.main import main
from lower_trace.render.report.regress_page import write_summary_page
from report_fixtures import Page
from support import FIXTURES

STORED = os.path.join(FIXTURES, "regress")
# The verdict of kernels whose code is the same on both sides.
TIMING_ONLY = ("identical",)


@pytest.fixture(scope="module")
def truth():
    with open(os.path.join(STORED, "truth.json")) as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    """The stored regress output folder, put in a folder of its own (its paths made that folder's)
    with its summary page written from regress.json; and regress.json's content."""
    out = tmp_path_factory.mktemp("regress-page") / "out"
    shutil.copytree(STORED, out, ignore=shutil.ignore_patterns("make.py", "truth.json"))
    # The comparison pages are written by this code from the stored sides, not kept: a stored page
    # would hold the page's scripts as they were when make.py ran.
    fresh = tmp_path_factory.mktemp("regress-pages")
    main(["regress", "--compare", str(out / "base"), str(out / "head"), "--dir", str(fresh)])
    shutil.copytree(fresh / "compare", out / "compare")
    found = json.loads((out / "regress.json").read_text().replace("{OUT}", str(out)))
    (out / "regress.json").write_text(json.dumps(found, indent=1))
    write_summary_page(str(out / "summary.html"), found)
    return out, found


@pytest.fixture(scope="module")
def changed(truth):
    """The kernels whose CUDA source the config changes, by TileLang's own lowering (stored by make.py)."""
    out = set(truth["changed"])
    assert out == {"gemm"}  # the corpus is built so: one kernel changes, two do not
    return out


@pytest.fixture
def opened(browser):
    pages = []

    def open_(path):
        page = Page(browser, str(path))
        pages.append(page)
        return page

    yield open_
    for page in pages:
        assert not page.errors(), page.messages
        assert all(url.startswith("file:") for url in page.requests), page.requests
        page.close()


def shown(view, column=None):
    """The visible rows, top to bottom: [kernel, verdict, the link's href or None, the column's text]."""
    return view.page.eval_on_selector_all(
        "#rows tr:not([hidden])",
        """(rows, column) => rows.map((tr) => {
          const a = tr.querySelector('a.compare-link');
          const th = column && [...document.querySelectorAll('#kernels-table th')].findIndex((h) => h.dataset.key === column);
          return [tr.querySelector('td.kernel a, td.kernel .name').textContent, tr.querySelector('.verdict').textContent,
                  a ? a.getAttribute('href') : null, column ? tr.children[th].textContent : null];
        })""",
        column,
    )


def arrow(view, column):
    return view.page.eval_on_selector(f"th[data-key='{column}'] .arrow", "e => e.textContent")


def test_the_rows_are_the_results_and_the_changed_set_is_tilelangs(opened, result, changed):
    out, found = result
    view = opened(out / "summary.html")
    rows = shown(view)
    # Most severe first, as regress.json lists them; the verdicts are the result's.
    assert [[r[0], r[1]] for r in rows] == [[k["kernel"], k["verdict"]] for k in found["kernels"]]
    assert {r[0] for r in rows if r[1] not in TIMING_ONLY} == changed
    # A link exactly where the result names a comparison page, relative to the summary's folder.
    for (name, _, href, _), kernel in zip(rows, found["kernels"], strict=True):
        assert (href is not None) == bool(kernel["compare_page"]), name
        if href:
            assert not href.startswith(("/", "file:")) and os.path.samefile(out / href, kernel["compare_page"])
    assert changed <= {r[0] for r in rows if r[2]}
    # The counts per verdict, and the sides as they ran.
    counts = view.page.eval_on_selector_all("#verdicts label", "ls => ls.map((l) => [l.dataset.verdict, l.textContent])")
    assert {verdict: text for verdict, text in counts} == {
        v: f"{v} ({sum(k['verdict'] == v for k in found['kernels'])})" for v in {k["verdict"] for k in found["kernels"]}
    }
    sides = view.page.text_content("#sides")
    assert "tl.disable_warp_specialized=true" in sides and found["head"]["tilelang"] in sides
    assert view.page.text_content("#shown") == f"{len(rows)} of {len(rows)} kernels shown"


def test_a_header_sorts_by_its_column_and_again_reverses(opened, result):
    out, found = result
    view = opened(out / "summary.html")
    assert arrow(view, "verdict") == "▲" and arrow(view, "head_ms") == ""
    names = [k["kernel"] for k in found["kernels"]]

    view.page.click("th[data-key='kernel']")
    assert [r[0] for r in shown(view)] == sorted(names) and arrow(view, "kernel") == "▲" and arrow(view, "verdict") == ""
    view.page.click("th[data-key='kernel']")
    assert [r[0] for r in shown(view)] == sorted(names, reverse=True) and arrow(view, "kernel") == "▼"

    # Numbers sort as numbers (the column's own text, read back as numbers, is in order).
    by_ms = sorted(found["kernels"], key=lambda k: k["head"]["ms"])
    view.page.click("th[data-key='head_ms']")
    rows = shown(view, "head_ms")
    assert [r[0] for r in rows] == [k["kernel"] for k in by_ms]
    assert [float(r[3]) for r in rows] == sorted(float(r[3]) for r in rows)
    view.page.click("th[data-key='head_ms']")
    assert [r[0] for r in shown(view)] == [k["kernel"] for k in reversed(by_ms)] and arrow(view, "head_ms") == "▼"

    # The verdict column sorts by severity, the most severe first.
    view.page.click("th[data-key='verdict']")
    assert [r[1] for r in shown(view)] == [k["verdict"] for k in sorted(found["kernels"], key=lambda k: k["severity"])]


def test_the_filters_hide_the_other_verdicts_and_names(opened, result, changed):
    out, found = result
    view = opened(out / "summary.html")
    everything = {k["kernel"] for k in found["kernels"]}
    verdicts = {k["verdict"] for k in found["kernels"]}
    (kept,) = {k["verdict"] for k in found["kernels"] if k["kernel"] in changed}
    assert len(verdicts) > 1

    for verdict in verdicts - {kept}:
        view.page.uncheck(f"#verdicts label[data-verdict='{verdict}'] input")
    assert {r[0] for r in shown(view)} == changed and {r[1] for r in shown(view)} == {kept}
    assert view.page.text_content("#shown") == f"{len(changed)} of {len(everything)} kernels shown"
    view.page.uncheck(f"#verdicts label[data-verdict='{kept}'] input")
    assert shown(view) == [] and view.page.is_visible("#empty")
    for verdict in verdicts:
        view.page.check(f"#verdicts label[data-verdict='{verdict}'] input")
    assert {r[0] for r in shown(view)} == everything

    view.page.fill("#filter", "ROW_")
    assert [r[0] for r in shown(view)] == ["row_sum"]
    origin = found["kernels"][0]["origin"]
    view.page.fill("#filter", origin)
    assert {r[0] for r in shown(view)} == {k["kernel"] for k in found["kernels"] if origin.lower() in f"{k['origin']} {k['kernel']}".lower()}
    view.page.fill("#filter", "no such kernel")
    assert shown(view) == [] and view.page.is_visible("#empty")
    view.page.fill("#filter", "")
    assert {r[0] for r in shown(view)} == everything and not view.page.is_visible("#empty")


@pytest.mark.parametrize("moved", [False, True], ids=["in-place", "folder-moved"])
def test_the_link_opens_the_comparison_page(opened, result, changed, tmp_path, moved):
    out, found = result
    if moved:  # the links are relative: the folder works wherever it is copied
        out = shutil.copytree(out, tmp_path / "elsewhere")
    view = opened(out / "summary.html")
    (name,) = changed
    with view.page.expect_navigation():
        view.page.click(f"#rows td.kernel a.compare-link:text-is('{name}')")
    view.page.wait_for_selector("body[data-ready='1']", timeout=30000)
    page_file = next(k["compare_page"] for k in found["kernels"] if k["kernel"] == name)
    assert view.page.url.split("#")[0] == f"file://{out / 'compare' / os.path.basename(page_file)}"  # it adds the row it opens
    assert name in view.page.title() and name in view.page.text_content("#runinfo")
    assert view.page.locator("#compare .hint:text-is('Loading…')").count() == 0


def test_stored_sides_show_their_folders(opened, result, changed, tmp_path, capsys):
    """--compare: the same verdicts from the stored sides, the header names the folders read."""
    out, found = result
    assert main(["regress", "--compare", str(out / "base"), str(out / "head"), "--dir", str(tmp_path / "stored")]) == 1
    capsys.readouterr()
    view = opened(tmp_path / "stored" / "summary.html")
    assert [[r[0], r[1]] for r in shown(view)] == [[k["kernel"], k["verdict"]] for k in found["kernels"]]
    sides = view.page.eval_on_selector_all("#sides .side", "ls => ls.map((l) => l.textContent)")
    assert sides == [f"base: {out / 'base'} traces", f"head: {out / 'head'} traces"]
    (name,) = changed
    href = view.page.get_attribute(f"#rows a.compare-link:text-is('{name}')", "href")
    assert href is not None and os.path.isfile(tmp_path / "stored" / href)


def test_the_device_columns_are_nvccs_numbers(opened, result, truth):
    out, found = result
    base, head = truth["gemm_registers"]["base"], truth["gemm_registers"]["head"]  # ptxas --verbose, run by make.py
    assert base != head  # warp specialisation changes the register budget
    gemm = next(k for k in found["kernels"] if k["kernel"] == "gemm")
    view = opened(out / "summary.html")
    rows = {r[0]: r[3] for r in shown(view, "registers")}
    assert rows == {k["kernel"]: (f"{base} → {head} ({head - base:+d})" if k["kernel"] == "gemm" else "") for k in found["kernels"]}
    spills = {r[0]: r[3] for r in shown(view, "spills")}
    assert spills == {k["kernel"]: "" for k in found["kernels"]}  # nothing spills on either side
    assert not any(name.startswith("spill") for name in gemm["device"])
    # The column sorts by the change: the kernels without one last, whichever way.
    view.page.click("th[data-key='registers']")
    assert next(r[0] for r in shown(view)) == "gemm"
    view.page.click("th[data-key='registers']")
    assert next(r[0] for r in shown(view)) == "gemm"
