"""regress's rules (analysis/regress.py, analysis/regress_cause.py) in seconds, with no TileLang, on
stored traces of real compiles: testing/fixtures/regress (a real `lower-trace regress` of a GEMM
compiled by nvcc, an add and a row sum, warp specialisation off on head; its truth.json holds what
TileLang and nvcc say themselves, made by its make.py), and compare, copies, trace-format-1.
Each expected value is the stored text read here, truth.json, a number that is arithmetic, or how
the test built its input -- never an answer of the code under test."""

import collections
import difflib
import glob
import json
import os
import shutil

import pytest

import lower_trace
from lower_trace.analysis.regress import binomial_tail, corpus_slower, regress, side_end, signature, slower_passes
from lower_trace.analysis.regress_cause import TIR
from lower_trace.analysis.verdicts import Verdict
from support import FIXTURES

REGRESS = os.path.join(FIXTURES, "regress")


def run_folder(side):
    (run,) = glob.glob(os.path.join(REGRESS, side, "*", "run-*"))
    return run


@pytest.fixture(scope="module")
def base():
    return lower_trace.load_trace(run_folder("base"))


@pytest.fixture(scope="module")
def head():
    return lower_trace.load_trace(run_folder("head"))


@pytest.fixture(scope="module")
def truth():
    with open(os.path.join(REGRESS, "truth.json")) as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def as_run(base, head):
    return {v.key.name: v for v in regress([base], [head])}


def code(trace, name):
    """A kernel's generated sources, (role, text) in the order codegen wrote them, as the trace stores them."""
    (kernel,) = [k for k in trace.kernels if k.name == name]
    return [(step.role, trace.snapshot(step.source)) for step in sorted(kernel.codegen, key=lambda s: s.seq)]


# --- verdicts: the stored code, TileLang's and nvcc's own answers ------------------------------


@pytest.mark.parametrize("flipped", [False, True], ids=["as run", "sides swapped"])
def test_a_kernel_differs_exactly_where_its_stored_code_does(base, head, truth, flipped):
    differ = {k.name for k in base.kernels if code(base, k.name) != code(head, k.name)}
    assert differ == set(truth["changed"])  # the stored sources say what TileLang itself said
    a, b = (head, base) if flipped else (base, head)
    verdicts = regress([a], [b])
    assert sorted(v.key.name for v in verdicts) == sorted(k.name for k in base.kernels)
    assert verdicts[0].key.name in differ  # most severe first
    for v in verdicts:
        if v.key.name in differ:
            assert Verdict.DIFFERS in v.reasons and v.cause is not None and v.cause.wheres, v.key
        else:
            assert (v.verdict, v.reasons, v.cause, v.device) == (Verdict.IDENTICAL, (Verdict.IDENTICAL,), None, ()), v.key


@pytest.mark.parametrize("flipped", [False, True], ids=["as run", "sides swapped"])
def test_the_register_change_is_nvccs_and_is_a_verdict_only_when_it_grows(base, head, truth, flipped):
    counts = truth["gemm_registers"]  # ptxas --verbose on each side's recorded source and command
    old, new = (counts["head"], counts["base"]) if flipped else (counts["base"], counts["head"])
    assert old != new
    a, b = (head, base) if flipped else (base, head)
    (gemm,) = [v for v in regress([a], [b]) if v.key.name == "gemm"]
    assert ("registers", old, new) in gemm.device
    assert (Verdict.REGISTERS_UP in gemm.reasons) == (new > old)
    assert gemm.verdict is gemm.reasons[0] and Verdict.DIFFERS in gemm.reasons


def producers(passes, text_of, line, final):
    """The passes that made a line of the final TIR, read from the stored snapshots alone: those whose
    output has more copies of it (indentation aside) than their input had; a line the final TIR has
    once: the last of them. As pass seqs."""
    made = []
    for record in sorted(passes, key=lambda p: p.seq):
        if not record.after or not record.before:
            continue
        before = collections.Counter(text.strip() for text in text_of(record.before).splitlines())
        after = collections.Counter(text.strip() for text in text_of(record.after).splitlines())
        if after[line.strip()] > before[line.strip()]:
            made.append(record.seq)
    copies = sum(1 for text in final.splitlines() if text.strip() == line.strip())
    return set(made) if copies > 1 else set(made[-1:])


def test_the_writer_of_each_differing_tir_line_is_the_pass_that_added_it(base, head, as_run):
    cause = as_run["gemm"].cause
    checked, apart = 0, []
    for trace, lines in ((base, [line for group in cause.passes for line in group.base]), (head, [line for group in cause.passes for line in group.head])):
        (kernel,) = [k for k in trace.kernels if k.name == "gemm"]
        (device,) = [step for step in kernel.codegen if step.role == "device"]
        final = trace.snapshot(device.tir)  # the TIR the device code was made from: the lines compared
        stored = final.splitlines()
        for line in lines:
            if line.where != TIR or line.by is None:
                continue
            text = stored[line.line - 1]  # the line as stored: its number is the stored text's
            if text.strip() == "else:":  # says nothing of itself: which `else` a count of them adds, it cannot tell
                continue
            checked += 1
            if line.by.seq not in producers(kernel.passes, trace.snapshot, text, final):
                apart.append((text.strip(), line.by.seq, line.by.name))
    assert checked >= 20  # warp specialisation off rewrites a good part of the kernel
    assert not apart, f"{len(apart)} of {checked}: {apart[:5]}"
    top = cause.passes[0]
    assert top.lines == max(group.lines for group in cause.passes)


def test_two_releases_same_code_and_the_first_pass_that_did_otherwise():
    """The compare fixture: one kernel by TileLang 0.1.13 and 0.1.15. The CUDA is the same, the IR
    is not (another frontend); the pass named is the first aligned by name (in order) whose edit
    -- the lines it removed and added, as a plain diff says -- differs between the two."""
    old = lower_trace.load_trace(os.path.join(FIXTURES, "compare", "tilelang-0.1.13"))
    new = lower_trace.load_trace(os.path.join(FIXTURES, "compare", "tilelang-0.1.15"))
    (ka,), (kb,) = old.kernels, new.kernels
    assert code(old, ka.name) == code(new, kb.name)

    def edit(trace, record):
        a, b = trace.snapshot(record.before).splitlines(), trace.snapshot(record.after).splitlines()
        hunks = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
        return sorted(x for _, i1, i2, _, _ in hunks for x in a[i1:i2]), sorted(y for _, _, _, j1, j2 in hunks for y in b[j1:j2])

    pa, pb = sorted(ka.passes, key=lambda p: p.seq), sorted(kb.passes, key=lambda p: p.seq)
    aligned = difflib.SequenceMatcher(None, [p.name for p in pa], [p.name for p in pb], autojunk=False).get_matching_blocks()
    pairs = [(pa[m.a + k], pb[m.b + k]) for m in aligned for k in range(m.size)]
    first = next((x, y) for x, y in pairs if x.after and y.after and edit(old, x) != edit(new, y))
    (v,) = regress([old], [new])
    assert v.verdict is Verdict.SAME_CODE and v.comparison is not None and v.comparison.divergence.kind == "input"
    assert (v.first_effect.base.seq, v.first_effect.head.seq) == (first[0].seq, first[1].seq)


# --- pairing: by origin, name, signature, occurrence ------------------------------------------

# The signature of each stored kernel: its parameters, then each buffer it matches to a handle with
# shape and dtype, as its first snapshot's `def` and T.match_buffer lines say (read by eye; a
# buffer TVMScript prints without a dtype is float32, TVMScript's default).
SIGNATURES = [
    ("copies", "lets", "A_handle: T.handle, B_handle: T.handle; A(256, 256) float16; B(256, 256) float16"),
    ("copies", "store_rows",
     "Src_handle: T.handle, Starts_handle: T.handle, Out_handle: T.handle; Src(64, 64) float16; Starts(5,) int32; Out(1024, 64) float16"),
    ("regress/base", "gemm",
     "A_handle: T.handle, B_handle: T.handle, C_handle: T.handle; A(1024, 1024) float16; B(1024, 1024) float16; C(1024, 1024) float16"),
    pytest.param(
        "copies", "guarded",
        "A_handle: T.handle, B_handle: T.handle, Blocks_handle: T.handle, C_handle: T.handle; "
        "A(128, 512) float16; B(512, 128) float16; Blocks(16,) int32; C(128, 128) float32",
    ),
    pytest.param(
        "trace-format-1", "elementwise_add",
        "A_handle: T.handle, B_handle: T.handle, C_handle: T.handle; A(64, 64) float32; B(64, 64) float32; C(64, 64) float32",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("fixture", "name", "expected"), SIGNATURES)
def test_a_kernels_signature_is_its_parameters_and_matched_buffers(fixture, name, expected):
    folder = run_folder(fixture.split("/")[1]) if fixture.startswith("regress/") else os.path.join(FIXTURES, fixture)
    trace = lower_trace.load_trace(folder)
    (kernel,) = [k for k in trace.kernels if k.name == name]
    assert signature(kernel, trace.snapshot) == expected


def test_the_same_kernel_compiled_again_is_its_next_occurrence(base, tmp_path):
    """A side that ran the corpus twice has each kernel twice: the second compiles pair with nothing
    on a side that ran it once (new; missing the other way), the first with the first."""
    again = tmp_path / "again"
    shutil.copytree(run_folder("base"), again)
    twice = [base, lower_trace.load_trace(str(again))]
    names = [k.name for k in base.kernels]
    more = regress([base], twice)
    assert sorted((v.key.name, v.key.occurrence, v.verdict) for v in more) == sorted(
        [(n, 1, Verdict.IDENTICAL) for n in names] + [(n, 2, Verdict.NEW) for n in names]
    )
    fewer = regress(twice, [base])
    assert sorted((v.key.name, v.key.occurrence, v.verdict) for v in fewer) == sorted(
        [(n, 1, Verdict.IDENTICAL) for n in names] + [(n, 2, Verdict.MISSING) for n in names]
    )
    # Within a verdict, base's order: the order its kernels were compiled in.
    assert [v.key.name for v in fewer if v.verdict is Verdict.MISSING] == names


# --- how a side's process ended; the chance of a slow pass ------------------------------------


@pytest.mark.parametrize(
    ("returncode", "said"),
    [
        (None, ""),
        (0, ""),
        (1, ""),  # a failing test is no crash
        (-11, "was killed by SIGSEGV"),  # subprocess: -N for signal N
        (139, "was killed by SIGSEGV"),  # a shell: 128 + N
        (-9, "was killed by SIGKILL"),
        (134, "was killed by SIGABRT"),
        (124, "was stopped (--timeout)"),  # timeout(1)'s own status
        (-100, "was killed by signal 100"),  # no such signal
    ],
)
def test_how_a_side_ended(returncode, said):
    assert side_end(returncode) == said


@pytest.mark.parametrize(
    ("successes", "trials", "chance", "expected"),
    [
        (0, 5, 0.3, 1.0),
        (1, 1, 0.5, 0.5),
        (2, 2, 0.5, 0.25),
        (1, 2, 0.5, 0.75),
        (3, 3, 0.1, 0.001),
        (1, 10, 0.1, 1 - 0.9**10),
        (6, 6, 0.0, 1e-54),  # a chance of 0 is taken as 1e-9: never certain
    ],
)
def test_the_binomial_tail(successes, trials, chance, expected):
    assert binomial_tail(successes, trials, chance) == pytest.approx(expected, rel=1e-9)


# --- slower passes: built by scaling a stored trace's pass times --------------------------------


def scaled(folder, scale):
    """A copy of trace-format-1 in folder whose pass times are scale(record) (a pass record's JSON) each."""
    shutil.copytree(os.path.join(FIXTURES, "trace-format-1"), folder)
    manifest = os.path.join(folder, "trace.jsonl")
    with open(manifest) as handle:
        records = [json.loads(line) for line in handle]
    for record in records:
        if record["type"] == "pass":
            record["ms"] = scale(record)
    with open(manifest, "w") as handle:
        handle.writelines(json.dumps(record) + "\n" for record in records)
    return lower_trace.load_trace(str(folder))


def passes_of_fixture():
    with open(os.path.join(FIXTURES, "trace-format-1", "trace.jsonl")) as handle:
        return [r for r in map(json.loads, handle) if r["type"] == "pass"]


SLOW = max((r for r in passes_of_fixture() if not r.get("depth")), key=lambda r: r["ms"])  # the longest top-level pass
QUICK = next(r for r in passes_of_fixture() if not r.get("depth") and r["ms"] < 0.1)


@pytest.mark.parametrize(
    ("scale", "slower"),
    [
        (lambda r: r["ms"], []),
        (lambda r: r["ms"] * 10 if r["seq"] == SLOW["seq"] else r["ms"], [SLOW["name"]]),  # 10 times as long, and ms more
        (lambda r: r["ms"] * 2 if r["seq"] == SLOW["seq"] else r["ms"], []),  # twice: not three times
        (lambda r: r["ms"] * 40, []),  # every pass: a loaded machine, divided out
        (lambda r: r["ms"] * 40 * (10 if r["seq"] == SLOW["seq"] else 1), [SLOW["name"]]),  # slower than the load
        (lambda r: r["ms"] * 10 if r["seq"] == QUICK["seq"] else r["ms"], []),  # ten times a tenth of a ms: under 1 ms more
    ],
    ids=["same", "one pass 10x", "one pass 2x", "all 40x", "all 40x, one 400x", "a quick pass 10x"],
)
def test_a_pass_is_slower_only_beyond_the_compiles_own_slowdown(tmp_path, scale, slower):
    a = scaled(tmp_path / "a", lambda r: r["ms"])
    b = scaled(tmp_path / "b", scale)
    (v,) = regress([a], [b])
    assert [s.name for s in v.slower] == slower
    assert [s.name for s in slower_passes(v.comparison)] == slower


@pytest.mark.parametrize(("slow_in", "named"), [(6, True), (2, False)])
def test_the_corpus_calls_a_pass_slower_when_it_is_slow_in_many_kernels(tmp_path, slow_in, named):
    """Six compiles of the kernel on each side (six runs); the longest pass 10x on head in slow_in of them."""
    bases = [scaled(tmp_path / f"a{n}", lambda r: r["ms"]) for n in range(6)]
    heads = [scaled(tmp_path / f"b{n}", lambda r, n=n: r["ms"] * (10 if n < slow_in and r["seq"] == SLOW["seq"] else 1)) for n in range(6)]
    verdicts = regress(bases, heads)
    assert len(verdicts) == 6 and sum(bool(v.slower) for v in verdicts) == slow_in
    found = corpus_slower(verdicts)
    if named:
        ((name, slow, ran),) = [(s.name, s.slow, s.ran) for s in found]
        assert (name, slow, ran) == (SLOW["name"], 6, 6)
    else:
        assert found == []


# --- which code differs: the device's, or the host's alone ------------------------------------


@pytest.mark.parametrize(("role", "verdict"), [("host", Verdict.HOST_DIFFERS), ("device", Verdict.DIFFERS)])
def test_a_change_to_the_host_code_alone_is_host_code_differs(base, tmp_path, role, verdict):
    """The GEMM's stored run, with one statement added to the source codegen wrote for one role."""
    folder = tmp_path / "edited"
    shutil.copytree(run_folder("base"), folder)
    (kernel,) = [k for k in base.kernels if k.name == "gemm"]
    (step,) = [s for s in kernel.codegen if s.role == role]
    lines = base.snapshot(step.source).splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.rstrip().endswith("{"))  # the first function's body
    edited = "".join([*lines[: at + 1], "  int added_by_the_test = 1;\n", *lines[at + 1 :]])
    with open(folder / "snapshots.jsonl", "a") as handle:  # a plain text line: the reader takes those too (format 1)
        handle.write(json.dumps({"digest": "edited-by-test", "text": edited}) + "\n")
    manifest = [json.loads(line) for line in (folder / "trace.jsonl").read_text().splitlines()]
    for record in manifest:
        if record["type"] == "codegen" and record["kernel"] == kernel.kernel_id and record["role"] == role:
            record["source"] = "edited-by-test"
    (folder / "trace.jsonl").write_text("".join(json.dumps(record) + "\n" for record in manifest))
    (gemm,) = [v for v in regress([base], [lower_trace.load_trace(str(folder))]) if v.key.name == "gemm"]
    assert gemm.verdict is verdict and gemm.reasons == (verdict,)
