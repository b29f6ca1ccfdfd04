"""The report's source map is derived data: no compile works it out, the run's close does, once per
kernel, from the trace on disk, and appends it as a block of its own per kernel -- the same block
`lower-trace report` writes. A time budget at close leaves the rest to `lower-trace report`, and
the report says so."""

import base64
import gzip
import json
import re

import pytest

tilelang = pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")

import lower_trace  # noqa: E402
import marked_kernels  # noqa: E402
from lower_trace.render.live import ReportListener  # noqa: E402
from lower_trace.render.report import writer as report_writer  # noqa: E402
from lower_trace.render.report.from_trace import write_report  # noqa: E402

ORIGINS = re.compile(r'<script type="application/octet-stream" class="lt-origins" id="lt-o(\d+)">(.*?)</script>', re.S)


def source_maps(html):
    """{kernel block: its source map} as the page reads them."""
    return {int(block): json.loads(gzip.decompress(base64.b64decode(text))) for block, text in ORIGINS.findall(html)}


def test_the_compiles_work_out_no_source_map_the_runs_close_does(tmp_path, monkeypatch):
    from tvm.target import Target

    made = []
    real = report_writer.origins_payload
    monkeypatch.setattr(report_writer, "origins_payload", lambda *args: made.append(args[0].kernel_id) or real(*args))
    run = lower_trace.enable(mode="html", trace_dir=str(tmp_path))
    with Target({"kind": "cuda", "arch": "sm_90a"}) as target:
        tilelang.lower(marked_kernels.gemm_ws(), target=target)
        tilelang.lower(marked_kernels.gemm_ws(block_N=64), target=target)
    run.worker.wait()
    run.worker.wait()  # the kernels' records, then the report blocks they queued
    html = open(run.report_path, encoding="utf-8").read()
    assert html.count('class="lt-kernel"') == 2 and "lt-origins" not in html and made == []
    lower_trace.disable()
    assert made == ["k1", "k2"]  # once each, at close
    html = open(run.report_path, encoding="utf-8").read()
    maps = source_maps(html)
    assert sorted(maps) == [0, 1]
    # Appended after every kernel's block, before the end marker.
    assert html.index('class="lt-origins"') > html.rindex('class="lt-kernel"') and html.rindex('class="lt-origins"') < html.index('id="lt-end"')
    payload_file = maps[0]["files"]
    assert any(file.endswith("marked_kernels.py") for file in payload_file)
    # The same maps `lower-trace report` writes when it rebuilds the file.
    rebuilt = source_maps(open(write_report(run.run_dir, str(tmp_path / "rebuilt.html")), encoding="utf-8").read())
    assert rebuilt == maps


def test_a_budget_spent_leaves_the_rest_to_lower_trace_report_and_says_so(tmp_path):
    from tvm.target import Target

    with lower_trace.trace(mode="html", trace_dir=str(tmp_path)) as run, Target({"kind": "cuda", "arch": "sm_90a"}) as target:
        tilelang.lower(marked_kernels.gemm_ws(), target=target)
    trace = lower_trace.load_trace(run.run_dir)
    out = str(tmp_path / "budget.html")
    listener = ReportListener(out, trace.run, run_dir=trace.path, budget_s=0.0)
    for kernel in trace.kernels:
        listener.kernel_finished(kernel, trace.snapshot)
    assert listener.close() == out and listener.left_out == 1
    html = open(out, encoding="utf-8").read()
    assert source_maps(html) == {} and 'id="lt-end"' in html
    notes = [json.loads(n) for n in re.findall(r'<script type="application/json" class="lt-note">(.*?)</script>', html, re.S)]
    assert f"`lower-trace report {trace.path}` adds it" in notes[-1] and "1 kernel" in notes[-1]
    # The run's own close had the time: its report has it.
    assert sorted(source_maps(open(run.report_path, encoding="utf-8").read())) == [0]
