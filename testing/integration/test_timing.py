"""Where compile time goes: analysis/timing.py on real TileLang compiles and `show --timing`,
checked against the trace's own records (the report's two charts: browser/test_timing_charts.py).
(Ground truth made on purpose, nested passes that sleep a known time, is in test_plain_tvm.py.)"""

import io
import json
import re

import pytest

from lower_trace.analysis.timing import kernel_timing, line_count, run_timing
from lower_trace.cli.main import main
from lower_trace.model import CodegenRecord, PassStatus
from lower_trace.render.timing_view import ms_text, write_run_table
from report_fixtures import recorded_times


def test_time_is_conserved_and_nested_passes_lie_inside_their_parents(real_trace):
    for kernel in real_trace.kernels:
        times = kernel_timing(kernel)
        assert [t.seq for t in times] == [s.seq for s in kernel.steps]
        by_seq = {t.seq: t for t in times}
        top = [t for t in times if t.depth == 0]
        # Self times add up to the top-level steps' inclusive time: nothing counted twice.
        assert sum(t.self_ms for t in times) == pytest.approx(sum(t.ms for t in top), abs=0.002 * len(times))
        at = 0.0
        for t in top:  # one after another, in the order they ran
            assert t.at == pytest.approx(at, abs=0.002 * len(times))
            at += t.ms
        for t in times:
            parent = getattr(t.step, "parent", None)
            if parent is None:
                continue
            outer = by_seq[parent]
            children = [c for c in times if getattr(c.step, "parent", None) == parent]
            assert outer.self_ms == pytest.approx(max(0.0, outer.ms - sum(c.ms for c in children)), abs=0.002)
            assert outer.at - 0.002 <= t.at and t.at + t.ms <= outer.at + outer.ms + 0.002 * len(children) + 0.002
    gemm = real_trace.kernel("gemm")
    assert any(t.depth > 0 for t in kernel_timing(gemm))  # tl.LowerTileOp runs passes inside itself


def test_show_timing_prints_a_kernel_table_and_the_runs_slowest_steps(real_trace, capsys):
    gemm = real_trace.kernel("gemm")
    assert main(["show", "--timing", "-k", gemm.kernel_id, real_trace.path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{gemm.kernel_id} gemm: compile {gemm.ms:.1f} ms")
    rows = {int(line.split()[0]): line for line in lines[2:-1]}
    for t in kernel_timing(gemm):
        row = rows[t.seq]
        assert row.split()[1] == t.name.split()[0]
        digest = t.step.source if isinstance(t.step, CodegenRecord) else t.step.after
        assert row.split()[-1] == str(line_count(real_trace.snapshot(digest)))  # IR lines after it
        if getattr(t.step, "status", None) is not PassStatus.FAILED:
            assert ms_text(t.ms) in row and ms_text(t.self_ms) in row
        assert row.index(t.name) - row.index(str(t.seq)) - len(str(t.seq)) == 2 + 2 * t.depth  # nested: indented
    # Several kernels: the step names over all of them, slowest first, as --json says.
    assert main(["show", "--timing", real_trace.path]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith(f"{len(real_trace.kernels)} kernels")
    truth = run_timing(real_trace.kernels)
    assert [line.split()[0] for line in table[2 : 2 + 10]] == [t.name.split()[0] for t in truth[:10]]
    assert main(["show", "--timing", "--json", real_trace.path]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in data["totals"]] == [t.name for t in truth]
    assert [k["id"] for k in data["kernels"]] == [k.kernel_id for k in real_trace.kernels]
    assert sum(t["calls"] for t in data["totals"]) == sum(len(k.steps) for k in real_trace.kernels)


def test_the_run_tables_shares_are_of_the_compile_and_it_says_what_the_rest_is(real_trace):
    times = recorded_times(real_trace.path)
    assert sorted(times) == sorted(k.kernel_id for k in real_trace.kernels)
    compile_ms = sum(c for c, _ in times.values())
    steps_ms = sum(s for _, s in times.values())
    assert 0 < steps_ms < 0.99 * compile_ms  # the compile is more than its steps: 100% would be wrong
    out = io.StringIO()
    write_run_table(out, real_trace.kernels)
    lines = out.getvalue().splitlines()
    number = r"([\d.]+)"
    head = re.match(
        rf"4 kernels: compile {number} ms in all: {number} ms \({number}%\) in passes and codegen, {number} ms \({number}%\) between steps \(",
        lines[0],
    )
    assert head, lines[0]
    shown_compile, shown_steps, steps_share, shown_between, between_share = map(float, head.groups())
    assert shown_compile == pytest.approx(compile_ms, abs=0.051)
    assert shown_steps == pytest.approx(steps_ms, abs=0.051 + 0.002 * sum(len(k.steps) for k in real_trace.kernels))
    assert steps_share == pytest.approx(100 * steps_ms / compile_ms, abs=0.051)
    assert shown_between == pytest.approx(compile_ms - steps_ms, abs=0.1) and steps_share + between_share == pytest.approx(100, abs=0.11)
    rows = [line.split() for line in lines[2:] if not line.startswith("...")]
    assert len(rows) == min(40, len(run_timing(real_trace.kernels)))
    for row in rows:  # each step name's share, of the compile too
        self_ms, share = row[-6:-4]  # names may hold spaces ("device codegen"): from the right
        # The share is rounded to 0.1 and the ms it is checked against to 0.01: both roundings are allowed for.
        assert float(share.rstrip("%")) == pytest.approx(100 * float(self_ms) / compile_ms, abs=0.05 + 100 * 0.005 / compile_ms + 1e-9), row
    # Counts agree with their nouns.
    out = io.StringIO()
    names = len(run_timing(real_trace.kernels))
    write_run_table(out, real_trace.kernels, limit=names - 1)
    assert out.getvalue().splitlines()[-1] == "... and 1 more step name (--json lists them all)"
    out = io.StringIO()
    write_run_table(out, real_trace.kernels[:1])
    assert out.getvalue().startswith("1 kernel: compile ")
