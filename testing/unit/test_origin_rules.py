"""The source map's rules in seconds, with no TileLang: a stored trace of real TileLang output
(testing/fixtures/copies, made by its make.py from testing/copied_kernels.py) read by the analysis
in process, checked against the truth testing/copies_truth.py decides from the CUDA text and the
kernels' marker comments (the same checks the integration tier runs on fresh compiles); and the
small rules one by one, on lines whose answer the line itself says."""

import os
import re

import pytest

from copies_truth import guarded_store_problems, lets_problems, pipelined_problems
from lower_trace.analysis.generated_lines import place_generated_lines
from lower_trace.analysis.inlined_lets import if_then_else_lines, let_blocks
from lower_trace.analysis.origin_rules import Origin, loop_variables
from lower_trace.analysis.origins import trace_origins
from lower_trace.analysis.statements import copy_key
from lower_trace.analysis.text_diff import split_lines
from lower_trace.model import source_key
from lower_trace.store.reader import load_trace
from support import TESTING

FIXTURE = os.path.join(TESTING, "fixtures", "copies")


@pytest.fixture(scope="module")
def copies():
    return load_trace(FIXTURE)


def device_lines(trace, kernel_id):
    """[(text, marker name or line or None, certain)] of a kernel's generated CUDA, computed in process."""
    (kernel,) = [k for k in trace.kernels if k.kernel_id == kernel_id]
    origins = trace_origins(trace, kernel)
    (step,) = [step for step in kernel.codegen if step.role == "device"]
    source = origins.sources[step.seq]
    files = {o.file for o in source.origins if o is not None and o.file.endswith("copied_kernels.py")}
    names = {}
    for file in files:  # the markers of the file as it was traced (stored in the trace)
        for number, line in enumerate(split_lines(trace.snapshot(source_key(file))), start=1):
            if match := re.search(r"# @([a-z0-9_]+)\s*$", line):
                names[number] = match.group(1)
    return [
        (text, names.get(o.line, o.line) if o is not None and o.file in files else None, bool(o and o.certain))
        for text, o in zip(split_lines(source.text), source.origins, strict=False)
    ]


@pytest.mark.parametrize(
    ("kernel_id", "check"),
    [("k1", pipelined_problems), ("k2", lets_problems), ("k3", guarded_store_problems)],
    ids=["pipelined copies", "inlined lets", "a store guarded anew"],
)
def test_the_stored_kernels_lines_map_to_their_markers(copies, kernel_id, check):
    problems = check(device_lines(copies, kernel_id))
    assert not problems, problems


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('if T.Cast("bool", BlockMask_1[by * 16 + bx * 8 + k]):', ("if", "BlockMask", "bx", "by", "k")),  # flattened, renamed: the same names
        ("if 0 <= block_2:", ("if", "block")),
        ("block_1: T.int32 = Blocks_1[k + 1]", ("bind", "Blocks", "block")),  # the pipeliner's shifted copy of `block = Blocks[k]`
        ("for k in range(32):", None),  # a loop names no buffer: alike loops are no copies
    ],
)
def test_a_copy_is_known_by_what_it_does(line, key):
    assert copy_key(line) == key


@pytest.mark.parametrize(
    ("line", "variables"),
    [("for i, j in T.grid(4, 8):", ("i", "j")), ("for k_1 in T.serial(16):", ("k",)), ("B[i] = A[i]", ())],
)
def test_loop_variables(line, variables):
    assert loop_variables(line) == variables


LETS = """\
def helper(x, flag):
    half = T.if_then_else(flag, x, 0)
    return T.if_then_else(x > 1, half, 1)


def kernel():
    steps = T.if_then_else(bx < 2, bx + 2, bx - 1)
    last = T.if_then_else(bx < 2, bx, bx - 2)
    kept = T.if_then_else(bx < 3, 1, 2)
    for s in T.serial(steps):
        late = T.if_then_else(s > last, 7, 3)
        if late != 3:
            out[s] = helper(s, late) + kept
""".splitlines()


@pytest.mark.parametrize(
    ("line", "tir", "opened"),
    [
        (10, "for s in T.serial(T.if_then_else(bx < 2, bx + 2, bx - 1)):", (7,)),  # the extent's let
        # `late` inlined, and inside it `last`: the condition's block first (codegen_c.cc's order)
        (12, "if T.if_then_else(T.if_then_else(bx < 2, bx, bx - 2) < s, 7, 3) != 3:", (8, 11)),
        # a helper expands on the caller's line; `kept` is still a variable in the TIR: not inlined
        # (the helper's returned block first: its value's blocks print inside it)
        (13, "out[s] = T.if_then_else(s > 1, T.if_then_else(T.if_then_else(T.if_then_else(bx < 2, bx, bx - 2) < s, 7, 3), s, 0), 1) + kept", (13, 8, 11, 13)),
    ],
)
def test_an_inlined_let_opens_its_blocks_in_the_printers_order(line, tir, opened):
    assert if_then_else_lines(tuple(LETS), line, tir) == opened


def test_a_condval_block_is_its_declaration_to_its_closing_brace():
    cuda = ["  int condval;", "  if ((x < 2)) {", "    condval = 1;", "  } else {", "    condval = 2;", "  }", "  y = condval;"]
    assert let_blocks(cuda) == [(0, 5)]


def test_carved_shared_memory_a_prefetch_and_an_elect_guard_take_their_copys_line():
    user = "/k.py"
    source = [
        "def k():",
        "    A_shared = T.alloc_shared((64, 64))",
        "    T.copy(A[0, 0], A_shared)",
        "    T.copy(B[0, 0], B_shared)",
    ]
    cuda = [
        "  void* A_shared = ((void*)((char*)buf_dyn_shmem + 0));",
        "  tl::prefetch_tma_descriptor(A_desc);",
        "  if (tl::tl_shuffle_elect<128>()) {",
        "    tl::tma_load(A_desc, mbarrier[0], A_shared);",
        "  }",
        "  if (tl::tl_shuffle_elect<128>()) {",
        "    tl::tma_load(A_desc, mbarrier[0], A_shared);",
        "    tl::tma_load(B_desc, mbarrier[1], B_shared);",
        "  }",
    ]
    guess = Origin(user, 1, "guess")
    copy_a, copy_b = Origin(user, 3, "operands"), Origin(user, 4, "operands")
    origins = [guess, guess, guess, copy_a, None, guess, copy_a, copy_b, None]
    place_generated_lines(cuda, origins, lambda file: source if file == user else None)
    assert [(o.line, o.certain) if o else None for o in origins] == [
        (2, True),  # the buffer's allocation
        (3, True),  # the copy whose loads use A_desc (both loads are the same copy's)
        (3, True),  # the guard around that copy's load alone
        (3, True),
        None,
        (1, False),  # a guard around two copies' loads is neither's: still the guess
        (3, True),
        (4, True),
        None,
    ]
