"""What a printed TIR statement says about itself (analysis/statements.py), in seconds: lines of
real TileLang output (stored in testing/fixtures) with the answer the line itself gives -- its
operation and the buffers it names, as the module's rules put it -- and every stored line of the
fixtures held to what this test reads off it with a regex of its own."""

import glob
import os
import re

import pytest

import lower_trace
from lower_trace.analysis.statements import all_tokens, buffer_name, copy_key, likeness, statement
from support import FIXTURES

# (line, operation, buffers): lines as TileLang 0.1.15 printed them (testing/fixtures/copies, regress).
STATEMENTS = [
    ('A_shared = T.alloc_buffer((2, 1, 8, 256), "float16", scope="shared.dyn")', "alloc", {"A_shared"}),
    # a copy of a buffer's declaration, over its data: the same buffer, TVM's _1 dropped
    ('A_shared_1 = T.decl_buffer((2, 1, 8, 256), "float16", data=A_shared.data, scope="shared.dyn")', "alloc", {"A_shared"}),
    ("C_local_3[i * 4 + vec] = T.float32(0.0)", "store", {"C_local"}),
    ("C_local_3[i * 4:i * 4 + 4] = T.Broadcast(T.float32(0.0), 4)", "store", {"C_local"}),
    ("block_1: T.int32 = Blocks_1[k + 1]", "bind", {"block", "Blocks"}),  # a LetStmt binds a scalar
    ("tx: T.int32 = T.launch_thread_idx(0)", "launch_thread_idx", {"tx"}),
    ("T.copy(T.region(A[by * 64, start], 1, 64, 32), T.region(A_shared[0, 0], 2, 64, 32))", "copy", {"A", "A_shared"}),
    ("T.ptx_ldmatrix(T.bool(False), 4, T.access_ptr(A_shared[k % 2, lin // 32, lin % 32], 8, 1), T.access_ptr(A_local[i * 8], 8, 2))",
     "ptx_ldmatrix", {"A_shared", "A_local"}),
    ('T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", A_local.data, i * 8, B_local.data, j * 8, C_local, i * 16 + j * 8, T.bool(False))',
     "ptx_mma", {"A_local", "B_local"}),  # C_local is named bare: no index, no .data
    ('T.evaluate(T.call_extern("handle", "tl::tma_load", A_desc, mbarrier[0], A_shared[0]))', "call_extern:tl::tma_load", {"mbarrier", "A_shared"}),
    ('T.attr(A, "storage_alignment", 64)', "attr", set()),
    # a store of an extern call's value: the call named (tl::AllReduce<...>::run, up to its template)
    ('B_local[i] = T.call_extern("float32", "tl::AllReduce<tl::SumOp, 32, 1, 0, tl::NamedBarrier<128>>::run", B_local[i])', "store:tl::AllReduce", {"B_local"}),
    ("q_local_cast[i] = T.Cast(\"float16\", q[i])", "store", {"q"}),  # tl.DecoupleTypeCast's staging buffer is q's
    # no statement a pass rewrites in place
    ("if block >= 0:", "", set()),
    ("for k in T.serial(16):", "", set()),
    ('with T.sblock("tilelang_root"):', "", set()),
    ("# from tvm.script import tirx as T", "", set()),
    ("", "", set()),
]  # fmt: skip


@pytest.mark.parametrize(("line", "op", "buffers"), STATEMENTS, ids=[f"{n}-{op or 'none'}" for n, (_, op, _) in enumerate(STATEMENTS)])
def test_a_statement_is_its_operation_and_buffers(line, op, buffers):
    facts = statement("        " + line)
    assert (facts.op, set(facts.buffers)) == (op, buffers)


@pytest.mark.parametrize(
    ("name", "buffer"),
    [("K_tile_1", "K_tile"), ("A_shared_1_2", "A_shared"), ("q_local_cast", "q"), ("A_shared", "A_shared"), ("x2", "x2"), ("_1", "_1")],
)
def test_a_buffers_copies_keep_its_name(name, buffer):
    assert buffer_name(name) == buffer


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("if tx >= 128:", ("if", "tx")),
        ('if T.Cast("bool", flag_1[i]) and not done:', ("if", "done", "flag", "i")),  # a string, a call's name, keywords: not names
        ("if 1 < 2:", None),  # tests no name
        ("C_local_3[i * 4 + vec] = T.float32(0.0)", ("store", "C_local")),
        ('A_shared = T.alloc_buffer((2, 1, 8, 256), "float16", scope="shared.dyn")', None),  # a declaration: no copy of a statement
        ('T.attr(A, "storage_alignment", 64)', None),  # names no buffer
        ('T.tvm_storage_sync("shared")', None),
    ],
)
def test_a_copy_key_is_what_copies_share(line, key):
    assert copy_key(line) == key


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("A[i] = B[i]", "A[i] = B[i]", 1.0),
        ("A[i] = B[i]", "A[i] = C[i]", 3 / 5),  # {A, i, B, i} and {A, i, C, i}: 3 shared of 5
        ("T.copy(A[0, 1], 64)", "T.copy(A[0, 1], 32)", 5 / 7),
        ("A[i] = B[i]", "", 0.0),
        ("x", "y", 0.0),
    ],
)
def test_likeness_is_the_share_of_names_and_numbers(a, b, expected):
    assert likeness(a, b) == pytest.approx(expected)


def test_all_tokens_are_the_names_and_numbers_in_order():
    assert all_tokens("T.copy(A_1[0, 12], B)  # x") == ("T", "copy", "A_1", "0", "12", "B", "x")


# --- every stored line ------------------------------------------------------------------------

_STORE = re.compile(r"^\s*([A-Za-z_]\w*)\[[^=]*\] = (?!=)")  # `X[...] = ...`, not `==`
_HEADER = re.compile(r"^\s*(for|if|while|with|elif|else)\b.*:$")


def stored_lines():
    """Every distinct line of every TIR snapshot the fixtures' traces store (TileLang's IR)."""
    lines = set()
    for manifest in glob.glob(os.path.join(FIXTURES, "**", "trace.jsonl"), recursive=True):
        trace = lower_trace.load_trace(os.path.dirname(manifest))
        for kernel in trace.kernels:
            for digest in {d for record in kernel.passes for d in (record.before, record.after) if d}:
                lines.update(trace.snapshot(digest).splitlines())
    return sorted(lines)


def test_every_stored_store_and_header_reads_as_one():
    lines = stored_lines()
    stores = [line for line in lines if _STORE.match(line)]
    headers = [line for line in lines if _HEADER.match(line)]
    assert len(stores) > 100 and len(headers) > 100  # thousands of lines, of six compiles
    wrong = []
    for line in stores:
        facts = statement(line)
        stored_to = re.sub(r"(_local_cast)?(_\d+)*$", "", _STORE.match(line).group(1))
        if facts.op.partition(":")[0] != "store" or stored_to not in facts.buffers:
            wrong.append((line.strip(), facts))
    wrong += [(line.strip(), statement(line)) for line in headers if statement(line).op]
    assert not wrong, wrong[:5]
