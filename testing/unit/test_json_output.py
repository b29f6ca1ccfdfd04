"""--json on list, show and blame, on a trace written by a real TileLang compile (fixtures/),
checked against the trace as load_trace reads it and against diffs computed here."""

import difflib
import json
import os
import shutil

import pytest

from lower_trace import load_trace
from lower_trace.cli.main import main
from lower_trace.model import CodegenRecord, PassStatus
from support import FIXTURES

FIXTURE = os.path.join(FIXTURES, "trace-format-1")


@pytest.fixture
def trace(tmp_path):
    path = str(tmp_path / "run")
    shutil.copytree(FIXTURE, path)
    return load_trace(path)


def run_json(capsys, *args):
    assert main(list(args)) in (0, 1)
    return json.loads(capsys.readouterr().out)


def counts(before, after):
    ops = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    return sum(1 for op in ops if op.startswith("+ ")), sum(1 for op in ops if op.startswith("- "))


def test_list_json_matches_the_trace(trace, capsys):
    data = run_json(capsys, "list", trace.path, "--json")
    assert data["schema"] == 1 and data["run"]["run_id"] == trace.run.run_id and data["run"]["path"] == trace.path
    assert [k["id"] for k in data["kernels"]] == [k.kernel_id for k in trace.kernels]
    for item, kernel in zip(data["kernels"], trace.kernels, strict=False):
        assert (item["name"], item["passes"], item["changed"], item["failed"], item["status"]) == (
            kernel.name, len(kernel.passes), sum(p.status is PassStatus.CHANGED for p in kernel.passes),
            sum(p.status is PassStatus.FAILED for p in kernel.passes), kernel.status.value,
        )
        assert "steps" not in item
    with_steps = run_json(capsys, "list", trace.path, "--passes", "--json")
    for item, kernel in zip(with_steps["kernels"], trace.kernels, strict=False):
        assert [(s["kind"], s["seq"]) for s in item["steps"]] == [("codegen" if isinstance(s, CodegenRecord) else "pass", s.seq) for s in kernel.steps]
    runs = run_json(capsys, "list", os.path.dirname(trace.path), "--runs", "--json")
    assert [r["run_id"] for r in runs["runs"]] == [trace.run.run_id] and runs["runs"][0]["kernels"] == len(trace.kernels)


def test_show_json_has_counts_and_with_a_pass_its_texts(trace, capsys):
    kernel = next(k for k in trace.kernels if any(p.status is PassStatus.CHANGED for p in k.passes))
    data = run_json(capsys, "show", trace.path, "-k", kernel.kernel_id, "--json")
    (item,) = data["kernels"]
    changed = [s for s in item["steps"] if s.get("status") == "changed"]
    assert changed
    for step in changed:
        record = next(p for p in kernel.passes if p.seq == step["seq"])
        assert (step["added"], step["removed"]) == counts(trace.snapshot(record.before), trace.snapshot(record.after))
        assert "before_text" not in step
    record = next(p for p in kernel.passes if p.status is PassStatus.CHANGED)
    picked = run_json(capsys, "show", trace.path, "-k", kernel.kernel_id, "-p", str(record.seq), "--json")
    (step,) = picked["kernels"][0]["steps"]
    assert step["before_text"] == trace.snapshot(record.before) and step["after_text"] == trace.snapshot(record.after)
    only_changed = run_json(capsys, "show", trace.path, "-k", kernel.kernel_id, "--changed", "--json")
    assert all(s.get("status") != "unchanged" for s in only_changed["kernels"][0]["steps"])
    ir = run_json(capsys, "show", trace.path, "-k", kernel.kernel_id, "--ir", str(record.seq), "--json")
    assert ir["text"] == trace.snapshot(record.after) and ir["step"]["seq"] == record.seq


def test_blame_json(trace, capsys):
    kernel = next(k for k in trace.kernels if any(p.status is PassStatus.CHANGED for p in k.passes))
    lines = run_json(capsys, "blame", trace.path, "-k", kernel.kernel_id, "--json")
    final = next(p for p in reversed(kernel.passes) if p.after)
    assert lines["kernel"] == kernel.kernel_id and [line["text"] for line in lines["lines"]]
    by_seq = {p.seq: p for p in kernel.passes}
    for line in lines["lines"]:
        if line["pass"] is not None:  # each line's pass exists and made a text holding it
            assert line["text"] in trace.snapshot(by_seq[line["pass"]["seq"]].after).splitlines()
    assert final  # a kernel with passes
    word = "T.launch_thread"
    found = run_json(capsys, "blame", trace.path, "-k", kernel.kernel_id, word, "--json")
    assert found["pattern"] == word and found["matches_at_end"] == sum(word in line["text"] for line in lines["lines"])
