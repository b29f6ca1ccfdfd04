"""The report's source map in Chromium: every generated line carries the place Python's origins
give it (analysis/origins.py, itself checked against marker comments in test_origins.py);
pointing at a tma_load line lights its T.copy line in the source pane and every line from it;
clicking that source line lists what each pass did to its lines. A guessed origin is drawn dimmer
than a certain one; the source pane, however much a pinned line lists, leaves a header scrolled
to in sight; a run killed before its close says how to add its source map, which `lower-trace
report` adds; a copied trace's rebuilt report names the copy's working copies."""

import base64
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

tilelang = pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")

import lower_trace  # noqa: E402
import marked_kernels  # noqa: E402
from lower_trace.analysis.origins import trace_origins  # noqa: E402
from report_fixtures import Page  # noqa: E402
from support import TESTING, lower_trace_cli, pythonpath  # noqa: E402

MARKS = marked_kernels.markers()
GUESSES = ("guess", "inherited")  # how an inferred origin is named ("inherited": older traces)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    from tvm.target import Target

    with lower_trace.trace(mode="html", trace_dir=str(tmp_path_factory.mktemp("origins-page"))) as run, Target({"kind": "cuda", "arch": "sm_90a"}) as target:
        tilelang.lower(marked_kernels.gemm_ws(), target=target)
        with pytest.raises(Exception, match="frag"):
            tilelang.lower(marked_kernels.transposed_fragment_marked(), target=target)
    return lower_trace.load_trace(run.run_dir)


def test_generated_lines_link_to_the_users_lines(browser, traced):
    kernel = traced.kernel("gemm_ws")
    device = next(c for c in kernel.codegen if c.role == "device")
    view = Page(browser, os.path.join(traced.path, "report.html"), f"#{kernel.kernel_id}")
    view.settle()
    view.page.locator(f'#passes .step[data-seq="{device.seq}"]').click()
    source_box = view.page.locator(".ir-box").filter(has_text="generated cuda source")
    lines = source_box.locator("pre.lined > span.ln")
    shown = lines.evaluate_all("spans => spans.map((s) => [s.textContent, s.dataset.o === undefined ? null : s.title])")
    # Line for line, the place Python gives each line.
    expected = trace_origins(traced, kernel).sources[device.seq].origins
    assert len(shown) == len(expected)
    for (text, title), origin in zip(shown, expected, strict=True):
        if origin is None:
            assert title is None, text
        else:
            assert title.startswith(f"from {os.path.basename(origin.file)}:{origin.line}"), (text, title)
    # Point at the A tile's tma_load: its T.copy line in the source pane lights, and so does every shown line from it.
    tma = lines.filter(has_text="tl::tma_load(A_desc").first
    tma.hover()
    lit = view.page.locator(".source-pane .ln.o-hl")
    assert lit.count() == 1 and lit.inner_text().strip().startswith(f"{MARKS['copy_a']}  ")
    same = [i for i, origin in enumerate(expected) if origin is not None and origin.line == MARKS["copy_a"]]
    assert source_box.locator("span.ln.o-hl").count() == len(same)
    # Click the user's line: its lines stay lit, and what each pass did to them is listed, a click from the pass.
    view.page.locator(".source-pane .ln", has_text="T.copy(A[by * block_M").click()
    events = view.page.locator(".line-events li")
    assert events.count() >= 3
    assert view.page.locator(".line-events", has_text="tl.LowerTileOp").count() == 0  # seqs, not names: a link each
    first = events.first.locator("button")
    seq = int(first.inner_text().lstrip("#"))
    first.click()
    assert view.active() == seq
    assert not view.errors(), view.messages
    assert all(url.startswith(("file:", "data:", "blob:")) for url in view.requests), view.requests
    view.close()


def test_a_failed_pass_underlines_the_users_lines_its_error_points_at(browser, traced):
    """TVM's error names the fragment's allocation (its span): that line of the source pane is
    marked failing, and no other is (the failing IR's lines the message does not quote)."""
    kernel = traced.kernel("transposed_fragment")
    failed = next(p for p in kernel.passes if p.error is not None)
    assert f"marked_kernels.py:{MARKS['tf_alloc']}" in failed.error.message  # the ground truth: TVM's own location
    view = Page(browser, os.path.join(traced.path, "report.html"), f"#{kernel.kernel_id}")
    view.settle()
    assert view.active() == failed.seq  # the report opens on the failure
    failing = view.page.locator(".source-pane .ln.o-failing")
    assert failing.count() == 1
    assert failing.inner_text().strip().startswith(f"{MARKS['tf_alloc']}  ")
    assert "T.alloc_fragment" in failing.inner_text()
    # The failing IR beside it carries the user's lines too: the read loop's body names its line.
    body = view.page.locator("#detail pre.ir.lined span.ln", has_text="B[i, j] = frag[i, j] + frag[j, i]")
    assert body.count() == 1 and body.get_attribute("title").startswith(f"from marked_kernels.py:{MARKS['tf_read']}")
    assert not view.errors(), view.messages
    view.close()


def _cli(*args, timeout=300):
    return subprocess.run([lower_trace_cli(), *args], check=True, capture_output=True, text=True, timeout=timeout).stdout


def _device_source_lines(view, kernel):
    device = next(c for c in kernel.codegen if c.role == "device")
    view.page.locator(f'#passes .step[data-seq="{device.seq}"]').click()
    return view.page.locator(".ir-box").filter(has_text="generated cuda source").locator("pre.lined > span.ln")


def _edge(view, line):
    """The colour the line's origin edge is drawn in (its first pixels, as Chromium paints them)
    and the line's own background further right: [r, g, b] each, read off a screenshot."""
    line.scroll_into_view_if_needed()
    view.page.mouse.move(0, 0)  # nothing lit by pointing
    box = line.bounding_box()
    png = view.page.screenshot(clip={"x": box["x"], "y": box["y"], "width": box["width"], "height": box["height"]})
    pixels = view.page.evaluate(
        """async (data) => {
            const image = new Image();
            image.src = `data:image/png;base64,${data}`;
            await image.decode();
            const canvas = new OffscreenCanvas(image.width, image.height);
            const context = canvas.getContext("2d");
            context.drawImage(image, 0, 0);
            const y = Math.floor(image.height / 2);
            const at = (x) => [...context.getImageData(x, y, 1, 1).data].slice(0, 3);
            return [at(1), at(image.width - 2)];
        }""",
        base64.b64encode(png).decode("ascii"),
    )
    return pixels


def test_a_guessed_origin_is_drawn_dimmer_than_a_certain_one(browser, traced):
    """Which lines are guesses is the CLI's answer (blame --source --json: each line's origin and
    how it was found); in the page each such line is marked so, titled "inferred", and its edge is
    painted fainter than a certain line's of the same place of the user's program."""
    kernel = traced.kernel("gemm_ws")
    answer = json.loads(_cli("blame", traced.path, "-k", kernel.kernel_id, "--source", "--json"))
    cli_lines = next(part for part in answer if part["role"] == "device")["lines"]
    hows = [line["origin"]["how"] if line["origin"] else None for line in cli_lines]
    assert any(how in GUESSES for how in hows) and any(how and how not in GUESSES for how in hows), hows
    view = Page(browser, os.path.join(traced.path, "report.html"), f"#{kernel.kernel_id}")
    view.settle()
    lines = _device_source_lines(view, kernel)
    shown = lines.evaluate_all(
        "spans => spans.map((s) => [s.dataset.o === undefined ? null : Number(s.dataset.o), s.classList.contains('o-guess'), s.title,"
        " getComputedStyle(s).boxShadow])"
    )
    assert len(shown) == len(cli_lines)
    for (place, guessed, title, shadow), how, line in zip(shown, hows, cli_lines, strict=True):
        assert (place is not None) == (how is not None), line
        if how is None:
            continue
        assert guessed == (how in GUESSES), line
        assert ("inferred" in title) == (how in GUESSES), (line, title)
        # The edge's colour: opaque for a fact, translucent for a guess.
        alpha = re.match(r"rgba?\(\d+, \d+, \d+(?:, ([\d.]+))?\)", shadow)
        assert alpha, shadow
        assert (float(alpha.group(1) or 1) < 1) == (how in GUESSES), (line, shadow)
    # Painted: a place with both kinds of line, its guessed line's edge is nearer the background.
    by_place = {}
    for i, (place, guessed, _, _) in enumerate(shown):
        if place is not None:
            by_place.setdefault(place, {}).setdefault(guessed, i)
    place, pair = next((p, kinds) for p, kinds in by_place.items() if len(kinds) == 2)
    contrast = {}
    for guessed, index in pair.items():
        edge, background = _edge(view, lines.nth(index))
        contrast[guessed] = sum(abs(a - b) for a, b in zip(edge, background, strict=True))
    assert contrast[True] < 0.7 * contrast[False], contrast
    assert not view.errors(), view.messages
    view.close()


@pytest.fixture(scope="module")
def with_device_stage(traced, tmp_path_factory):
    """A copy of the traced run with its device stage built on demand (nvcc, ptxas, nvdisasm): the
    report rewritten with PTX and SASS under the device codegen step."""
    from device_sweep import missing_tools

    if missing_tools():
        pytest.skip(missing_tools())
    copy = tmp_path_factory.mktemp("origins-device") / os.path.basename(traced.path)
    shutil.copytree(traced.path, copy)
    _cli("device", str(copy), timeout=600)
    return lower_trace.load_trace(str(copy))


def test_the_source_pane_leaves_a_header_scrolled_to_in_sight(browser, with_device_stage):
    """At 1280x800, with a line of the user's source pinned (its history listed), the sticky pane
    stays within about a third of the window and the device stage's header, scrolled into view,
    is below it, not under it."""
    kernel = with_device_stage.kernel("gemm_ws")
    assert kernel.device_stage is not None
    view = Page(browser, os.path.join(with_device_stage.path, "report.html"), f"#{kernel.kernel_id}")
    view.page.set_viewport_size({"width": 1280, "height": 800})
    view.settle()
    _device_source_lines(view, kernel)
    # The line with the longest history: the tallest the pane gets.
    view.page.locator(".source-pane .ln.o", has_text="T.copy(A[by * block_M").click()
    assert view.page.locator(".line-events li").count() >= 3
    header = view.page.locator(".device-stage h3").first
    header.evaluate("h => h.scrollIntoView()")  # where a link to it takes the reader
    view.page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    pane = view.page.locator(".source-pane").bounding_box()
    box = header.bounding_box()
    assert pane["height"] <= 0.36 * 800, pane
    assert box["y"] >= pane["y"] + pane["height"] - 1 and box["y"] + box["height"] <= 800, (pane, box)
    on_top = header.evaluate(
        "h => { const r = h.getBoundingClientRect(); const hit = document.elementFromPoint(r.left + 20, r.top + r.height / 2); return h.contains(hit); }"
    )
    assert on_top
    assert not view.errors(), view.messages
    view.close()


KILLED = """
import os, signal, sys, time
sys.path.insert(0, {testing!r})
import tilelang, lower_trace, marked_kernels
from tvm.target import Target
lower_trace.enable(mode="html", trace_dir={trace!r})
with Target({{"kind": "cuda", "arch": "sm_90a"}}) as target:
    tilelang.lower(marked_kernels.gemm_ws(), target=target)
run = lower_trace.current_run()
report = os.path.join(run.run_dir, "report.html")

def ready():  # the kernel's report block, and on disk its codegen record with the line map (written by the worker)
    if not (os.path.exists(report) and 'class="lt-kernel"' in open(report).read()):
        return False
    kernels = lower_trace.load_trace(run.run_dir).kernels
    return any(c.role == "device" and c.line_map for k in kernels for c in k.codegen)

while not ready():
    run.worker.wait()
    time.sleep(0.05)
print(run.run_dir, flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # before the run closes: no source map, no end marker
"""


def test_a_killed_run_says_how_to_add_the_source_map_and_lower_trace_report_adds_it(browser, tmp_path):
    env = {**os.environ, "PYTHONPATH": pythonpath(), "TILELANG_DISABLE_CACHE": "1"}
    env = {k: v for k, v in env.items() if not k.startswith("TL_LOWER_TRACE")}
    code = KILLED.format(testing=TESTING, trace=str(tmp_path / "trace"))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    run_dir = proc.stdout.strip()
    report = os.path.join(run_dir, "report.html")
    html = open(report, encoding="utf-8").read()
    assert 'class="lt-payload"' in html and 'class="lt-origins"' not in html and 'id="lt-end"' not in html
    view = Page(browser, report, "#k1")
    view.settle()
    assert view.page.locator(".source-pane").count() == 0
    hint = view.page.locator(".source-map-missing")
    assert hint.count() == 1 and hint.inner_text() == f"source map: run lower-trace report {run_dir} to add it"
    assert not view.errors(), view.messages
    view.close()
    _cli("report", run_dir)  # what the hint says
    html = open(report, encoding="utf-8").read()
    assert html.count('class="lt-origins"') == 1
    view = Page(browser, report, "#k1")
    view.settle()
    assert view.page.locator(".source-map-missing").count() == 0
    lines = _device_source_lines(view, lower_trace.load_trace(run_dir).kernel("gemm_ws"))
    assert lines.filter(has_text="tl::tma_load(A_desc").first.get_attribute("title").startswith(f"from marked_kernels.py:{MARKS['copy_a']}")
    assert not view.errors(), view.messages
    view.close()


def _payloads(html):
    found = re.findall(r'<script type="application/octet-stream" class="lt-payload" id="lt-p\d+">(.*?)</script>', html, re.S)
    return [json.loads(gzip.decompress(base64.b64decode(text))) for text in found]


def test_a_copied_traces_rebuilt_report_names_the_copys_working_copies(browser, traced, tmp_path):
    """cp -r of the run folder, or of the script's folder (its runs and edits/), then `lower-trace
    report COPY`: the working copy the report names is the one beside the copy, never the original's."""
    kernel = traced.kernel("gemm_ws")
    device = next(c for c in kernel.codegen if c.role == "device")
    original = os.path.dirname(traced.path)  # the script's folder the run was traced in
    assert device.edit_path == os.path.join(original, "edits", os.path.basename(device.edit_path))  # what the trace holds
    name = os.path.basename(device.edit_path)
    run_copy = tmp_path / "runs" / os.path.basename(traced.path)
    shutil.copytree(traced.path, run_copy)
    script_copy = tmp_path / "scripts" / os.path.basename(original)
    shutil.copytree(original, script_copy)
    for copy, working_copy in ((run_copy, tmp_path / "runs" / "edits" / name), (script_copy / os.path.basename(traced.path), script_copy / "edits" / name)):
        _cli("report", str(copy))
        html = open(copy / "report.html", encoding="utf-8").read()
        payloads = _payloads(html)
        paths = [step["edit_path"] for payload in payloads for step in payload["steps"] if step.get("edit_path")]
        assert paths and set(paths) == {str(working_copy)}
        assert original not in html and original not in json.dumps(payloads)
        view = Page(browser, str(copy / "report.html"), f"#{kernel.kernel_id}")
        view.settle()
        view.page.locator(f'#passes .step[data-seq="{device.seq}"]').click()
        assert view.page.locator(".edit-note code").first.inner_text() == str(working_copy)
        assert not view.errors(), view.messages
        view.close()
    # The script folder's copy holds the working copy the report names, as the original was.
    assert (script_copy / "edits" / name).read_text() == open(device.edit_path).read()
