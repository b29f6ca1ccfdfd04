"""The terminal view and the CLI, on a trace written by a real TileLang compile (fixtures/)."""

import base64
import gzip
import io
import json
import os
import re
import shutil
import subprocess

import pytest

from lower_trace import load_trace
from lower_trace.cli.main import main
from lower_trace.model import CodegenRecord, ErrorInfo, KernelStatus, KernelTrace, PassRecord, PassStatus
from lower_trace.render.terminal import TerminalRenderer
from support import FIXTURES, lower_trace_cli

FIXTURE = os.path.join(FIXTURES, "trace-format-1")


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


def test_cli_errors_are_one_line_and_name_the_run_searched(trace_copy, capsys):
    root = str(trace_copy.parent.parent)  # the trace root: the run searched is its latest
    assert main(["show", root, "-k", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no kernel 'nope'" in err and "k1 (elementwise_add)" in err
    assert err.startswith(f"lower-trace: error: {trace_copy}: ")
    assert main(["show", root, "-p", "NoSuchPass"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{trace_copy}: no pass 'NoSuchPass' in kernel k1 (elementwise_add)" in err
    assert f"`lower-trace list --passes {trace_copy}`" in err
    assert main(["show", root, "-p", "Lower[", "--color", "never"]) == 2  # neither a name nor a regex
    assert "'Lower[' is not a valid regex either" in capsys.readouterr().err
    assert main(["show", root, "--ir", "tl.Simplify"]) == 2
    err = capsys.readouterr().err
    assert f"{trace_copy}: 6 passes of kernel k1 are named 'tl.Simplify'; pick one by number: 9, 19, " in err and err.count("\n") == 1
    assert main(["show", root, "--ir", "Simplify"]) == 2  # tl.Simplify and tirx.Simplify: which?
    err = capsys.readouterr().err
    assert "passes of kernel k1 match 'Simplify'; pick one by number: 9 (tl.Simplify), " in err and "(tirx.Simplify)" in err


def test_a_pass_is_found_without_its_prefix_or_by_regex(trace_copy, capsys):
    trace = load_trace(str(trace_copy))
    names = [p.name for p in trace.kernels[0].passes]

    def shown(*args):
        assert main(["show", str(trace_copy), "--no-diff", "--no-source", "--color", "never", *args]) == 0
        rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
        return [row[3] if row[1:3] in (["device", "codegen"], ["host", "codegen"]) else row[2] for row in rows]

    assert shown("-p", "tl.LayoutInference") == shown("-p", "LayoutInference") == ["tl.LayoutInference"]
    simplify = shown("-p", "Simplify")  # every run of tl.Simplify and of tirx.Simplify, not tl.SimplifyX
    assert simplify == [n for n in names if n in ("tl.Simplify", "tirx.Simplify")] and len(set(simplify)) == 2
    layout_or_lower = shown("-p", "layout|^tl\\.Lower")  # a regex, case-insensitive, searched in the names
    assert layout_or_lower == [n for n in names if "Layout" in n or n.startswith("tl.Lower")] and len(layout_or_lower) >= 3
    assert shown("-p", "tilelang_cuda") == ["target.build.tilelang_cuda_without_compile"]  # codegen too
    layout = next(p for p in trace.kernels[0].passes if p.name == "tl.LayoutInference")
    assert main(["show", str(trace_copy), "--ir", "LayoutInference"]) == 0
    assert capsys.readouterr().out.rstrip("\n") == trace.snapshot(layout.after).rstrip("\n")


def test_show_ir_needs_one_kernel(tmp_path, capsys):
    import json

    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    lines = (run / "trace.jsonl").read_text().splitlines()
    again = [line.replace('"k1"', '"k2"') for line in lines[1:]]  # the same kernel compiled twice
    (run / "trace.jsonl").write_text("\n".join(lines + again) + "\n")
    assert main(["show", str(run), "--ir", "3"]) == 2
    assert "--ir needs one kernel; pick it by id with -k: k1 (elementwise_add), k2 (elementwise_add)" in capsys.readouterr().err
    assert main(["show", str(run), "-k", "elementwise_add", "--ir", "3"]) == 2
    assert "--ir needs one kernel; pick it by id with -k: k1 (elementwise_add), k2 (elementwise_add)" in capsys.readouterr().err
    assert main(["show", str(run), "-k", "k2", "--ir", "3"]) == 0
    assert json.loads(lines[0])["type"] == "run"


def test_a_name_shared_by_a_sweeps_variants_selects_them_all_and_lists_stay_short(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    lines = (run / "trace.jsonl").read_text().splitlines()
    copies = [line.replace('"k1"', f'"k{i}"') for i in range(2, 31) for line in lines[1:]]  # 30 variants of one name
    (run / "trace.jsonl").write_text("\n".join(lines + copies) + "\n")
    assert main(["show", str(run), "-k", "elementwise_add", "--no-diff"]) == 0
    headers = [line for line in capsys.readouterr().out.splitlines() if line.startswith("== lower-trace: kernel")]
    assert [h.split()[3] for h in headers] == [f"k{i}" for i in range(1, 31)]
    assert main(["show", str(run), "-k", "nosuch"]) == 2
    error = capsys.readouterr().err
    assert len(error.splitlines()) == 1 and len(error) < 400
    assert "k1 (elementwise_add)" in error and "and 22 more (`lower-trace list` shows them)" in error


def test_no_diff_is_the_pass_table_only(trace_copy, capsys):
    assert main(["show", str(trace_copy), "--no-diff"]) == 0
    out = capsys.readouterr().out.splitlines()
    trace = load_trace(str(trace_copy))
    kernel = trace.kernels[0]
    assert len(out) == 1 + len(kernel.steps)  # the header and one line per step: no diff, no source


def test_list_runs_and_pass_status_words(trace_copy, tmp_path, capsys):
    second = trace_copy.parent / "run-2"
    shutil.copytree(trace_copy, second)
    assert main(["list", str(trace_copy.parent.parent), "--runs"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all(" 1 kernel   0 failed  " in line for line in out)
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


def test_report_is_rebuilt_from_the_trace_alone(trace_copy, tmp_path, capsys):
    """`lower-trace report` on a stored folder alone: the page carries each pass record of the
    manifest and every text it names, as the folder stores them (read here from the JSON lines and
    the page's own payload: base64 of gzip of JSON), and nothing to fetch."""
    out = tmp_path / "r.html"
    assert main(["report", str(trace_copy), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"file://{out}"
    html = out.read_text()
    assert html.startswith("<!doctype html>")
    manifest = [json.loads(line) for line in (trace_copy / "trace.jsonl").read_text().splitlines()]
    stored = {r["digest"]: r["text"] for r in map(json.loads, (trace_copy / "snapshots.jsonl").read_text().splitlines())}
    (kernel,) = [r for r in manifest if r["type"] == "kernel"]
    (summary,) = [json.loads(m) for m in re.findall(r'<script type="application/json" class="lt-kernel">(.*?)</script>', html, re.S)]
    payload = {}
    for block in re.findall(r'<script type="application/octet-stream" class="lt-payload" id="lt-p\d+">(.*?)</script>', html, re.S):
        payload.update(json.loads(gzip.decompress(base64.b64decode(block))))
    passes = sorted((r for r in manifest if r["type"] == "pass"), key=lambda r: r["seq"])  # stored as each pass ended
    assert (summary["id"], summary["name"], summary["passes"]) == (kernel["kernel_id"], kernel["name"], len(passes))
    assert summary["changed"] == sum(1 for r in passes if r["status"] == "changed")
    shown = [s for s in payload["steps"] if s.get("kind") == "pass"]
    assert [(s["seq"], s["name"], s["status"]) for s in shown] == [(r["seq"], r["name"], r["status"]) for r in passes]
    named = {r[key] for r in manifest if r["type"] in ("pass", "codegen") for key in ("before", "after", "tir", "source") if r.get(key)}
    assert named and all(payload["snapshots"].get(digest) == stored[digest] for digest in named)
    # Nothing to fetch: works offline (the SVG namespace is a name, not an address).
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html


# --- compile errors read as the compiler wrote them ---------------------------------------

def test_multi_line_errors_keep_their_layout_and_stay_inert():
    message = "Compilation failed:\nk.cu(3): error: bad\r\n\tint x = oops;\n\n1 error \x1b[2J\u202edetected\rhidden"
    error = ErrorInfo("RuntimeError", message)
    kernel = KernelTrace(
        kernel_id="k1",
        name="k",
        status=KernelStatus.FAILED,
        codegen=(CodegenRecord(kernel="k1", seq=0, role="device", function="target.build.x", target="c", language="c", tir="", error=error),),
        error=ErrorInfo("OSError", "gcc said:\nline two"),
    )
    text = render(kernel, {}.get)
    lines = text.splitlines()
    assert "       RuntimeError: Compilation failed:" in lines
    assert "       k.cu(3): error: bad" in lines  # its own line, with the compiler's layout
    assert "       \tint x = oops;" in lines  # tabs are layout
    assert "       1 error \\u001b[2J\\u202edetected\\u000dhidden" in lines  # escapes, a lone \r, bidi: shown, not obeyed
    assert "\\u000a" not in text and "\x1b" not in text and "\u202e" not in text and "\r" not in text
    assert "   compile failed: OSError: gcc said:" in lines and "       line two" in lines
    assert "compile failed" in lines[0] and "0 failed" not in lines[0]


def test_a_failed_subprocess_keeps_the_compilers_output():
    """gcc run with check=True raises CalledProcessError, whose str() leaves out what gcc said."""
    from lower_trace.capture.session import error_info

    gcc = shutil.which("gcc") or pytest.skip("gcc is not installed")
    try:
        env = {**os.environ, "LC_ALL": "C"}  # gcc's plain quotes
        subprocess.run([gcc, "-x", "c", "-c", "-o", os.devnull, "-"], input=b"int x = oops;\n", capture_output=True, check=True, env=env)
    except subprocess.CalledProcessError as exc:
        info = error_info(exc)
    assert info.type == "CalledProcessError" and "returned non-zero exit status" in info.message
    assert "\n<stdin>:1:9: error: 'oops' undeclared" in info.message
    kernel = KernelTrace(kernel_id="k1", name="k", status=KernelStatus.FAILED, error=info)
    assert "       <stdin>:1:9: error: 'oops' undeclared here (not in a function)" in render(kernel, {}.get).splitlines()


# --- lower-trace run: the user's mistakes, the user's exceptions ------------------------------

def _cli(args, cwd, **kwargs):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "PYTEST_"))}
    return subprocess.run([lower_trace_cli(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, **kwargs)


def test_run_mistakes_are_one_line_and_exit_2(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    for args, expected in (
        (["run", "-m", "nosuchmod"], "-m nosuchmod: no module named 'nosuchmod'"),
        (["run", "-m", "pkg"], "-m pkg: 'pkg' is a package without a __main__ module"),
        (["run", "-m", "pkg.nosuch"], "-m pkg.nosuch: no module named 'pkg.nosuch'"),
        (["run", "missing.py"], "missing.py: no such script"),
        (["run", "folder"], "folder is a folder without a __main__.py; name a Python script"),
        (["run"], "name a script to run"),
    ):
        proc = _cli(args, tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith(f"lower-trace: error: {expected}"), proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert not (tmp_path / "tmp").exists()  # nothing ran, nothing traced


RAISES = """
import sys
print("FILE", __file__, "ARGV", sys.argv, "PATH0", sys.path[0], "NAME", __name__)
def f():
    raise ValueError("boom")
f()
"""


def test_run_reports_the_scripts_exception_as_python_does(tmp_path):
    """Traceback, exit status, __file__, argv and sys.path[0]: the same as `python script.py` (and -m)."""
    import sys

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "raises.py").write_text(RAISES)
    (tmp_path / "bad.py").write_text("def (\n")
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "PYTEST_"))}

    def ours(stderr):
        return "".join(line for line in stderr.splitlines(True) if not line.startswith("lower-trace: "))

    for args in (["./sub/raises.py", "x"], ["-m", "sub.raises", "x"], ["bad.py"], ["exits.py"]):
        python = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True)
        traced = _cli(["run", *args], tmp_path)
        assert traced.returncode == python.returncode and python.returncode in (1, 3), (args, traced.stderr)
        assert traced.stdout == python.stdout, args
        expected = python.stderr
        if args[0] == "-m":  # python -m shows runpy's frames; lower-trace shows only the user's
            expected = "".join(line for line in expected.splitlines(True) if "<frozen runpy>" not in line)
        assert ours(traced.stderr) == expected, (args, traced.stderr)
        if args[0] == "./sub/raises.py":  # what python 3.11 does, and so lower-trace: __file__ absolute, argv as given
            real = os.path.realpath(tmp_path)  # the child's getcwd()
            assert traced.stdout == f"FILE {real}/./sub/raises.py ARGV ['./sub/raises.py', 'x'] PATH0 {real}/sub NAME __main__\n"


# --- list: the words for what became of each compile --------------------------------------


def _write_states(run_dir):
    from lower_trace.model import RunInfo
    from lower_trace.model_json import to_json
    from lower_trace.store.writer import TraceWriter

    writer = TraceWriter(str(run_dir), RunInfo(run_id="r", started=0.0, script="s"))
    for kernel_id, name in (("k1", "fine"), ("k2", "gcc_fails"), ("k3", "pass_fails"), ("k4", "killed"), ("k5", "evil\x1b[2J\u202e")):
        writer.append("kernel", {"kernel_id": kernel_id, "name": name, "target": "c"})
        status = PassStatus.FAILED if kernel_id == "k3" else PassStatus.CHANGED
        record = PassRecord(kernel=kernel_id, seq=0, name="tl.Simplify", status=status, before="a", after="" if kernel_id == "k3" else "b")
        writer.append("pass", to_json(record))
    error = {"type": "RuntimeError", "message": "Compilation Failed!\nk.c:3: error: x"}
    writer.append("kernel_end", {"kernel_id": "k1", "status": "ok", "ms": 5.0})
    writer.append("kernel_end", {"kernel_id": "k2", "status": "failed", "ms": 6.0, "error": error})
    writer.append("kernel_end", {"kernel_id": "k3", "status": "failed", "ms": 7.0, "error": error})
    writer.append("kernel_end", {"kernel_id": "k5", "status": "ok", "ms": 1.0})
    writer.close()


def test_list_says_what_became_of_each_compile(tmp_path, capsys):
    run_dir = tmp_path / "s" / "run-1"
    _write_states(run_dir)
    assert main(["list", str(run_dir)]) == 0
    rows = {line.split()[1]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert " ok " in rows["fine"] and "  0 failed" in rows["fine"] and rows["fine"].endswith("5.0 ms")
    assert " compile failed " in rows["gcc_fails"] and "failed  " not in rows["gcc_fails"].split("compile failed")[1]
    assert " failed " in rows["pass_fails"] and "  1 failed" in rows["pass_fails"]
    assert " did not finish " in rows["killed"] and "running" not in rows["killed"] and " ms" not in rows["killed"]
    assert " 1 pass " in rows["fine"] and "passes" not in rows["fine"]
    assert "evil\\u001b[2J\\u202e" in rows["evil\\u001b[2J\\u202e"]  # a hostile name cannot drive the terminal
    assert main(["list", str(tmp_path), "--runs"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert "  5 kernels  2 failed  " in line and line.endswith("(1 did not finish)")
    assert main(["show", str(run_dir), "-k", "killed", "--color", "never"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header.endswith("[c]  1 pass, 1 changed, did not finish")


def test_a_source_map_that_cannot_be_worked_out_is_said_and_the_failing_ir_still_shows(monkeypatch):
    from lower_trace.render import terminal

    def broken(*args, **kwargs):
        raise KeyError("lost snapshot")

    monkeypatch.setattr(terminal, "kernel_origins", broken)
    kernel = KernelTrace(
        kernel_id="k1",
        name="k",
        passes=(PassRecord(kernel="k1", seq=0, name="p", status=PassStatus.FAILED, before="b", error=ErrorInfo("E", "boom", "tb")),),
    )
    text = render(kernel, {"b": "x = 2\n"}.get)
    assert "the source map of this IR could not be worked out: KeyError: 'lost snapshot'" in text
    assert "x = 2" in text  # the IR the pass received, without origins
