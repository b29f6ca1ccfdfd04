"""The report as a notebook shows it (render/notebook_frame.py): the whole page in one iframe's srcdoc,
escaped so that a browser's attribute parsing gives the page back unchanged; the frame's start
hash; the magic's options (lower_trace/notebook.py); a Jupyter kernel's runs named "notebook".
(A real kernel and browser: integration/test_notebook.py, browser/test_notebook_page.py.)"""

import html.parser
import re

import pytest

from lower_trace.notebook import USAGE, parse_options
from lower_trace.render.notebook_frame import BASE, css_height, frame, framed_page, run_bundle, start_script
from lower_trace.store.paths import script_name

HOSTILE = [
    '<!doctype html>\n<html lang="en">\n<head>\n<title>a "quoted" & \'single\'</title></head><body>x</body></html>',
    '<html><HEAD data-x="1"><script>if (a < b && c > "d") document.write("</iframe><script>alert(1)</script>")</script></HEAD></html>',
    "no head at all: &amp; &lt;iframe&gt; \u2028 \u2029 \U0001f600 \r\n \r 'end'",
    '<head></head><!-- a comment with "quotes" --> srcdoc="&quot;"',
    '<header id="top">no head element, a header</header>',
]


class Attrs(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def parsed(markup):
    parser = Attrs()
    parser.feed(markup)
    parser.close()
    return parser.tags


@pytest.mark.parametrize("page", HOSTILE)
def test_the_srcdoc_unescaped_is_the_report(page):
    tags = parsed(frame(page))
    assert [tag for tag, _ in tags] == ["iframe"]  # one element: nothing of the page leaks out of the attribute
    assert "\r" not in frame(page)  # a browser would read a raw CR there as LF
    srcdoc = tags[0][1]["srcdoc"]
    assert srcdoc == framed_page(page) and srcdoc.replace(BASE, "", 1) == page
    # BASE goes first in the head (where one is), so the page's own links resolve in the frame.
    head = re.search(r"<head[\s>]", page, re.IGNORECASE)
    expected_at = page.index(">", head.start()) + 1 if head else 0
    assert srcdoc.index(BASE) == expected_at


def test_the_frame_starts_on_its_hash_before_the_page_runs():
    page = "<!doctype html><html><head><meta charset=utf-8><script>read(location.hash)</script></head></html>"
    srcdoc = parsed(frame(page, start="k2/17"))[0][1]["srcdoc"]
    starts = "<script>history.replaceState(null, '', \"#k2/17\");</script>"
    assert srcdoc == "<!doctype html><html><head>" + BASE + starts + "<meta charset=utf-8><script>read(location.hash)</script></head></html>"
    assert start_script("#k1") == start_script("k1")


def test_the_frame_is_sized_with_inline_style_only():
    markup = frame("<p>report</p>", height="80vh")
    ((_, attrs),) = parsed(markup)
    assert "width:100%" in attrs["style"] and "height:80vh" in attrs["style"]
    assert "height:640px" in parsed(frame("x"))[0][1]["style"] and "height:300px" in parsed(frame("x", 300))[0][1]["style"]
    outside = markup.split(' srcdoc="')[0]
    assert "<style" not in outside and "<script" not in outside
    for bad in (0, -5, True, "tall", "10px; background:red", 3.5):
        with pytest.raises(ValueError, match=r"^height must be a number of pixels or a CSS length such as '80vh', not "):
            css_height(bad)


def test_a_run_without_a_report_to_show_says_why(tmp_path):
    report = str(tmp_path / "report.html")
    terminal = run_bundle(report, str(tmp_path), closed=True, writes_report=False, writes_trace=False, kernels=1)
    assert terminal["text/plain"] == "lower-trace: this run writes no HTML report (terminal mode: its diffs are printed above)"
    trace_only = run_bundle(report, str(tmp_path), closed=True, writes_report=False, writes_trace=True, kernels=1)
    assert trace_only["text/plain"].endswith(f"its trace is in {tmp_path} (`lower-trace report {tmp_path}` writes one)")
    still_open = run_bundle(report, str(tmp_path), closed=False, writes_report=True, writes_trace=True, kernels=1)
    assert still_open["text/plain"].startswith("lower-trace: the run is still open (1 kernel so far)")
    assert "<iframe" not in still_open["text/html"] and "<script" not in still_open["text/html"]
    empty = run_bundle(report, str(tmp_path), closed=True, writes_report=True, writes_trace=True, kernels=0)
    assert empty["text/plain"] == f"lower-trace: no kernel was compiled in this run, so it has no report ({tmp_path})"
    (tmp_path / "report.html").write_text("<html><head></head><body>the report & more</body></html>", encoding="utf-8")
    shown = run_bundle(report, str(tmp_path), closed=True, writes_report=True, writes_trace=True, kernels=1)
    assert shown["text/plain"] == f"lower-trace report: {report}"
    assert parsed(shown["text/html"])[0][1]["srcdoc"].replace(BASE, "", 1) == (tmp_path / "report.html").read_text(encoding="utf-8")


def test_the_magics_options():
    assert (parse_options("").mode, parse_options("").dir) == ("html", None)
    options = parse_options("--mode both --dir 'my traces'")
    assert (options.mode, options.dir) == ("both", "my traces")
    for line, said in [
        ("--mode bogus", "argument --mode: invalid choice: 'bogus' (choose from 'html', 'both', 'terminal')"),
        ("--verbose", "unrecognized arguments: --verbose"),
        ("--dir", "argument --dir: expected one argument"),
        ("--dir 'open", "No closing quotation"),
    ]:
        with pytest.raises(ValueError) as raised:
            parse_options(line)
        assert str(raised.value) == f"{said}; usage: {USAGE}"


def test_a_jupyter_kernels_runs_are_named_after_its_notebook(monkeypatch):
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/me/work/tuning-gemm.ipynb")  # what Jupyter Server tells its kernels
    assert script_name(["/venv/lib/python3.11/site-packages/ipykernel_launcher.py", "-f", "k.json"]) == "tuning-gemm"
    assert script_name(["kernel.py"]) == "kernel"  # a script is named after itself, notebook or not
    monkeypatch.delenv("JPY_SESSION_NAME")  # a kernel not told its notebook (an old server, nbclient)
    assert script_name(["/venv/lib/python3.11/site-packages/ipykernel_launcher.py", "-f", "k.json"]) == "notebook"
    assert script_name(["/venv/lib/python3.11/site-packages/ipykernel/__main__.py"]) == "notebook"
    assert script_name(["/home/me/ipykernel_launcher_test.py"]) == "ipykernel_launcher_test"
    assert script_name(["kernel.py"]) == "kernel"
