"""The source map pass by pass (analysis/origin_carry.py: each pass's phases carry the origins of the
text it was given to the text it made), in seconds with no TileLang: testing/fixtures/copies's
guarded pipeline (testing/copied_kernels.py, lowered by TileLang 0.1.15 for sm_80), after every
pass the kernel's origins cover. The truth is the kernel's marker comments, found in the source
the trace stored, and which statement each TIR line is, read off its text by this test's own
patterns; test_origin_rules.py holds the final CUDA to the same markers."""

import collections
import os
import re

import pytest

from lower_trace.analysis.origin_carry import carried
from lower_trace.analysis.origin_rules import Origin
from lower_trace.analysis.origins import trace_origins
from lower_trace.analysis.text_diff import split_lines
from lower_trace.model import source_key
from lower_trace.store.reader import load_trace
from support import FIXTURES

# What a TIR line of the guarded pipeline is, by its own text: the first pattern that matches names
# the marker of the user's statement it must come from (TVM's copies carry _1, _2 ...).
STATEMENTS = [
    (r"^\s*block(_\d+)?(: T\.int32)? = Blocks(_\d+)?\[", "gp_block"),
    (r"^\s*if (0 <= block\w*|block\w* >= 0):", "gp_guard"),
    (r"^\s*start(_\d+)?(: T\.int32)? = block", "gp_start"),
    (r"^\s*for k(_\d+)? in ", "gp_loop"),
    (r"T\.copy\(T\.region\(A\[", "gp_copy_a"),
    (r"T\.copy\(T\.region\(B\[", "gp_copy_b"),
    (r"T\.copy\(T\.region\(C_local", "gp_store"),
    (r"^\s*C(_\d+)?\[.*\] = ", "gp_store"),
    (r"^\s*A_shared(_\d+)?\[.*\] = .*\bA(_\d+)?\[", "gp_copy_a"),
    (r"^\s*B_shared(_\d+)?\[.*\] = .*\bB(_\d+)?\[", "gp_copy_b"),
    (r"T\.gemm|T\.ptx_mma|T\.ptx_ldmatrix", "gp_gemm"),
]


@pytest.fixture(scope="module")
def pipeline():
    trace = load_trace(os.path.join(FIXTURES, "copies"))
    (kernel,) = [k for k in trace.kernels if k.name == "guarded"]
    return trace, kernel, trace_origins(trace, kernel)


def markers(trace, files):
    """{(file, line): marker} of the kernel files as the trace stored them."""
    found = {}
    for file in files:
        for number, line in enumerate(split_lines(trace.snapshot(source_key(file))), start=1):
            if match := re.search(r"# @([a-z0-9_]+)\s*$", line):
                found[(file, number)] = match.group(1)
    return found


def test_after_every_pass_each_statement_is_its_markers_and_certain(pipeline):
    trace, kernel, origins = pipeline
    files = {o.file for texts in origins.texts.values() for o in texts if o is not None and o.file.endswith("copied_kernels.py")}
    assert len(files) == 1
    named = markers(trace, files)
    checked, wrong, passes = collections.Counter(), [], set()
    for record in sorted(kernel.passes, key=lambda p: p.seq):
        text = trace.snapshot(record.after) if record.after else ""
        if text not in origins.texts:  # a text off the kernel's own chain (a macro's function lowered apart)
            continue
        for line, origin in zip(split_lines(text), origins.of_text(text), strict=True):
            want = next((name for pattern, name in STATEMENTS if re.search(pattern, line)), None)
            if want is None:
                continue
            checked[want] += 1
            passes.add(record.name)
            got = named.get((origin.file, origin.line), origin.line) if origin is not None else None
            if got != want or not origin.certain:
                wrong.append((record.seq, record.name, line.strip()[:80], want, got, origin and origin.how))
    # Every statement kind is met, many times, through the passes that copy and lower them.
    assert set(checked) == {name for _, name in STATEMENTS} and sum(checked.values()) > 1000, checked
    assert {"tl.InjectSoftwarePipeline", "tl.LowerTileOp", "tl.LayoutInference"} <= passes
    assert not wrong, f"{len(wrong)} of {sum(checked.values())}: {wrong[:5]}"


# --- one pass, phase by phase: texts whose answer the lines themselves say -----------------------

USER = "/kernel.py"


def _o(line):
    return Origin(USER, line, "span")


# (before: [(line, its user line or None)], after, expected: per new line (user line, certain) or None)
ONE_PASS = {
    # a statement rewritten: the removed statement with the same operation on the same buffers
    "operands renamed": (
        [("def k():", None), ("    for i in range(4):", 2), ("        B[i] = A[i]", 3)],
        ["def k():", "    for i in range(4):", "        B_1[i] = A_1[i] + T.float32(0)"],
        [None, (2, True), (3, True)],
    ),
    # given one more operand (a barrier): the removed call of that operation whose buffers it keeps
    "an operand added": (
        [("def k():", None), ("    T.im2col(data[0], data_shared[0])", 2), ("    C[0] = D[0]", 3)],
        ["def k():", "    T.im2col(data[0], data_shared[0], mbar[0])", "    C[0] = D[0]"],
        [None, (2, True), (3, True)],
    ),
    # a copy (a pipeliner's next stage) of a statement from one place: that place, certain
    "copied from one place": (
        [("def k():", None), ("    block = Blocks[k]", 5), ("    C[0] = D[0]", 6)],
        ["def k():", "    block_1 = Blocks[k + 1]", "    block = Blocks[k]", "    C[0] = D[0]"],
        [None, (5, True), (5, True), (6, True)],
    ),
    # the same statement written in two places: which one it copies, only the nearest as a guess
    "copied from two places": (
        [("def k():", None), ("    block = Blocks[k]", 5), ("    C[0] = D[0]", 6), ("    block = Blocks[k]", 9)],
        ["def k():", "    block = Blocks[k]", "    C[0] = D[0]", "    block = Blocks[k]", "    block_1 = Blocks[k + 1]"],
        [None, (5, True), (6, True), (9, True), (9, False)],
    ),
    # a barrier inserted between two lines of one user line: that line, as a guess
    "inserted between": (
        [("def k():", None), ("    A_s[0] = A[0]", 3), ("    A_s[1] = A[1]", 3)],
        ["def k():", "    A_s[0] = A[0]", '    T.tvm_storage_sync("shared")', "    A_s[1] = A[1]"],
        [None, (3, True), (3, False), (3, True)],
    ),
}


@pytest.mark.parametrize("case", list(ONE_PASS))
def test_one_pass_carries_each_line_to_the_statement_it_is(case):
    before, after, expected = ONE_PASS[case]
    origins = carried("\n".join(text for text, _ in before) + "\n", [_o(line) if line else None for _, line in before], "\n".join(after) + "\n", {})
    assert [(o.file, o.line, o.certain) if o is not None else None for o in origins] == [(USER, *e) if e else None for e in expected]
