"""A notebook saved as HTML (`jupyter nbconvert --to html`, its default template) opened in
Chromium: the reports in its outputs work offline inside their frames (the kernel list, a diff
after picking a changed pass), with no console error, and leave the notebook page's own styles as
they were."""

import copy
import os

import pytest
from nbconvert import HTMLExporter

import notebooks
from lower_trace.analysis.text_diff import unified_lines
from lower_trace.model import PassStatus
from lower_trace.store.reader import load_trace
from report_fixtures import wait_until

# The notebook page's own look, read off a probe element and the page's parts.
STYLES = """() => {
  const probe = document.createElement('div');
  probe.className = 'jp-RenderedText';
  probe.textContent = 'probe';
  document.body.appendChild(probe);
  const keys = ['font-family', 'font-size', 'color', 'background-color', 'line-height', 'margin', 'padding'];
  const look = (el) => el ? keys.map((k) => getComputedStyle(el).getPropertyValue(k)) : null;
  const seen = {probe: look(probe), body: look(document.body), cell: look(document.querySelector('.jp-Cell')),
                prompt: look(document.querySelector('.jp-InputPrompt')), styles: document.querySelectorAll('style').length,
                sheets: document.styleSheets.length, scripts: document.querySelectorAll('script').length};
  probe.remove();
  return seen;
}"""


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The executed notebook as nbconvert's HTML, and the same notebook without lower-trace's outputs."""
    folder = tmp_path_factory.mktemp("notebook-page")
    notebook = notebooks.execute(folder)
    exporter = HTMLExporter()  # the default (lab) template, as `jupyter nbconvert --to html` uses
    page = os.path.join(folder, "run.html")
    with open(page, "w", encoding="utf-8") as file:
        file.write(exporter.from_notebook_node(notebook)[0])
    bare = copy.deepcopy(notebook)
    for cell in bare.cells:
        cell.outputs = [o for o in cell.get("outputs", []) if "<iframe" not in o.get("data", {}).get("text/html", "")]
    plain = os.path.join(folder, "bare.html")
    with open(plain, "w", encoding="utf-8") as file:
        file.write(exporter.from_notebook_node(bare)[0])
    cdn = {exporter.require_js_url, exporter.mathjax_url, exporter.mermaid_js_url, exporter.mermaid_layout_elk_js_url}
    return notebook, page, plain, cdn


class Opened:
    """A page opened offline, recording console messages and every request."""

    def __init__(self, browser, path, cdn):
        self.context = browser.new_context(viewport={"width": 1300, "height": 900})
        self.page = self.context.new_page()
        self.messages, self.requests = [], []
        self.page.on("console", lambda m: self.messages.append(f"{m.type}: {m.text}"))  # every frame's
        self.page.on("pageerror", lambda e: self.messages.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        # nbconvert's template (not our output) loads require.js and MathJax from cdnjs, which this
        # offline machine cannot reach: each failed load would be a console error of the notebook
        # page's own. Those URLs alone are answered, empty, as a page with no network would fail
        # them; every other request is left to fail, and the test checks below that none is made.
        self.page.route(lambda url: url in cdn, lambda route: route.fulfill(status=200, body="", content_type="text/javascript"))
        self.page.goto("file://" + path)

    def errors(self):
        return [m for m in self.messages if m.startswith(("error", "pageerror"))]

    def close(self):
        self.context.close()


def _report_frames(page, count):
    frames = [f for f in page.frames if f.parent_frame is page.main_frame]
    assert len(frames) == count, [f.url for f in frames]
    for frame in frames:
        frame.wait_for_selector("body[data-ready='1']", timeout=30000)
    return frames


def test_the_saved_notebook_shows_each_report_offline(browser, saved):
    notebook, path, _plain, cdn = saved
    report = notebooks.report_of(next(o for o in notebooks.outputs(notebook, "trace") if o["output_type"] == "execute_result"))
    trace = load_trace(os.path.dirname(report))
    opened = Opened(browser, path, cdn)
    page = opened.page
    # The run's value, show(diff), show(source), show(step=), the magic's run: five frames, each its own report.
    first, diff, source, named, magic = _report_frames(page, 5)
    assert first.url == "about:srcdoc#k1/" + str(_first_changed(trace.kernels[0]))  # opened on the first change
    assert magic.url.startswith("about:srcdoc#k1")
    # show(view="diff") opens on the largest change as the page's own pass list counts it (+added -removed),
    # among passes that ran no other pass.
    enclosing = {p.parent for p in trace.kernels[0].passes}
    counts = diff.eval_on_selector_all(
        "#passes .step[data-seq]",
        "rows => rows.map(r => [Number(r.dataset.seq), r.querySelector('.add').textContent, r.querySelector('.del').textContent])",
    )
    sizes = {seq: int(add[1:]) + int(removed[1:]) for seq, add, removed in counts if add and seq not in enclosing}
    largest = int(diff.url.rsplit("/", 1)[1])
    assert sizes[largest] == max(sizes.values()) and largest == min(seq for seq, size in sizes.items() if size == sizes[largest])
    assert diff.locator("#detail").inner_text().startswith(f"#{largest} ") and diff.locator("#detail table.diff").count() > 0
    # show(step="tirx.BindTarget"): that pass's first change.
    bind = next(p for p in trace.kernels[0].passes if p.name == "tirx.BindTarget" and p.status is PassStatus.CHANGED)
    assert named.url == f"about:srcdoc#k1/{bind.seq}"
    assert named.locator("#detail").inner_text().startswith(f"#{bind.seq} tirx.BindTarget")
    scale_codegen = next(step for step in trace.kernels[1].codegen if step.role == "device")
    assert source.url == f"about:srcdoc#k2/{scale_codegen.seq}"
    assert source.locator("#detail").inner_text().startswith(f"#{scale_codegen.seq} device codegen")  # the generated source
    # The kernel list names the run's kernels.
    names = first.eval_on_selector_all("#kernels .kernel-row .kname", "rows => rows.map(r => r.textContent)")
    assert names == ["vector_add", "scale"]
    # Picking another changed pass of vector_add shows its diff: the lines the pass added.
    add = trace.kernels[0]

    def added_by(step):
        lines = unified_lines(trace.snapshot(step.before), trace.snapshot(step.after), "a", "b", 3)
        return {line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")}

    step = [p for p in add.passes if p.status is PassStatus.CHANGED and added_by(p)][-1]
    assert step.seq != _first_changed(add)
    first.click(f"#passes .step[data-seq='{step.seq}']")
    wait_until(first, f"() => location.hash === '#k1/{step.seq}' && document.querySelector('#detail table.diff') !== null")
    shown = set(first.locator("#detail table.diff td.code.add").all_inner_texts())
    assert shown and shown <= added_by(step) and first.locator("#detail table.diff.new td.code.add").first.is_visible()
    assert page.locator("iframe.lower-trace-report").first.is_visible()
    # Offline: the frames fetched nothing; the page itself asked only for nbconvert's template scripts.
    assert {url for url in opened.requests if not url.startswith("file://")} <= cdn
    assert opened.errors() == [], opened.messages
    opened.close()


def _first_changed(kernel):
    return next(p.seq for p in kernel.steps if getattr(p, "status", None) is PassStatus.CHANGED)


def test_the_reports_leave_the_notebook_pages_styles_alone(browser, saved):
    _notebook, path, plain, cdn = saved
    with_reports = Opened(browser, path, cdn)
    _report_frames(with_reports.page, 5)
    without = Opened(browser, plain, cdn)
    wait_until(without.page, "() => document.readyState === 'complete'")
    look, bare_look = with_reports.page.evaluate(STYLES), without.page.evaluate(STYLES)
    assert look["probe"] and look["cell"] and look["prompt"]
    assert look == bare_look  # no style or script of the report outside its frames
    assert with_reports.page.locator("#kernels").count() == 0  # the report's parts are inside the frames only
    assert with_reports.errors() == [] and without.errors() == []
    with_reports.close()
    without.close()
