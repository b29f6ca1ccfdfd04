"""A run killed (SIGKILL) while a nested pass runs: the passes that were open at the kill are in
the loaded trace as incomplete, around the nested passes that finished, with their time so far.

The killed program is a real TileLang lowering in a subprocess whose tir.StorageRewrite is
replaced by two Sequentials built in Python: test.Outer = [the real StorageRewrite,
test.Inner = [the real tl.Simplify, a pass that hangs]] (testing/shared_runs.py; the `killed`
fixture, conftest.py). Ground truth is what the test built and a normal traced lowering of the
same kernel (which passes come before StorageRewrite). The report page of it:
browser/test_killed_run_page.py.
"""

import base64
import gzip
import json
import re
import subprocess

import pytest

from lower_trace.model import CRASHED_NESTED, KernelStatus, PassStatus

pytest.importorskip("tilelang")

from shared_runs import clean_env
from support import lower_trace_cli


def test_the_passes_open_at_the_kill_are_incomplete_around_their_nested_passes(killed):
    _, trace, ran, normal = killed
    (kernel,) = trace.kernels
    assert kernel.status is KernelStatus.RUNNING
    by_name = {p.name: p for p in kernel.passes}
    outer, inner, rewrite = (by_name[n] for n in ("test.Outer", "test.Inner", "tir.StorageRewrite"))
    (simplify,) = [p for p in kernel.passes if p.parent == inner.seq]
    assert simplify.name == "tl.Simplify"  # tilelang.transform.Simplify, as the script built it
    # Where the real pipeline ran StorageRewrite, and what ran before it.
    truth = next(p for p in normal.kernels[0].passes if p.name == "tir.StorageRewrite")
    before = [(p.seq, p.name, p.depth) for p in kernel.passes if p.seq < outer.seq]
    assert before == [(p.seq, p.name, p.depth) for p in normal.kernels[0].passes if p.seq < truth.seq]
    assert (outer.seq, outer.depth, outer.parent, outer.phase) == (truth.seq, 0, None, truth.phase)
    # The structure the script built, in the order it ran.
    assert [(p.seq, p.depth, p.parent) for p in (rewrite, inner, simplify)] == [
        (outer.seq + 1, 1, outer.seq), (outer.seq + 2, 1, outer.seq), (outer.seq + 3, 2, inner.seq)
    ]
    assert [p.seq for p in kernel.passes if p.seq > outer.seq] == [outer.seq + 1, outer.seq + 2, outer.seq + 3]
    assert rewrite.status in (PassStatus.CHANGED, PassStatus.UNCHANGED) and rewrite.status is truth.status
    assert simplify.status in (PassStatus.CHANGED, PassStatus.UNCHANGED)
    assert "test.Hang" not in by_name  # the pass that hung left no record (only replay writes one before each pass)
    # Open at the kill: the inner one is where the process died (in it or a pass nested in it).
    assert inner.status is PassStatus.INCOMPLETE and inner.error.type == "Crashed"
    assert inner.error.message == f"{CRASHED_NESTED}; the last nested pass recorded: {simplify.seq} tl.Simplify"
    assert not inner.crashed  # not known to be the pass that ran: nothing to reproduce
    assert outer.status is PassStatus.INCOMPLETE and outer.error.message == "did not finish: nested pass test.Inner crashed"
    # Time so far: at least its nested passes', no more than the process ran.
    assert inner.ms >= simplify.ms and outer.ms >= rewrite.ms + inner.ms - 0.002
    assert 0 < outer.ms < ran * 1000
    assert outer.before == truth.before  # it got what StorageRewrite gets in the real pipeline


def row_of(output, record):
    """A pass's line in `show` / `list --passes` output: its seq (right-aligned) first, then its name."""
    (line,) = re.findall(rf"^ *{record.seq} .* {re.escape(record.name)}  .*$", output, re.M)
    return line


def assert_nested(output, outer, inner, rewrite):
    """Each name indented two columns per depth: the nested passes under the pass they ran in."""
    column = {p.name: row_of(output, p).index(f" {p.name}") for p in (outer, inner, rewrite)}
    assert column[inner.name] == column[rewrite.name] == column[outer.name] + 2, output


def test_show_list_and_the_rebuilt_report_show_them(killed, tmp_path):
    path, trace, _, _ = killed
    passes = {p.name: p for p in trace.kernels[0].passes}
    outer, inner = passes["test.Outer"], passes["test.Inner"]
    rewrite = passes["tir.StorageRewrite"]
    show = subprocess.run([lower_trace_cli(), "show", path, "--color", "never"], capture_output=True, text=True, env=clean_env(), timeout=120)
    assert show.returncode == 0, show.stderr
    assert_nested(show.stdout, outer, inner, rewrite)
    for record in (outer, inner):
        assert re.search(rf"{record.name}  incomplete\s+{record.ms:.2f} ms so far$", row_of(show.stdout, record))
    assert "did not finish: nested pass test.Inner crashed" in show.stdout and CRASHED_NESTED in show.stdout
    listed = subprocess.run([lower_trace_cli(), "list", "--passes", path], capture_output=True, text=True, env=clean_env(), timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert_nested(listed.stdout, outer, inner, rewrite)
    for record in (outer, inner):
        assert row_of(listed.stdout, record).endswith(f"{record.name}  incomplete")
    out = tmp_path / "report.html"
    report = subprocess.run([lower_trace_cli(), "report", path, "-o", str(out)], capture_output=True, text=True, env=clean_env(), timeout=120)
    assert report.returncode == 0, report.stderr
    (payload,) = re.findall(r'<script type="application/octet-stream" class="lt-payload" id="lt-p\d+">(.*?)</script>', out.read_text(), re.S)
    steps = {s["seq"]: s for s in json.loads(gzip.decompress(base64.b64decode(payload)))["steps"]}
    for record in (outer, inner):
        step = steps[record.seq]
        assert (step["name"], step["status"], step.get("depth", 0), step.get("parent"), step["ms"]) == (
            record.name, "incomplete", record.depth, record.parent, record.ms
        )
