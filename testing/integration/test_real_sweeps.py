"""Sweeps and the live messages on real compiles, each a fresh interpreter as a user runs it
(the worker, the messages and the filter on their own: unit/test_sweeps.py)."""

import os
import re

import pytest

from lower_trace.capture.messages import GROUP_LIMIT


def test_the_run_uses_a_thread_only_with_a_spare_core(run_python, tilelang):
    code = """
import lower_trace
run = lower_trace.enable(mode="html")
print(run.worker.threaded)
"""
    pinned = run_python("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n" + code)
    assert pinned.stdout.strip() == "False"
    if len(os.sched_getaffinity(0)) > 1:
        assert run_python(code).stdout.strip() == "True"


# --- real sweeps ----------------------------------------------------------------------

SWEEP = """
import kernels, tilelang
from tilelang import tvm
target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
for variant in kernels.sweep_variants(COUNT):
    with target:
        tilelang.lower(kernels.scaled_add(**variant), target=target)
"""


def lowering(*calls):
    """A user's script that lowers kernels.<call> for each call to CUDA sm_90a source."""
    lines = "\n".join(f"    tilelang.lower(kernels.{call}, target=target)" for call in calls)
    return f"""
import kernels, tilelang
from tilelang import tvm
target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
with target:
{lines}
"""


def lower_trace_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("lower-trace:")]


@pytest.mark.tilelang
def test_a_sweep_of_40_variants_says_under_20_lines(run_python, tmp_path, tilelang):
    count = 40
    proc = run_python(SWEEP.replace("COUNT", str(count)), env={"TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_DIR": str(tmp_path / "traces")})
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) < 20, proc.stderr
    ours = lower_trace_lines(proc.stderr)
    assert ours[-1].startswith(f"lower-trace: traced {count} kernels, ") and "report: file://" in ours[-1]
    # Ground truth from the folder itself: every working copy written is either named or counted.
    edits = tmp_path / "traces" / "user_kernel" / "edits"
    copies = sorted(p.name for p in edits.glob("scaled_add*.cu"))
    named = [line for line in ours if "generated source saved to" in line]
    assert len(named) == min(GROUP_LIMIT, len(copies))
    if len(copies) > GROUP_LIMIT:
        (summary,) = [line for line in ours if "more working copies (" in line]
        assert f"{len(copies) - GROUP_LIMIT} more working copies (scaled_add) saved in" in summary and "lower-trace edits" in summary


@pytest.mark.tilelang
def test_the_live_filter_prints_only_what_it_selects(run_python, tmp_path, tilelang):
    import lower_trace
    from lower_trace.model import PassStatus

    code = lowering("elementwise_add()", "row_sum()")
    env = {
        "TL_LOWER_TRACE": "both",
        "TL_LOWER_TRACE_DIR": str(tmp_path),
        "TL_LOWER_TRACE_FILTER": "kernel=^row_sum$;pass=Simplify|LowerTileOp;changed",
        "NO_COLOR": "1",
    }
    proc = run_python(code, env=env)
    trace = lower_trace.load_trace(str(tmp_path))
    assert [k.name for k in trace.kernels] == ["elementwise_add", "row_sum"]  # the trace itself is whole
    row_sum = trace.kernel("row_sum")
    expected = [p.seq for p in row_sum.passes if re.search("Simplify|LowerTileOp", p.name) and p.status is PassStatus.CHANGED]
    assert expected  # the filter selects something real
    headers = [line for line in proc.stderr.splitlines() if line.startswith("== lower-trace: kernel")]
    assert len(headers) == 1 and "row_sum" in headers[0]
    shown = [int(m.group(1)) for m in re.finditer(r"^\s*(\d+) \S+\s+\S", proc.stderr, re.M)]
    codegen = {c.seq for c in row_sum.codegen}
    assert [seq for seq in shown if seq not in codegen] == expected


@pytest.mark.tilelang
def test_a_bad_filter_warns_once_and_traces_unfiltered(run_python, tmp_path, tilelang):
    code = lowering("row_sum()")
    proc = run_python(code, env={"TL_LOWER_TRACE": "terminal", "TL_LOWER_TRACE_FILTER": "pass=(", "NO_COLOR": "1"})
    warnings = [line for line in proc.stderr.splitlines() if "TL_LOWER_TRACE_FILTER" in line]
    assert len(warnings) == 1 and "not filtered" in warnings[0]
    assert "== lower-trace: kernel k1 row_sum" in proc.stderr
