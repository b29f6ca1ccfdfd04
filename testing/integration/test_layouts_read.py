"""Fragment layouts: what the tracer reads off TileLang's layout objects, checked against
TileLang's own Fragment API (the module tl.LayoutInference returned, captured through TileLang's
instrumentation, not through lower-trace: testing/shared_runs.py). The pictures the report
draws of them: browser/test_layouts.py."""

import pytest

pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")  # 0.1.15: the modules after each pass, for the ground truth


def test_layouts_are_read_for_the_passes_that_set_them_and_match_tilelangs_fragments(layouts_traced):
    trace, truth = layouts_traced
    for kernel in trace.kernels:
        with_layouts = [p for p in kernel.passes if p.layouts]
        assert [p.name for p in with_layouts] == ["tl.LayoutInference"]  # the one pass that set them (not LowerTileOp again)
        (inference,) = with_layouts
        expected = truth[kernel.name]
        assert {f.buffer for f in inference.layouts} == set(expected)
        for layout in inference.layouts:
            frag = expected[layout.buffer][0]
            assert layout.shape == tuple(int(x) for x in frag.input_size)
            assert layout.replicate == int(frag.replicate_size) and layout.threads == int(frag.get_thread_size())
            assert layout.thread == str(frag.forward_thread) and layout.index == tuple(str(e) for e in frag.forward_index)
            assert layout.scope == "local.fragment"
    row_sum = next(p for p in trace.kernel("row_sum").passes if p.layouts)
    assert any(f.replicate > 1 for f in row_sum.layouts)  # its row sums: one value per row, held by many threads
