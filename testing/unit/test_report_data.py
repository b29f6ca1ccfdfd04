"""The report file: its blocks, how they are embedded, and the append-only writer."""

import base64
import dataclasses
import errno
import gzip
import json
import os
import re
import shutil
import tracemalloc
from importlib import resources

import pytest

from lower_trace import load_trace
from lower_trace.model import KernelState, KernelStatus, PassStatus
from lower_trace.render.report import writer as report_writer
from lower_trace.render.report.from_trace import write_report
from lower_trace.render.report.page import json_for_script, page_rules, snapshot_digests
from lower_trace.render.report.writer import ReportWriter
from support import FIXTURES

FIXTURE = os.path.join(FIXTURES, "trace-format-1")


def parse(html):
    """The page's JSON blocks, as the page's script gathers them."""
    head = re.search(r'<script type="application/json" id="run-data">(.*?)</script>', html, re.S)
    assert head, "run-data"
    kernels = [json.loads(m) for m in re.findall(r'<script type="application/json" class="lt-kernel">(.*?)</script>', html, re.S)]
    payloads = {
        int(block): json.loads(gzip.decompress(base64.b64decode(text)))
        for block, text in re.findall(r'<script type="application/octet-stream" class="lt-payload" id="lt-p(\d+)">(.*?)</script>', html, re.S)
    }
    notes = [json.loads(m) for m in re.findall(r'<script type="application/json" class="lt-note">(.*?)</script>', html, re.S)]
    end = re.search(r'<script type="application/json" id="lt-end">(.*?)</script>', html, re.S)
    return json.loads(head.group(1)), kernels, payloads, notes, json.loads(end.group(1)) if end else None


def copies(trace, count):
    """count copies of the trace's kernels, ids k1.. (the same snapshots, so later ones refer back)."""
    bases = trace.kernels
    return [dataclasses.replace(bases[i % len(bases)], kernel_id=f"k{i + 1}") for i in range(count)]


def test_the_page_gets_what_became_of_a_compile_in_pythons_words():
    """model.KernelState's labels reach the page through page_rules; no asset writes them again."""
    assert page_rules()["state"] == {"OK": "ok", "FAILED": "failed", "COMPILE_FAILED": "compile failed", "DID_NOT_FINISH": "did not finish"}
    kernel = load_trace(FIXTURE).kernels[0]
    failed = dataclasses.replace(kernel.passes[3], status=PassStatus.FAILED)
    states = [
        KernelState.of(kernel),
        KernelState.of(dataclasses.replace(kernel, status=KernelStatus.RUNNING)),
        KernelState.of(dataclasses.replace(kernel, status=KernelStatus.FAILED)),
        KernelState.of(dataclasses.replace(kernel, status=KernelStatus.FAILED, passes=(*kernel.passes[:3], failed))),
    ]
    assert states == [KernelState.OK, KernelState.DID_NOT_FINISH, KernelState.COMPILE_FAILED, KernelState.FAILED]
    assert [state.failed for state in states] == [False, False, True, True]
    assets = resources.files("lower_trace.render.report").joinpath("assets")
    for item in assets.iterdir():
        if item.name.endswith((".js", ".html")):
            text = item.read_text(encoding="utf-8")
            for state in (KernelState.COMPILE_FAILED, KernelState.DID_NOT_FINISH):
                assert f'"{state.value}"' not in text and f">{state.value}<" not in text, (item.name, state.value)


def test_a_report_is_a_head_a_block_per_kernel_and_an_end_marker(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "run")
    path = write_report(str(tmp_path / "run"))
    html = open(path, encoding="utf-8").read()
    trace = load_trace(str(tmp_path / "run"))
    header, kernels, payloads, notes, end = parse(html)
    assert header["run"]["run_id"] == trace.run.run_id and header["rules"] == page_rules()
    (summary,) = kernels
    source = trace.kernels[0]
    assert summary["name"] == "elementwise_add" and summary["target"] == "cuda -arch=sm_90a"
    assert (summary["passes"], summary["changed"], summary["failed"], summary["block"], summary["refs"]) == (82, source.changed_count, 0, 0, [])
    assert end == {"kernels": 1} and notes == []
    payload = payloads[0]
    assert [s["seq"] for s in payload["steps"]] == [s.seq for s in source.steps]
    assert payload["steps"][-1]["kind"] == "codegen" and payload["steps"][0]["kind"] == "pass"
    used = {s.before for s in source.passes} | {s.after for s in source.passes}
    used |= {c.tir for c in source.codegen} | {c.source for c in source.codegen} | {c.generated for c in source.codegen}
    assert set(payload["snapshots"]) == used - {""} == set(snapshot_digests(source))
    assert all(payload["snapshots"][d] == trace.snapshot(d) for d in payload["snapshots"])
    # Compressed in the page: far smaller than the texts it carries.
    packed = re.search(r'id="lt-p0">(.*?)</script>', html, re.S).group(1)
    assert len(packed) * 4 < sum(len(t) for t in payload["snapshots"].values())
    # The SVG namespace is a name, not an address (nothing is fetched): the one URL-like text allowed.
    assert html.count("http://") == html.count("http://www.w3.org/2000/svg") == 1 and "https://" not in html and "<link" not in html
    # The end marker is the last thing in the file: every block comes after the page's scripts.
    assert html.rstrip().endswith('<script type="application/json" id="lt-end">{"kernels":1}</script>')
    assert html.index('class="lt-kernel"') > html.rindex("<script>\n")


def test_each_snapshot_is_written_once_and_blocks_name_where_the_others_are(tmp_path):
    trace = load_trace(FIXTURE)
    asked = []

    def text_of(digest):
        asked.append(digest)
        return trace.snapshot(digest)

    writer = ReportWriter(str(tmp_path / "r.html"), trace.run)
    kernels = copies(trace, 3)
    for kernel in kernels:
        writer.add_kernel(kernel, text_of)
    writer.close()
    # Each text is carried by one block; the source map (origins_data.py) reads a kernel's texts
    # again, through text_of, to work out its lines' origins: the writer keeps no text itself.
    written = [d for d in asked if not d.endswith(".spans") and not d.startswith("source:")]
    assert set(written) == set(snapshot_digests(kernels[0]))
    _, summaries, payloads, _, end = parse(open(tmp_path / "r.html", encoding="utf-8").read())
    assert [s["id"] for s in summaries] == ["k1", "k2", "k3"] and end == {"kernels": 3}
    assert [s["refs"] for s in summaries] == [[], [0], [0]]
    assert len(payloads[0]["snapshots"]) == len(snapshot_digests(trace.kernels[0])) and payloads[1]["snapshots"] == payloads[2]["snapshots"] == {}
    # Every digest a kernel names is in its own block or one its summary names.
    for summary in summaries:
        held = {d for block in [summary["block"], *summary["refs"]] for d in payloads[block]["snapshots"]}
        assert set(snapshot_digests(trace.kernels[0])) <= held


def test_the_writer_appends_and_a_killed_writer_leaves_every_finished_kernel(tmp_path):
    trace = load_trace(FIXTURE)
    path = tmp_path / "r.html"
    writer = ReportWriter(str(path), trace.run, latest_link=str(tmp_path / "latest.html"))
    writer.add_note("before the first kernel")
    assert not path.exists() and not (tmp_path / "latest.html").exists()  # nothing until a kernel
    sizes = []
    before = b""
    for kernel in copies(trace, 3):
        writer.add_kernel(kernel, trace.snapshot)
        now = path.read_bytes()
        assert now.startswith(before)  # appended, never rewritten
        before = now
        sizes.append(len(now))
        if len(sizes) == 1:
            writer.add_note("after it </script>")
    assert (tmp_path / "latest.html").is_file() and "r.html" in (tmp_path / "latest.html").read_text()
    # Not closed (the process was killed): every kernel so far is there, and no end marker.
    header, kernels, _, notes, end = parse(path.read_text(encoding="utf-8"))
    assert [k["id"] for k in kernels] == ["k1", "k2", "k3"] and end is None
    assert header["run"]["notes"][-1] == "before the first kernel" and notes == ["after it </script>"]
    assert writer.close() == str(path) and parse(path.read_text(encoding="utf-8"))[4] == {"kernels": 3}
    with pytest.raises(ValueError):
        writer.add_kernel(trace.kernels[0], trace.snapshot)


def test_a_disk_fault_mid_block_leaves_the_file_as_after_the_last_block(tmp_path, monkeypatch):
    trace = load_trace(FIXTURE)
    path = tmp_path / "r.html"
    writer = ReportWriter(str(path), trace.run)
    first, second = copies(trace, 2)
    second = dataclasses.replace(second, name="second")
    writer.add_kernel(dataclasses.replace(first, passes=first.passes[:3], codegen=()), trace.snapshot)
    good = path.read_bytes()
    real_write = os.write

    def failing(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))  # half the block reaches the disk
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(report_writer.os, "write", failing)
    with pytest.raises(OSError):
        writer.add_kernel(second, trace.snapshot)
    assert path.read_bytes() == good
    monkeypatch.setattr(report_writer.os, "write", real_write)
    writer.add_kernel(second, trace.snapshot)  # the space came back: the block is whole, with its texts
    writer.close()
    _, kernels, payloads, _, _ = parse(path.read_text(encoding="utf-8"))
    assert [k["name"] for k in kernels] == [first.name, "second"]
    held = set(payloads[0]["snapshots"]) | set(payloads[1]["snapshots"])
    assert set(snapshot_digests(second)) <= held


def test_memory_stays_flat_over_a_thousand_kernels(tmp_path):
    """The writer keeps digests, not texts: what it holds after 1,000 kernels is a few MB."""
    trace = load_trace(FIXTURE)
    base = trace.kernels[0]
    base = dataclasses.replace(base, passes=base.passes[:16], codegen=())
    digests = snapshot_digests(base)
    texts = {d: trace.snapshot(d) for d in digests}
    writer = ReportWriter(str(tmp_path / "r.html"), trace.run)

    def kernel(i):  # every kernel brings texts of its own
        passes = tuple(dataclasses.replace(p, before=f"{p.before}-{i}", after=f"{p.after}-{i}" if p.after else "") for p in base.passes)
        return dataclasses.replace(base, kernel_id=f"k{i}", passes=passes, codegen=())

    def text_of(digest):  # IR-sized texts: a few KB each
        return texts[digest.rsplit("-", 1)[0]] + f"# {digest}\n" * 200

    for i in range(50):
        writer.add_kernel(kernel(i), text_of)
    written = os.path.getsize(tmp_path / "r.html")
    tracemalloc.start()
    start, _ = tracemalloc.get_traced_memory()
    for i in range(50, 1000):
        writer.add_kernel(kernel(i), text_of)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    writer.close()
    texts_written = 950 * sum(len(text_of(d)) for d in texts)
    assert os.path.getsize(tmp_path / "r.html") - written > texts_written / 40  # all in the file (compressed)
    # What the writer keeps per kernel is its digests' entries: well under a KB each here,
    # and a small fraction of the texts it wrote.
    assert held - start < 950 * 1024 and held - start < texts_written / 20


def test_a_kernel_that_did_not_finish_is_marked_so(tmp_path):
    trace = load_trace(FIXTURE)
    writer = ReportWriter(str(tmp_path / "r.html"), trace.run)
    kernel = trace.kernels[0]
    writer.add_kernel(dataclasses.replace(kernel, status=KernelStatus.RUNNING, passes=kernel.passes[:10], codegen=()), trace.snapshot)
    writer.close()
    html = open(tmp_path / "r.html", encoding="utf-8").read()
    (summary,) = parse(html)[1]
    assert summary["status"] == "running" and summary["passes"] == 10
    assert '"name":"elementwise_add"' in html and '"status":"running"' in html  # what test_activation reads


def test_a_writer_that_got_no_kernel_writes_nothing(tmp_path):
    trace = load_trace(FIXTURE)
    writer = ReportWriter(str(tmp_path / "r.html"), trace.run, latest_link=str(tmp_path / "latest.html"))
    writer.add_note("a note")
    assert writer.close() == str(tmp_path / "r.html")
    assert os.listdir(tmp_path) == []


def test_json_for_script_cannot_end_the_script_or_open_a_comment():
    nasty = {"a": "</script><!-- \u2028\u2029 & <b>"}
    text = json_for_script(nasty)
    for forbidden in ("</script", "<!--", "<", ">", "\u2028", "\u2029"):
        assert forbidden not in text
    assert json.loads(text) == nasty


def test_title_and_placeholders_are_filled_once(tmp_path):
    from report_fixtures import EVIL_NAME, hostile_run

    path = hostile_run(str(tmp_path / "run"))
    html = open(path, encoding="utf-8").read()
    head = html.split("<body>")[0]
    assert "<title>lower-trace: k&lt;/script&gt;&lt;script&gt;" in head
    assert not re.search(r"\{\{(title|css|data|scripts)\}\}", html)
    # run data, the page's script (its modules bundled), one kernel's payload and summary, the end marker.
    assert html.count("<script") == 5 and html.count("</script>") == 5
    header, (kernel,), _, _, _ = parse(html)
    assert kernel["name"] == EVIL_NAME and header["run"]["script"] == EVIL_NAME


def test_write_report_of_a_run_killed_mid_kernel(tmp_path):
    """The trace of a process killed during its second compile: that kernel "did not finish"."""
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    lines = (run / "trace.jsonl").read_text().splitlines()
    second = [line.replace('"k1"', '"k2"') for line in lines[1:] if '"type": "kernel_end"' not in line][:30]
    (run / "trace.jsonl").write_text("\n".join([*lines, *second]) + "\n" + lines[5][: len(lines[5]) // 2])  # a torn last line
    path = write_report(str(run), str(tmp_path / "out.html"))
    assert path == str(tmp_path / "out.html") and not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    _, kernels, payloads, _, end = parse(open(path, encoding="utf-8").read())
    assert [(k["id"], k["status"]) for k in kernels] == [("k1", "ok"), ("k2", "running")]
    assert kernels[1]["refs"] == [0] and payloads[1]["snapshots"] == {}  # the same IR as k1: carried once
    assert end == {"kernels": 2}
