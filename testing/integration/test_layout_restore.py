"""TileLang layouts through TVM's JSON (integrations/reruns/tilelang_layout_restore.py), on real kernels.

The ground truth is the module objects TileLang itself handed each pass, kept by an independent
recorder (recorder.py: TVM's own PassInstrument, no lower-trace). A pass input loaded from its
JSON must come back *exactly*: the same JSON graph, and the same TileLang placeholder variables
in its layouts -- which TVM's structural hash and structural equality see, because they compare
free variables by identity. Without the restore, both tell the copy from the original.

(TVM's structural_equal of two whole modules cannot decide here: it looks up a map's keys --
layout_map is keyed by buffers, tma_descriptor_args by variables -- before the statements that
define them, and calls a module unequal even to its own JSON copy without any layout in it.)

Also run on TileLang 0.1.13 and 0.1.9 by test_legacy_tilelang.py.
"""

import pytest

tilelang = pytest.importorskip("tilelang")

from tilelang import tvm  # noqa: E402

import kernels  # noqa: E402
import recorder  # noqa: E402
from lower_trace.integrations.reruns.replay import load_module  # noqa: E402

CUDA = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})


def inputs_with_layouts(func):
    passes, _ = recorder.record(func, CUDA)
    found = [p for p in passes if recorder.layouts_in(p.before)]
    assert found, "the kernel's pipeline holds layouts"
    return found


def check_exact(original):
    """What the test asserts of one pass input; returns (restored, what a plain load gives)."""
    text = tvm.ir.save_json(original)
    plain = tvm.ir.load_json(text)
    restored, note = load_module(text)
    assert tvm.ir.save_json(restored) == text  # the same graph: every field, every shared object
    assert tvm.ir.structural_hash(restored) == tvm.ir.structural_hash(original)
    ours, theirs = recorder.layouts_in(restored), recorder.layouts_in(original)
    assert len(ours) == len(theirs)
    for mine, real in zip(ours, theirs, strict=False):
        assert tvm.ir.structural_equal(mine, real), (mine, real)
        # TileLang's own placeholders: the ones its layout constructors hand out.
        assert all(a.same_as(b) for a, b in zip(mine.get_forward_vars(), real.get_forward_vars(), strict=False))
    return restored, plain, note


@pytest.mark.parametrize("make", [kernels.gemm, kernels.flash_attention, kernels.row_sum, kernels.shape_mismatch])
def test_every_pass_input_holding_layouts_comes_back_exactly(make):
    for record in inputs_with_layouts(make()):
        _restored, plain, note = check_exact(record.before)
        assert note == ""
        # The control: a plain load is told apart by the same checks.
        assert tvm.ir.structural_hash(plain) != tvm.ir.structural_hash(record.before)
        assert not all(tvm.ir.structural_equal(a, b) for a, b in zip(recorder.layouts_in(plain), recorder.layouts_in(record.before), strict=False))


def test_lower_tile_op_on_a_restored_input_makes_what_it_made_in_the_pipeline():
    """The pass that reads layouts, rerun on its loaded input: the IR the real pipeline made."""
    for make in (kernels.gemm, kernels.flash_attention):
        record = next(p for p in inputs_with_layouts(make()) if p.name == "tl.LowerTileOp")
        restored, plain, _ = check_exact(record.before)
        with tvm.transform.PassContext(opt_level=3), CUDA:
            again = tilelang.transform.LowerTileOp()(restored)
        assert again.script() == record.after_text
    # The failing kernel: the error TileLang raised in the pipeline, not another one.
    passes, error = recorder.record(kernels.shape_mismatch(), CUDA)
    (failed,) = [p for p in passes if p.after is None]
    assert failed.name == "tl.LowerTileOp" and error is not None
    restored, plain, _ = check_exact(failed.before)
    with tvm.transform.PassContext(opt_level=3), CUDA:
        with pytest.raises(Exception) as again:
            tilelang.transform.LowerTileOp()(restored)
        with pytest.raises(Exception) as wrong:
            tilelang.transform.LowerTileOp()(plain)
    first = lambda exc: str(exc).strip().splitlines()[0]  # noqa: E731
    assert first(again.value) == first(error)
    assert first(wrong.value) != first(error)  # what loading without the restore gets
