import json
import os

import pytest

from lower_trace.model import (
    CodegenRecord,
    ErrorInfo,
    KernelStatus,
    PassRecord,
    PassStatus,
    RunInfo,
)
from lower_trace.model_json import to_json
from lower_trace.store.layout import FORMAT_VERSION, TraceNotFound, digest_of, find_run_dir
from lower_trace.store.reader import TraceDamaged, load_trace
from lower_trace.store.writer import TraceWriter
from support import FIXTURES

IR_A = "# from tvm.script import tir as T\n@T.prim_func\ndef main():\n    pass\n"
IR_B = IR_A.replace("pass", "T.evaluate(0)")


def write_run(run_dir, finish=True):
    run = RunInfo(run_id=os.path.basename(run_dir), started=1.0, script="demo", argv=("demo.py",), pid=7, versions={"tilelang": "0.1.15"})
    writer = TraceWriter(str(run_dir), run)
    a, b = digest_of(IR_A), digest_of(IR_B)
    writer.add_snapshot(a, IR_A)
    writer.add_snapshot(b, IR_B)
    writer.add_snapshot(a, IR_A)  # stored once
    writer.append("kernel", {"kernel_id": "k1", "name": "main", "target": "cuda -arch=sm_90a", "entry": "lower"})
    passes = [
        PassRecord(kernel="k1", seq=0, name="tl.Simplify", status=PassStatus.UNCHANGED, phase="pipeline_cuda", before=a, after=a, ms=0.5),
        PassRecord(kernel="k1", seq=1, name="tl.LowerTileOp", status=PassStatus.CHANGED, phase="pipeline_cuda", before=a, after=b),
        PassRecord(kernel="k1", seq=2, name="tirx.ConvertSSA", status=PassStatus.UNCHANGED, depth=1, parent=1, before=b, after=b),
    ]
    for record in passes:
        writer.append("pass", to_json(record))
    codegen = CodegenRecord(kernel="k1", seq=3, role="device", function="target.build.tilelang_cuda", target="cuda", language="cuda", tir=b, source=a)
    if finish:
        writer.append("codegen", to_json(codegen))
        writer.append("kernel_end", {"kernel_id": "k1", "status": "ok", "ms": 12.5})
    writer.close()
    return passes, codegen


def test_round_trip_gives_back_the_same_records(tmp_path):
    run_dir = tmp_path / "demo" / "run-1"
    passes, codegen = write_run(run_dir)
    trace = load_trace(str(run_dir))
    assert trace.format == FORMAT_VERSION
    assert trace.run.script == "demo" and trace.run.versions == {"tilelang": "0.1.15"} and trace.run.argv == ("demo.py",)
    (kernel,) = trace.kernels
    assert kernel.name == "main" and kernel.target == "cuda -arch=sm_90a" and kernel.status is KernelStatus.OK
    assert kernel.passes == tuple(passes)
    assert kernel.codegen == (codegen,)
    assert [step.seq for step in kernel.steps] == [0, 1, 2, 3]
    assert trace.snapshot(passes[1].after) == IR_B
    stored = [json.loads(line)["digest"] for line in open(run_dir / "snapshots.jsonl")]
    assert stored == [digest_of(IR_A), digest_of(IR_B)]  # each text once, though added three times


def test_error_info_survives_the_round_trip(tmp_path):
    run = RunInfo(run_id="r", started=0.0, script="s")
    writer = TraceWriter(str(tmp_path), run)
    error = ErrorInfo("ValueError", "bad loop </script>", "Traceback...\n")
    writer.append("pass", to_json(PassRecord(kernel="k1", seq=0, name="p", status=PassStatus.FAILED, before="x", error=error)))
    writer.append("kernel_end", {"kernel_id": "k1", "status": "failed", "error": to_json(error)})
    writer.close()
    kernel = load_trace(str(tmp_path)).kernels[0]
    assert kernel.passes[0].error == error and kernel.error == error
    assert kernel.status is KernelStatus.FAILED and kernel.failed_count == 1


def test_a_run_killed_half_way_still_loads(tmp_path):
    run_dir = tmp_path / "run-killed"
    passes, _ = write_run(run_dir, finish=False)
    with open(run_dir / "trace.jsonl", "a") as handle:
        handle.write('{"type": "pass", "kernel": "k1", "seq": 3, "na')  # torn mid-write
    trace = load_trace(str(run_dir))
    (kernel,) = trace.kernels
    assert kernel.status is KernelStatus.RUNNING
    assert kernel.passes == tuple(passes)
    assert trace.snapshot(passes[-1].before) == IR_B


@pytest.mark.parametrize("kind", ["pass_open", "pass_start"])
def test_passes_open_when_the_run_was_killed_load_as_incomplete_with_their_time_so_far(tmp_path, kind):
    """pass_open (written when a pass's first nested pass starts) or pass_start (replay) without
    its pass record: the pass is incomplete, its nested passes under it, its time what its record
    says plus its recorded nested passes' (a pass_start says 0)."""
    writer = TraceWriter(str(tmp_path), RunInfo(run_id="r", started=0.0, script="s"))
    lead = {"pass_open": 2.0, "pass_start": 0.0}[kind]
    records = [
        ("pass", PassRecord(kernel="k1", seq=0, name="tl.Simplify", status=PassStatus.UNCHANGED, ms=9.0)),
        (kind, PassRecord(kernel="k1", seq=1, name="outer", status=PassStatus.INCOMPLETE, ms=lead)),
        ("pass", PassRecord(kernel="k1", seq=2, name="a", status=PassStatus.CHANGED, depth=1, parent=1, ms=1.5)),
        (kind, PassRecord(kernel="k1", seq=3, name="inner", status=PassStatus.INCOMPLETE, depth=1, parent=1, ms=lead)),
        ("pass", PassRecord(kernel="k1", seq=4, name="b", status=PassStatus.UNCHANGED, depth=2, parent=3, ms=0.25)),
        # A pass that was open and then finished: its pass record stands.
        (kind, PassRecord(kernel="k1", seq=5, name="done", status=PassStatus.INCOMPLETE, depth=2, parent=3, ms=lead)),
        ("pass", PassRecord(kernel="k1", seq=5, name="done", status=PassStatus.CHANGED, depth=2, parent=3, ms=0.5)),
    ]
    for record_type, record in records:
        writer.append(record_type, to_json(record))
    writer.close()
    passes = {p.seq: p for p in load_trace(str(tmp_path)).kernels[0].passes}
    assert sorted(passes) == [0, 1, 2, 3, 4, 5] and passes[5].status is PassStatus.CHANGED
    outer, inner = passes[1], passes[3]
    assert (outer.status, outer.depth, outer.parent, inner.status, inner.depth, inner.parent) == (PassStatus.INCOMPLETE, 0, None, PassStatus.INCOMPLETE, 1, 1)
    assert inner.ms == lead + 0.25 + 0.5 and outer.ms == lead + 1.5 + inner.ms
    assert outer.error == ErrorInfo("Crashed", "did not finish: nested pass inner crashed")
    if kind == "pass_start":  # replay: a pass_start is written before each pass, so the deepest one is the pass that ran
        assert inner.crashed
    else:  # only passes with nested passes get a pass_open: the one that ran may be nested in it
        assert not inner.crashed and inner.error.message.endswith("; the last nested pass recorded: 5 done")


def test_any_text_survives_the_round_trip(tmp_path):
    writer = TraceWriter(str(tmp_path), RunInfo(run_id="r", started=0.0, script="s"))
    nasty = "</script><!-- \u2028\u2029 \ud800 \x00 \u202e é 中"
    writer.add_snapshot("abc", nasty)
    writer.append("kernel", {"kernel_id": "k1", "name": nasty})
    writer.close()
    trace = load_trace(str(tmp_path))
    assert trace.snapshot("abc") == nasty and trace.kernels[0].name == nasty
    assert trace.snapshot("../../etc/passwd") == ""


def test_a_torn_snapshot_line_is_skipped(tmp_path):
    writer = TraceWriter(str(tmp_path), RunInfo(run_id="r", started=0.0, script="s"))
    writer.add_snapshot("abc", "whole")
    writer.close()
    with open(tmp_path / "snapshots.jsonl", "a") as handle:
        handle.write('{"digest": "def", "text": "half')
    trace = load_trace(str(tmp_path))
    assert trace.snapshot("abc") == "whole" and trace.snapshot("def") == ""


def test_a_damaged_compressed_snapshot_hides_only_what_its_stream_still_needs(tmp_path):
    """Format 2 packs texts through one deflate stream per writer: a piece that does not decode
    (or decodes to another text) loses the texts after it in that stream, and says so; the next
    stream (a writer that reopened the pack) and old-format lines read on."""
    texts = [IR_A, IR_B, IR_B + "# three\n", IR_A + "# four \ud800 \u2028\n"]
    writer = TraceWriter(str(tmp_path), RunInfo(run_id="r", started=0.0, script="s"))
    for text in texts[:3]:
        writer.add_snapshot(digest_of(text), text)
    writer.close()
    writer.add_snapshot(digest_of(texts[3]), texts[3])  # reopened: a stream of its own
    writer.close()
    lines = (tmp_path / "snapshots.jsonl").read_text().splitlines(keepends=True)
    assert [("start" in json.loads(line), "text" in json.loads(line)) for line in lines] == [(True, False), (False, False), (False, False), (True, False)]
    assert all(load_trace(str(tmp_path)).snapshot(digest_of(text)) == text for text in texts)
    second = json.loads(lines[1])
    second["crc"] += 1  # the piece decodes, to other bytes than were written
    lines[1] = json.dumps(second) + "\n"
    lines.insert(3, json.dumps({"digest": "old", "text": "a format-1 line"}) + "\n")
    (tmp_path / "snapshots.jsonl").write_text("".join(lines))
    trace = load_trace(str(tmp_path))
    with pytest.warns(TraceDamaged, match=r"snapshots.jsonl: 2 damaged lines skipped \(line 2, 3\)"):
        assert trace.snapshot(digest_of(texts[0])) == texts[0]
    assert [trace.snapshot(digest_of(text)) for text in texts[1:]] == ["", "", texts[3]]
    assert trace.snapshot("old") == "a format-1 line"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_writing_into_the_same_pack_keeps_both_streams(tmp_path):
    texts = [IR_A, IR_B, IR_A + "# parent, after the fork\n", IR_B + "# child\n"]
    writer = TraceWriter(str(tmp_path), RunInfo(run_id="r", started=0.0, script="s"))
    writer.add_snapshot(digest_of(texts[0]), texts[0])  # buffered, not flushed: the fork must not copy it
    pid = os.fork()
    if pid == 0:  # the child: its own stream, in the same file
        try:
            writer.add_snapshot(digest_of(texts[3]), texts[3])
            writer.flush()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    writer.add_snapshot(digest_of(texts[1]), texts[1])
    writer.add_snapshot(digest_of(texts[2]), texts[2])
    writer.close()
    lines = (tmp_path / "snapshots.jsonl").read_text().splitlines()
    assert len(lines) == 4 and len({json.loads(line)["stream"] for line in lines}) == 2
    trace = load_trace(str(tmp_path))
    assert [trace.snapshot(digest_of(text)) for text in texts] == texts


def test_nothing_is_created_before_the_first_record(tmp_path):
    TraceWriter(str(tmp_path / "never"), RunInfo(run_id="r", started=0.0, script="s")).close()
    assert not (tmp_path / "never").exists()


def test_find_run_dir_resolves_latest_run(tmp_path):
    write_run(tmp_path / "demo" / "run-a")
    write_run(tmp_path / "demo" / "run-b")
    os.utime(tmp_path / "demo" / "run-a" / "trace.jsonl", (1, 1))  # make run-a the older one
    assert find_run_dir(str(tmp_path / "demo" / "run-a")).endswith("run-a")
    assert find_run_dir(str(tmp_path / "demo")).endswith("run-b")
    assert find_run_dir(str(tmp_path)).endswith("run-b")
    assert find_run_dir(str(tmp_path / "demo" / "run-a" / "trace.jsonl")).endswith("run-a")


@pytest.mark.parametrize("make", ["missing", "empty", "not_a_trace"])
def test_bad_paths_get_one_clear_line(tmp_path, make):
    path = tmp_path / "x"
    if make == "empty":
        path.mkdir()
    elif make == "not_a_trace":
        path.mkdir()
        (path / "trace.jsonl").write_text('{"type": "pass"}\n')
    with pytest.raises(TraceNotFound) as err:
        load_trace(str(path))
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_a_newer_format_is_refused_with_advice(tmp_path):
    (tmp_path / "trace.jsonl").write_text(json.dumps({"type": "run", "format": FORMAT_VERSION + 1, "run_id": "r", "started": 0, "script": "s"}) + "\n")
    with pytest.raises(TraceNotFound, match="upgrade lower-trace"):
        load_trace(str(tmp_path))


def test_format_1_trace_from_a_real_compile_still_loads():
    """A trace written by lower-trace 0.1.0 (format 1) from a real TileLang 0.1.15 compile."""
    trace = load_trace(os.path.join(FIXTURES, "trace-format-1"))
    assert trace.format == 1
    (kernel,) = trace.kernels
    assert kernel.name == "elementwise_add" and kernel.status is KernelStatus.OK
    assert len(kernel.passes) == 82
    names = [p.name for p in kernel.passes]
    assert names[:3] == ["NestedLoopChecker", "ParallelLocalIndexChecker", "FragmentLoopChecker"]
    assert "tl.LayoutInference" in names and "pass_fn" not in names
    (codegen,) = kernel.codegen
    assert codegen.role == "device" and codegen.language == "cuda"
    assert "__global__" in trace.snapshot(codegen.source)
    for record in kernel.passes:
        assert trace.snapshot(record.before), record


def _insert_lines(path, index, lines):
    old = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(old[:index] + lines + old[index:]))


def test_a_damaged_trace_loads_what_it_can_and_says_what_was_skipped(tmp_path):
    run_dir = tmp_path / "demo" / "run-1"
    passes, codegen = write_run(run_dir)
    _insert_lines(run_dir / "trace.jsonl", 2, [
        b'{"type": "pass", "kernel": "k1", "seq": 9, "name": "tl.\xff\xfeBroken"}\n',  # not UTF-8
        b'{"type": "pass", "kernel": "k1", "seq": "x", "name": "p", "status": "changed"}\n',  # a seq that is no number
        b'{"type": "pass", "kernel": "k1", "seq": 8, "name": "p", "status": "bogus"}\n',  # no such status
        b"[1, 2]\n",  # JSON, but no record
    ])
    _insert_lines(run_dir / "snapshots.jsonl", 1, [b'{"digest": "zz", "text": "\xc3("}\n'])
    with pytest.warns(TraceDamaged) as caught:
        trace = load_trace(str(run_dir))
    (warning,) = caught
    message = f"{run_dir}/trace.jsonl: 4 damaged lines skipped (line 3, 4, 5, 6); the rest of the trace is loaded"
    assert str(warning.message) == message and message in trace.run.notes  # the report shows the notes
    (kernel,) = trace.kernels
    assert kernel.passes == tuple(passes) and kernel.codegen == (codegen,) and kernel.status is KernelStatus.OK
    with pytest.warns(TraceDamaged, match=r"snapshots.jsonl: 1 damaged line skipped \(line 2\); the IR or source stored there is missing"):
        assert trace.snapshot(passes[1].after) == IR_B  # the line after the damaged one still loads
    assert trace.snapshot(passes[0].before) == IR_A and trace.snapshot("zz") == ""


def test_the_cli_on_a_damaged_trace_warns_in_one_line(tmp_path):
    import subprocess

    from support import lower_trace_cli

    run_dir = tmp_path / "demo" / "run-1"
    write_run(run_dir)
    _insert_lines(run_dir / "trace.jsonl", 2, [b'{"type": "note", "text": "\xff"}\n'])
    _insert_lines(run_dir / "snapshots.jsonl", 0, [b"\x00\x9c garbage\n"])
    for args in (["show", str(run_dir)], ["list", "--passes", str(run_dir)], ["list", "--runs", str(tmp_path)], ["report", str(run_dir)]):
        proc = subprocess.run([lower_trace_cli(), *args], capture_output=True, text=True)
        assert proc.returncode == 0, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and "UnicodeDecodeError" not in proc.stderr
        assert f"lower-trace: warning: {run_dir}/trace.jsonl: 1 damaged line skipped (line 3)" in proc.stderr
        if args[0] == "show":
            assert f"lower-trace: warning: {run_dir}/snapshots.jsonl: 1 damaged line skipped (line 1)" in proc.stderr
            assert "tl.LowerTileOp" in proc.stdout and "+    T.evaluate(0)" in proc.stdout


def test_a_damaged_run_header_is_one_clear_line(tmp_path):
    run_dir = tmp_path / "run-1"
    write_run(run_dir)
    data = (run_dir / "trace.jsonl").read_bytes()
    (run_dir / "trace.jsonl").write_bytes(b"\xff" + data[1:])
    with pytest.raises(TraceNotFound) as err:
        load_trace(str(run_dir))
    assert str(err.value) == f"{run_dir}/trace.jsonl: line 1 (the run header) is damaged; this trace cannot be loaded"
