"""The data the report page is fed, and how it is embedded."""

import base64
import gzip
import json
import os
import re
import shutil

from lower_trace import load_trace
from lower_trace.render.html import json_for_script, report_data, write_report

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "trace-format-1")


def embedded(html, element_id):
    match = re.search(rf'<script type="[^"]+" id="{element_id}">(.*?)</script>', html, re.S)
    assert match, element_id
    return match.group(1)


def test_data_lists_every_step_and_each_snapshot_once():
    trace = load_trace(FIXTURE)
    data = report_data(trace)
    (kernel,) = data["kernels"]
    source = trace.kernels[0]
    assert kernel["name"] == "elementwise_add" and kernel["target"] == "cuda -arch=sm_90a"
    assert (kernel["passes"], kernel["changed"], kernel["failed"]) == (82, source.changed_count, 0)
    assert [s["seq"] for s in kernel["steps"]] == [s.seq for s in source.steps]
    assert kernel["steps"][-1]["kind"] == "codegen" and kernel["steps"][0]["kind"] == "pass"
    used = {s.before for s in source.passes} | {s.after for s in source.passes}
    used |= {c.tir for c in source.codegen} | {c.source for c in source.codegen} | {c.generated for c in source.codegen}
    assert set(data["snapshots"]) == used - {""}
    assert all(data["snapshots"][d] == trace.snapshot(d) for d in data["snapshots"])


def test_the_page_embeds_inert_json_and_compressed_snapshots(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "run")
    path = write_report(str(tmp_path / "run"))
    html = open(path, encoding="utf-8").read()
    data = json.loads(embedded(html, "trace-data"))
    packed = embedded(html, "trace-snapshots")
    snapshots = json.loads(gzip.decompress(base64.b64decode(packed)))
    trace = load_trace(str(tmp_path / "run"))
    assert data == {k: v for k, v in report_data(trace).items() if k != "snapshots"}
    assert snapshots == report_data(trace)["snapshots"]
    # Compressed in the page: far smaller than the texts it carries.
    assert len(packed) * 4 < sum(len(t) for t in snapshots.values())
    assert "http://" not in html and "https://" not in html and "<link" not in html


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
    assert not re.search(r"\{\{(title|css|diff_js|text_js|js|data|snapshots)\}\}", html)
    assert html.count("<script") == 5 and html.count("</script>") == 5  # data, snapshots, three scripts
    data = json.loads(embedded(html, "trace-data"))
    assert data["kernels"][0]["name"] == EVIL_NAME
