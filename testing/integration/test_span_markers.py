"""Span markers taken out of a marked print (integrations/ir_reading/tir_spans.py): the text left is what TVM
prints without markers, character for character, and each marker lands on the line the
docstring's rule names -- checked against a line-by-line reading of that rule and against TVM's
own plain print of real snapshots."""

import json
import re

import pytest

pytest.importorskip("tilelang")

from hypothesis import given, settings
from hypothesis import strategies as st
from tilelang import tvm

import kernels
import recorder
from lower_trace.integrations.ir_reading import tir_spans

CUDA = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})


def by_lines(text):
    """The rule read one line at a time: a line that is only a marker goes and its marker belongs
    to the next line kept; markers at a line's end go, the last one first."""
    kept, found, pending = [], [], []
    for line in text.split("\n"):
        whole = re.fullmatch(r"[ ]*# @lt:([^@\n]*)@", line)
        if whole:
            pending.append(whole.group(1))
            continue
        while (end := re.search(r"  # @lt:([^@\n]*)@$", line)) is not None:
            pending.append(end.group(1))
            line = line[: end.start()]
        kept.append(line)
        found.extend((len(kept), payload) for payload in pending)
        pending = []
    return "\n".join(kept), found


LINES = st.sampled_from(
    ["x = 1", "", "    ", "  # @lt:1:2:3:4:5@", "    # @lt:0:9:1:9:20@", "# @lt:s3@", "for i in range(3):",
     "  # @lt:a@  # @lt:b@", "y  # @lt:c@ z", "z = 2  # @lt:d@  # @lt:e@", "@", "# @lt:@", "q # @lt:f@"]
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(LINES, max_size=8), st.booleans())
def test_markers_go_as_the_rule_says(lines, final_break):
    text = "\n".join(lines) + ("\n" if final_break else "")
    assert tir_spans.strip_marks(text) == by_lines(text)


@pytest.mark.parametrize("name", ["gemm", "flash_attention"])
def test_a_marked_print_stripped_is_the_plain_print(name):
    """Every distinct module of a real compile: printed with its spans' markers and stripped, it is
    TVM's plain print; each span row names a line of the text and a line of kernels.py."""
    passes, error = recorder.record(kernels.CUDA_KERNELS[name](), CUDA)
    assert error is None
    files = tir_spans.SpanFiles([])
    kernel_lines = len(open(kernels.__file__).read().split("\n"))
    seen, rows = set(), 0
    for done in passes:
        if done.after is None or done.after_text in seen:
            continue
        seen.add(done.after_text)
        marks = tir_spans.span_marks(done.after.functions, files)
        text, found = tir_spans.strip_marks(str(done.after.script(obj_to_annotate=marks)))
        assert text == done.after_text, done.name
        stored = tir_spans.spans_json(found, files)
        if not stored:
            continue
        spans = json.loads(stored)
        for line, file, span_line, *_ in spans["lines"]:
            assert 1 <= line <= text.count("\n") + 1
            if spans["files"][file] == kernels.__file__:
                rows += 1
                assert 1 <= span_line <= kernel_lines
    assert rows > 0
