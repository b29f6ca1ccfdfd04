"""regress on a side whose process died: a real stored trace (testing/fixtures/compare, a TileLang
0.1.15 compile), copied and cut where a dead process's manifest ends -- after its Nth pass record,
no kernel_end. The truth is where the test cut it; the comparison must never call that kernel
changed, and a kernel a dead side never reached is not "missing" as if the change removed it."""

import json
import os
import shutil
import signal

import pytest

import lower_trace
from lower_trace.analysis.regress import regress, side_end
from lower_trace.analysis.verdicts import GATES, Verdict, default_gate
from support import FIXTURES

WHOLE = os.path.join(FIXTURES, "compare", "tilelang-0.1.15")


def cut(tmp_path, passes):
    """The fixture's trace as a process that died after recording `passes` passes leaves it."""
    folder = tmp_path / f"cut-{passes}"
    shutil.copytree(WHOLE, folder)
    manifest = folder / "trace.jsonl"
    kept, seen = [], 0
    for line in manifest.read_text().splitlines(keepends=True):
        record = json.loads(line)
        if record["type"] == "pass":
            seen += 1
            if seen > passes:
                break
        if record["type"] in ("codegen", "kernel_end"):
            break
        kept.append(line)
    manifest.write_text("".join(kept))
    return lower_trace.load_trace(str(folder)), [json.loads(line) for line in kept if json.loads(line)["type"] == "pass"]


@pytest.mark.parametrize("passes", [0, 45, 81])
def test_a_kernel_cut_short_on_head_is_died_never_code_differs(tmp_path, passes):
    whole = lower_trace.load_trace(WHOLE)
    head, records = cut(tmp_path, passes)
    (v,) = regress([whole], [head], ends=("", side_end(-signal.SIGSEGV)))
    assert v.verdict is Verdict.DIED_HEAD and v.reasons == (Verdict.DIED_HEAD,)
    assert v.comparison is None  # nothing compared as if it were whole
    if passes:
        last = max(records, key=lambda r: r["seq"])
        assert f"after pass {last['seq']} {last['name']} (of the other side's {len(whole.kernels[0].passes)})" in v.stopped
    else:
        assert "before its first pass" in v.stopped
    assert v.stopped.endswith("its process was killed by SIGSEGV during this compile")
    assert v.verdict in default_gate(up_to_renaming=True)


def test_a_kernel_cut_short_on_base_is_died_on_base(tmp_path):
    whole = lower_trace.load_trace(WHOLE)
    base, _ = cut(tmp_path, 30)
    (v,) = regress([base], [whole])
    assert v.verdict is Verdict.DIED_BASE and "its process stopped during this compile" in v.stopped


def test_a_kernel_a_dead_side_never_reached_is_died_and_a_live_side_s_is_missing(tmp_path):
    whole = lower_trace.load_trace(WHOLE)
    empty = tmp_path / "empty"
    shutil.copytree(WHOLE, empty)
    (empty / "trace.jsonl").write_text((empty / "trace.jsonl").read_text().splitlines(keepends=True)[0])
    nothing = lower_trace.load_trace(str(empty))
    (died,) = regress([whole], [nothing], ends=("", side_end(-signal.SIGKILL)))
    assert died.verdict is Verdict.DIED_HEAD and "never compiled on head: its process was killed by SIGKILL" in died.stopped
    (missing,) = regress([whole], [nothing])
    assert missing.verdict is Verdict.MISSING


def test_the_whole_trace_against_itself_is_identical():
    whole = lower_trace.load_trace(WHOLE)
    (v,) = regress([whole], [lower_trace.load_trace(WHOLE)])
    assert v.verdict is Verdict.IDENTICAL and not v.stopped


@pytest.mark.parametrize(
    ("returncode", "said"),
    [
        (0, ""), (1, ""), (2, ""), (None, ""),
        (-11, "was killed by SIGSEGV"), (139, "was killed by SIGSEGV"), (-9, "was killed by SIGKILL"), (124, "was stopped (--timeout)"),
    ],
)
def test_how_a_side_ended(returncode, said):
    assert side_end(returncode) == said


def test_every_verdict_is_in_one_gate_word_or_never_gated():
    gated = {v for verdicts in GATES.values() for v in verdicts}
    assert gated | {Verdict.IDENTICAL} == set(Verdict)
    assert Verdict.VARIES not in default_gate(up_to_renaming=False) and Verdict.RENAMED in default_gate(up_to_renaming=False)
    assert str(Verdict.DIED_HEAD) == "died on head" and f"{Verdict.DIFFERS}" == "code differs"


# --- compile time: a slower pass is reported only when it repeats beyond the run's own noise ---


def timed(kernel_ms, load=1.0, slow=None):
    """A comparison of one kernel's 20 passes: base's times, head's times scaled by `load` (the
    machine), and `slow` = {pass index: factor} on top (the change)."""
    from lower_trace.analysis.compare import AlignedPass, Comparison
    from lower_trace.analysis.regress import KernelKey, KernelVerdict, slower_passes
    from lower_trace.model import PassRecord, PassStatus

    rows = []
    for i, ms in enumerate(kernel_ms):
        a = PassRecord("k1", i, f"p{i}", PassStatus.CHANGED, ms=ms)
        b = PassRecord("k1", i, f"p{i}", PassStatus.CHANGED, ms=ms * load * (slow or {}).get(i, 1.0))
        rows.append(AlignedPass(a, b, True, True))
    result = Comparison(tuple(rows), None, True)
    return KernelVerdict(KernelKey("corpus", "k", "", 1), Verdict.IDENTICAL, None, None, result, slower=tuple(slower_passes(result)))


TIMES = [2.0 + (i % 5) for i in range(20)]


def test_a_loaded_head_is_not_a_slower_pass():
    from lower_trace.analysis.regress import corpus_slower

    # Every pass 4x slower on head (a loaded machine), one pass 12.7x in one kernel: noise.
    verdicts = [timed(TIMES, load=4.0, slow={3: 12.7} if n == 0 else None) for n in range(10)]
    assert corpus_slower(verdicts) == []


def test_a_pass_slower_in_most_kernels_is_reported_with_how_sure():
    from lower_trace.analysis.regress import corpus_slower

    verdicts = [timed(TIMES, load=1.5, slow={7: 10.0} if n < 8 else None) for n in range(10)]
    (found,) = corpus_slower(verdicts)
    assert (found.name, found.slow, found.ran) == ("p7", 8, 10) and found.chance < 1e-6
    # The same pass slow in only 2 of 10 kernels: not enough to say.
    assert corpus_slower([timed(TIMES, slow={7: 10.0} if n < 2 else None) for n in range(10)]) == []
