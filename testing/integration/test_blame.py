"""Blame (analysis/blame.py, `lower-trace blame`) on real TileLang kernels.

Ground truth is computed here from the pass records directly: over the passes that
run no nested pass (the leaves), in order, where a regex's matches appear and vanish;
and for every blamed line, that the pass it is blamed on really added it.
"""

import collections
import os
import re
import subprocess

import pytest

import lower_trace
from lower_trace.analysis.blame import blame_lines, final_text, history, pattern_history

pytest.importorskip("tilelang")

import kernels
from report_fixtures import lcs
from support import lower_trace_cli


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """traced(func) -> (kernel, trace): func lowered to CUDA alone in a run of its own, once per
    kernel name for the whole module (the tests only read the traces)."""
    import tilelang
    from tilelang import tvm

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    made = {}

    def run(func):
        name = func.attrs["global_symbol"]
        if name not in made:
            with lower_trace.trace(mode="html", trace_dir=tmp_path_factory.mktemp("blame") / name) as run_, target:
                tilelang.lower(func, target=target)
            trace = lower_trace.load_trace(run_.run_dir)
            made[name] = func, (trace.kernels[0], trace)
        assert tvm.ir.structural_equal(made[name][0], func), f"another {name} than the one traced"
        return made[name][1]

    return run


def leaves(kernel):
    parents = {p.parent for p in kernel.passes}
    return [p for p in kernel.passes if p.seq not in parents and p.after]


def innermost_introducer(kernel, trace, pattern):
    """The first pass (in start order) whose output matches and whose input did not, and none
    of whose nested passes did so itself: the one that really made the match."""
    made = [p for p in kernel.passes if p.after and not matches(trace.snapshot(p.before), pattern) and matches(trace.snapshot(p.after), pattern)]
    seqs = {p.seq for p in made}
    return next(p for p in made if not any(q.parent == p.seq for q in made if q.seq in seqs))


def matches(text, pattern):
    return [line for line in text.splitlines() if re.search(pattern, line)]


def test_a_regex_is_traced_to_the_pass_that_introduced_it(traced):
    kernel, trace = traced(kernels.gemm())
    truth = innermost_introducer(kernel, trace, "tl_shuffle_elect")
    found = pattern_history(history(kernel, trace.snapshot), re.compile("tl_shuffle_elect"))
    assert found.introduced is not None and found.introduced.seq == truth.seq
    assert found.present_at_end and found.removed is None
    # every pass named as changing the lines later really changed which lines match
    for record in found.changed:
        before, after = (collections.Counter(matches(trace.snapshot(d), "tl_shuffle_elect")) for d in (record.before, record.after))
        assert before != after


def test_a_regex_that_a_pass_removes(traced):
    kernel, trace = traced(kernels.gemm())
    pattern = "num_stages"  # the pipelining annotation: in the input, gone once the pipeline is built
    assert matches(trace.snapshot(kernel.passes[0].before), pattern)
    removers = [p for p in leaves(kernel) if matches(trace.snapshot(p.before), pattern) and not matches(trace.snapshot(p.after), pattern)]
    found = pattern_history(history(kernel, trace.snapshot), re.compile(pattern))
    assert found.introduced is None and not found.present_at_end
    assert found.removed is not None and found.removed.seq == removers[-1].seq


def test_every_line_is_blamed_on_a_pass_that_added_it(traced):
    for func in (kernels.gemm(), kernels.elementwise_add()):
        kernel, trace = traced(func)
        changes = history(kernel, trace.snapshot)
        blamed = blame_lines(changes)
        assert [line.text for line in blamed] == final_text(changes).splitlines()
        by_pass = collections.Counter(line.by.seq for line in blamed if line.by is not None)
        assert len(by_pass) > 3  # many passes made the final IR
        first_input = trace.snapshot(kernel.passes[0].before).splitlines()
        for line in blamed:
            if line.by is None:
                assert line.text in first_input
            else:  # the pass made that line: it is in its output, and brand-new text was not in its input
                before, after = trace.snapshot(line.by.before).splitlines(), trace.snapshot(line.by.after).splitlines()
                assert line.text in after, (line.by.name, line.text)
                if not any(line.text in trace.snapshot(p.after) for p in kernel.passes if p.seq < line.by.seq and p.parent != line.by.seq):
                    assert line.text not in before
        # No pass is blamed for more lines than a minimal diff of its own says it added (an LCS computed here).
        for seq, count in by_pass.items():
            record = next(p for p in kernel.passes if p.seq == seq)
            before, after = trace.snapshot(record.before).splitlines(), trace.snapshot(record.after).splitlines()
            assert count <= len(after) - lcs(before, after), (record.name, count)


def test_lower_trace_blame_as_a_user_runs_it(traced):
    kernel, trace = traced(kernels.gemm())
    truth = innermost_introducer(kernel, trace, "tl_shuffle_elect")

    def blame(*args):
        return subprocess.run([lower_trace_cli(), "blame", trace.path, *args], capture_output=True, text=True)

    out = blame("tl_shuffle_elect").stdout.splitlines()
    assert out[1] == f"  introduced by  {truth.seq} {truth.name}"
    lines = blame().stdout.splitlines()
    assert len(lines) == len(final_text(history(kernel, trace.snapshot)).splitlines())
    lower = next(p for p in kernel.passes if p.name == "tl.LowerTileOp")
    upto = blame("--ir", str(lower.seq)).stdout.splitlines()
    assert len(upto) == len(trace.snapshot(lower.after).splitlines())
    assert all(not line.split("|")[0].strip().split(" ")[0].isdigit() or int(line.split("|")[0].split()[0]) <= lower.seq for line in upto)
    nothing = blame("no_such_thing_anywhere")
    assert nothing.returncode == 1 and "no line of the IR matches" in nothing.stdout
    bad = blame("(")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1
    # `blame -k gemm REGEX` with the trace in the default folder: the one positional is the regex.
    env = {**os.environ, "TL_LOWER_TRACE_DIR": os.path.dirname(os.path.dirname(trace.path))}
    short = subprocess.run([lower_trace_cli(), "blame", "-k", kernel.kernel_id, "tl_shuffle_elect"], capture_output=True, text=True, env=env)
    assert short.returncode == 0 and short.stdout.splitlines() == out


def test_no_pass_is_blamed_for_more_than_it_added_at_any_point(traced):
    """At every pass P (blame --ir P), the lines blamed on P are at most what P's own diff adds (an
    LCS computed here). GEMM's tl.LowerTileOp runs nested passes on a helper module (_gemm_ssr):
    they are not the kernel's history, and must not make its lines look new."""
    kernel, trace = traced(kernels.gemm())
    helper_passes = [p for p in kernel.passes if p.depth and "_gemm_ssr" in trace.snapshot(p.before)]
    assert helper_passes  # the case this test is about is really there
    for record in kernel.passes:
        if record.status.value != "changed" or record in helper_passes:
            continue
        blamed = blame_lines(history(kernel, trace.snapshot, record.seq))
        assert [line.text for line in blamed] == trace.snapshot(record.after).splitlines(), record.name
        mine = sum(1 for line in blamed if line.by is not None and line.by.seq == record.seq)
        before, after = trace.snapshot(record.before).splitlines(), trace.snapshot(record.after).splitlines()
        assert mine <= len(after) - lcs(before, after), (record.seq, record.name, mine)
    # A pass that worked on the helper module has no place in the kernel's IR history: blame says so.
    done = subprocess.run([lower_trace_cli(), "blame", trace.path, "--ir", str(helper_passes[0].seq)], capture_output=True, text=True)
    assert done.returncode == 2 and "another module" in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
