"""The report as a notebook cell shows it: the whole page inside one ``<iframe srcdoc>``.

The frame is the only element the output adds to the notebook's page: the report's styles and
scripts stay inside it (its own document), nothing is fetched (the page is self-contained), and
a notebook saved with the output (``.ipynb``, ``nbconvert --to html``) still shows it offline.
Pure functions over text; the markup is in assets/notebook_*.html. IPython is never imported here
(front end: lower_trace/notebook.py).
"""

from __future__ import annotations

import html
import json
import os
import re
from functools import cache
from importlib import resources

from lower_trace.render.report.page import fill
from lower_trace.text_safety import plural

DEFAULT_HEIGHT = 640  # px: a kernel list, a pass list and a diff without the cell scrolling the notebook


@cache
def asset(name: str) -> str:
    """One of assets/notebook_*.html, without its file's final newline."""
    return resources.files("lower_trace.render").joinpath("assets").joinpath(name).read_text(encoding="utf-8").strip()


# A srcdoc document's base URL is its parent's, so the page's history.replaceState("#k1/5") would
# name the notebook's URL and throw; about:srcdoc makes hash links and deep links stay in the frame.
BASE = asset("notebook_base.html")
_HEIGHT = re.compile(r"\d+(\.\d+)?(px|vh|em|rem|%)")
_HEAD = re.compile(r"<head(\s[^>]*)?>", re.IGNORECASE)  # not <header>


def css_height(height: int | str) -> str:
    """640 -> '640px'; '80vh' as is. Anything else: a one-line ValueError."""
    if isinstance(height, int) and not isinstance(height, bool) and height > 0:
        return f"{height}px"
    if isinstance(height, str) and _HEIGHT.fullmatch(height.strip()):
        return height.strip()
    raise ValueError(f"height must be a number of pixels or a CSS length such as '80vh', not {height!r}")


def start_script(hash_: str) -> str:
    """Sets the frame's URL hash before the page's own script reads it (the page opens there)."""
    return fill(asset("notebook_start.html"), {"hash": json.dumps("#" + hash_.lstrip("#"))})


def framed_page(report_html: str, start: str = "") -> str:
    """The report as the frame's document: BASE (and the start hash's script) first in its head."""
    added = BASE + (start_script(start) if start else "")
    head = _HEAD.search(report_html)
    if head is None:
        return added + report_html
    return report_html[: head.end()] + added + report_html[head.end() :]


def frame(report_html: str, height: int | str = DEFAULT_HEIGHT, start: str = "", title: str = "lower-trace report") -> str:
    """One <iframe> holding the page: srcdoc escaped for an attribute, inline style only."""
    # &#13;: a browser reads a raw CR in an attribute as LF (newline normalisation), a reference as CR.
    page = html.escape(framed_page(report_html, start), quote=True).replace("\r", "&#13;")
    return fill(asset("notebook_frame.html"), {"title": html.escape(title, quote=True), "height": css_height(height), "page": page})


def note(text: str) -> dict[str, str]:
    """A short message in place of a report (plain and HTML)."""
    return {"text/plain": text, "text/html": fill(asset("notebook_note.html"), {"text": html.escape(text)})}


def run_bundle(
    report_path: str, run_dir: str, closed: bool, writes_report: bool, writes_trace: bool, kernels: int, height: int | str = DEFAULT_HEIGHT
) -> dict[str, str]:
    """What a run shows as a cell's value (IPython's _repr_mimebundle_): its report in a frame once
    the run is closed (the report is whole then), else a line saying why there is none."""
    if not writes_report:
        if writes_trace:
            return note(f"lower-trace: this run writes no HTML report; its trace is in {run_dir} (`lower-trace report {run_dir}` writes one)")
        return note("lower-trace: this run writes no HTML report (terminal mode: its diffs are printed above)")
    if not closed:
        return note(
            f"lower-trace: the run is still open ({plural(kernels, 'kernel')} so far); its report is shown once it closes "
            f"(the end of the with block, reset() or disable()): {report_path}"
        )
    if not os.path.exists(report_path):
        return note(f"lower-trace: no kernel was compiled in this run, so it has no report ({run_dir})")
    with open(report_path, encoding="utf-8") as file:
        page = file.read()
    return {"text/plain": f"lower-trace report: {report_path}", "text/html": frame(page, height)}
