"""Run-to-run variation measured and recognised (analysis/variation.py), and one object under two
names (analysis/aliases.py), on stored traces written here: what each side generated is known by
construction, so is the answer. The real TileLang variation: integration/test_regress_variation.py."""

import hashlib

import pytest

import lower_trace
from lower_trace.analysis import aliases, variation
from lower_trace.analysis.regress import regress
from lower_trace.analysis.verdicts import Verdict
from lower_trace.model import CodegenRecord, PassRecord, PassStatus, RunInfo
from lower_trace.model_json import to_json
from lower_trace.store.writer import TraceWriter

START = "def main(A):\n  x = load(A)\n"
CUDA = """extern "C" __global__ void main_kernel(float* A) {{
  void* w = ((void*)((char*)buf + 64));
  void* w_1 = ((void*)((char*)buf + 64));
  reduce(A[0], (float*){first});
  reduce(A[1], (float*){second});
  A[2] = {tail};
}}
"""


def stored(folder, cuda, merged="tl.Merge"):
    """One kernel: tl.Plan, then `merged` (the pass that writes what varies), then codegen of `cuda`."""
    writer = TraceWriter(str(folder), RunInfo(run_id="r", started=0.0, script="corpus"))

    def digest(text):
        key = hashlib.sha1(text.encode()).hexdigest()[:16]
        writer.add_snapshot(key, text)
        return key

    writer.append("kernel", {"kernel_id": "k1", "name": "main", "target": "cuda"})
    planned, final = START + "  plan()\n", START + "  plan()\n" + cuda
    writer.append("pass", to_json(PassRecord("k1", 0, "tl.Plan", PassStatus.CHANGED, before=digest(START), after=digest(planned))))
    writer.append("pass", to_json(PassRecord("k1", 1, merged, PassStatus.CHANGED, before=digest(planned), after=digest(final))))
    writer.append("codegen", to_json(CodegenRecord("k1", 2, "device", "target.build.tilelang_cuda", "cuda", "cuda", digest(final), digest(cuda))))
    writer.append("kernel_end", {"kernel_id": "k1", "status": "ok", "ms": 5.0})
    writer.close()
    return lower_trace.load_trace(str(folder))


SWAPPED = (CUDA.format(first="w", second="w_1", tail="0"), CUDA.format(first="w_1", second="w", tail="0"))


def test_a_swap_of_two_names_for_one_address_is_equivalent_code(tmp_path):
    a, b = SWAPPED
    (v,) = regress([stored(tmp_path / "a", a)], [stored(tmp_path / "b", b)])
    assert v.verdict is Verdict.EQUIVALENT and [g.names for g in v.equated] == [("w", "w_1")]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("void* w_1 = ((void*)((char*)buf + 64));", "void* w_1 = ((void*)((char*)buf + 128));"), "another address"),
        (("void* w_1 = ((void*)((char*)buf + 64));", "void* w_1 = ((void*)alloc(64));"), "a call makes a new object each time"),
        (("  A[2] = 0;", "  w_1 = ((void*)((char*)buf + 0));\n  A[2] = 0;"), "assigned again"),
    ],
)
def test_names_that_are_not_one_object_are_never_equated(tmp_path, change, why):
    a, b = SWAPPED
    old, new = change
    a2, b2 = a.replace(old, new), b.replace(old, new)
    assert a2 != a, why
    assert aliases.equated(a2, b2) is None, why
    (v,) = regress([stored(tmp_path / "a", a2)], [stored(tmp_path / "b", b2)])
    assert v.verdict is Verdict.DIFFERS, why


def test_measured_variation_explains_only_the_known_way(tmp_path):
    one, two = CUDA.format(first="w", second="w", tail="0"), CUDA.format(first="w", second="w", tail="1")
    # Two runs of one side: the kernel varied (tail 0 or 1), first at tl.Merge.
    measured = variation.measured(regress([stored(tmp_path / "r1", one)], [stored(tmp_path / "r2", two)]))
    (known,) = measured
    assert known.first_pass == "tl.Merge" and len(known.sources) == 2 and set(known.lines) == {"A[2] = 0;", "A[2] = 1;"}
    path = tmp_path / "variation.json"
    variation.write(str(path), measured)
    assert variation.read(str(path)) == measured  # the file round-trips
    # A two-side run: both versions seen before -> varies; a version never seen, at the same pass
    # and in the same lines -> varies; other lines, or another pass -> a change.
    three = two.replace("A[2] = 1;", "A[2] = 0;\n  A[2] = 1;")  # never seen, made of lines that varied
    other_lines = CUDA.format(first="w", second="w", tail="2")
    cases = [
        (two, "tl.Merge", Verdict.VARIES),  # seen before
        (three, "tl.Merge", Verdict.VARIES),  # unseen, but where and in what it varied before
        (other_lines, "tl.Merge", Verdict.DIFFERS),  # a line that never varied
        (three, "tl.Other", Verdict.DIFFERS),  # unseen, and another pass made it
    ]
    for number, (head, writer, expected) in enumerate(cases):
        (v,) = regress([stored(tmp_path / f"b{number}", one)], [stored(tmp_path / f"h{number}", head, merged=writer)], known=measured)
        assert v.verdict is expected, (number, v.verdict)
        assert (v.variation is not None) == (expected is Verdict.VARIES)


def test_a_variation_file_that_is_not_one(tmp_path):
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(variation.VariationError, match="format"):
        variation.read(str(tmp_path / "bad.json"))
    with pytest.raises(variation.VariationError, match=r"no variation\.json there"):
        variation.read(str(tmp_path))
