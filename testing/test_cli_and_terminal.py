"""The terminal view and the CLI, on a trace written by a real TileLang compile (fixtures/)."""

import io
import os
import shutil
import subprocess

import pytest

from conftest import lower_trace_cli
from lower_trace import load_trace
from lower_trace.cli import main
from lower_trace.model import ErrorInfo, KernelTrace, PassRecord, PassStatus
from lower_trace.render.terminal import TerminalRenderer

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "trace-format-1")


@pytest.fixture
def trace_copy(tmp_path):
    target = tmp_path / "trace" / "demo" / "run-1"
    shutil.copytree(FIXTURE, target)
    return target


def render(kernel, snapshots, color=False, **kwargs):
    out = io.StringIO()
    TerminalRenderer(out, color=color).render_kernel(kernel, snapshots, **kwargs)
    return out.getvalue()


def test_terminal_lists_every_pass_with_counts_and_diffs():
    trace = load_trace(FIXTURE)
    (kernel,) = trace.kernels
    text = render(kernel, trace.snapshot)
    lines = text.splitlines()
    assert lines[0].startswith("== lower-trace: kernel k1 elementwise_add  [cuda -arch=sm_90a]  82 passes")
    for record in kernel.passes:
        assert any(line.lstrip().startswith(f"{record.seq} ") and record.name in line for line in lines), record.name
    layout = next(line for line in lines if "tl.LayoutInference" in line)
    assert "changed" in layout and "+" in layout and " ms" in layout
    simplify_noop = next(line for line in lines if " 9 pipeline_cuda" in line)
    assert "no-op" in simplify_noop
    assert "@@ -" in text and "\x1b[" not in text
    assert "device codegen" in text and "__global__" in text


def test_palette_is_all_or_nothing():
    trace = load_trace(FIXTURE)
    coloured = render(trace.kernels[0], trace.snapshot, color=True)
    assert "\x1b[32m+" in coloured and "\x1b[31m" in coloured
    plain = render(trace.kernels[0], trace.snapshot, color=False)
    assert "\x1b" not in plain


def test_color_follows_no_color_and_force_color(monkeypatch):
    trace = load_trace(FIXTURE)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()  # not a tty
    TerminalRenderer(out).render_kernel(trace.kernels[0], trace.snapshot)
    assert "\x1b[" in out.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    TerminalRenderer(out).render_kernel(trace.kernels[0], trace.snapshot)
    assert "\x1b[" not in out.getvalue()


def test_hostile_text_cannot_drive_the_terminal():
    evil = "kern\x1b]0;pwned\x07\u202eel"
    kernel = KernelTrace(
        kernel_id="k1",
        name=evil,
        passes=(
            PassRecord(kernel="k1", seq=0, name=evil, status=PassStatus.CHANGED, before="a", after="b"),
            PassRecord(kernel="k1", seq=1, name="p", status=PassStatus.FAILED, before="b", error=ErrorInfo("E", evil, "tb " + evil)),
        ),
    )
    texts = {"a": "x = 1\n", "b": "x = 2 \x1b[2J\n"}
    text = render(kernel, texts.get)
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert "\\u001b]0;pwned\\u0007\\u202eel" in text


def test_cli_list_show_and_ir(trace_copy, capsys):
    root = str(trace_copy.parent.parent)
    assert main(["list", root, "--passes"]) == 0
    out = capsys.readouterr().out
    assert "k1   elementwise_add" in out and "82 passes" in out and "tl.LayoutInference  changed" in out
    assert main(["show", root, "--changed", "--no-source", "--color", "never"]) == 0
    out = capsys.readouterr().out
    assert "tl.LayoutInference" in out and "no-op" not in out and "#include" not in out
    assert main(["show", root, "-p", "tl.LayoutInference", "--color", "never"]) == 0
    out = capsys.readouterr().out
    assert out.count("tl.LayoutInference") == 1 and "tl.Simplify" not in out
    trace = load_trace(root)
    layout = next(p for p in trace.kernels[0].passes if p.name == "tl.LayoutInference")
    assert main(["show", root, "--ir", str(layout.seq)]) == 0
    assert capsys.readouterr().out.rstrip("\n") == trace.snapshot(layout.after).rstrip("\n")
    codegen = trace.kernels[0].codegen[0]
    assert main(["show", root, "-k", "elementwise_add", "--ir", str(codegen.seq)]) == 0
    assert capsys.readouterr().out.rstrip("\n") == trace.snapshot(codegen.source).rstrip("\n")


def test_cli_errors_are_one_line(trace_copy, capsys):
    assert main(["show", str(trace_copy), "-k", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no kernel 'nope'" in err and "k1 (elementwise_add)" in err
    assert main(["show", str(trace_copy), "-p", "NoSuchPass"]) == 2
    assert "no pass 'NoSuchPass'" in capsys.readouterr().err
    assert main(["show", str(trace_copy), "--ir", "tl.Simplify"]) == 2
    err = capsys.readouterr().err
    assert "passes are named 'tl.Simplify'; pick one by number: 9, " in err and err.count("\n") == 1


def test_show_ir_needs_one_kernel(tmp_path, capsys):
    import json

    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    lines = (run / "trace.jsonl").read_text().splitlines()
    again = [line.replace('"k1"', '"k2"') for line in lines[1:]]  # the same kernel compiled twice
    (run / "trace.jsonl").write_text("\n".join(lines + again) + "\n")
    assert main(["show", str(run), "--ir", "3"]) == 2
    assert "--ir needs one kernel; pick it with -k: k1 (elementwise_add), k2 (elementwise_add)" in capsys.readouterr().err
    assert main(["show", str(run), "-k", "elementwise_add", "--ir", "3"]) == 2
    assert "2 kernels are named 'elementwise_add'; pick one by id" in capsys.readouterr().err
    assert main(["show", str(run), "-k", "k2", "--ir", "3"]) == 0
    assert json.loads(lines[0])["type"] == "run"


def test_list_runs_and_pass_status_words(trace_copy, tmp_path, capsys):
    second = trace_copy.parent / "run-2"
    shutil.copytree(trace_copy, second)
    assert main(["list", str(trace_copy.parent.parent), "--runs"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all("1 kernels  0 failed" in line for line in out)
    assert main(["list", str(trace_copy), "--passes"]) == 0
    out = capsys.readouterr().out
    assert "NestedLoopChecker  no-op" in out and "tl.LayoutInference  changed" in out and "device codegen" in out


def test_report_output_folder_and_bad_output(trace_copy, tmp_path, capsys):
    assert main(["report", str(trace_copy), "-o", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == f"file://{tmp_path / 'report.html'}"
    assert main(["report", str(trace_copy), "-o", str(tmp_path / "missing" / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_report_is_rebuilt_from_the_trace_alone(trace_copy, tmp_path):
    out = tmp_path / "r.html"
    proc = subprocess.run([lower_trace_cli(), "report", str(trace_copy), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"file://{out}"
    html = out.read_text()
    assert html.startswith("<!doctype html>") and '"name":"elementwise_add"' in html
    assert "http://" not in html and "https://" not in html  # nothing to fetch: works offline
