"""Comparing two compiles pass by pass (analysis/compare.py) on stored traces of real compiles:
two TileLang versions with other pass lists (testing/fixtures/compare). The comparisons of
compiles made in the test: integration/test_compare.py."""

import collections
import os

import lower_trace
from lower_trace.analysis.compare import Side, compare
from support import FIXTURES


def test_two_tilelang_versions_with_other_pass_lists():
    """Fixtures traced with TileLang 0.1.13 and 0.1.15 (testing/fixtures/compare): the passes one
    version runs and the other does not are exactly the difference of their pass lists."""
    here = os.path.join(FIXTURES, "compare")
    old, new = (lower_trace.load_trace(os.path.join(here, f"tilelang-{v}")) for v in ("0.1.13", "0.1.15"))
    (ka,), (kb,) = old.kernels, new.kernels
    assert len(ka.passes) != len(kb.passes)
    result = compare(Side(ka, old.snapshot), Side(kb, new.snapshot))
    def short(name):  # without the namespace, which versions change (tir. -> tirx.)
        return name.rsplit(".", 1)[-1]

    names_a, names_b = collections.Counter(short(p.name) for p in ka.passes), collections.Counter(short(p.name) for p in kb.passes)
    aligned = [row for row in result.rows if not row.one_sided]
    assert all(short(row.a.name) == short(row.b.name) for row in aligned)
    assert any(row.a.name != row.b.name for row in aligned)  # AddWrapperForSingleBufStore became tl.AddWrapperForSingleBufStore
    # What stands alone on one side is at least the difference of the pass lists.
    assert not (names_a - names_b) - collections.Counter(short(p.name) for p in result.only_a)
    assert not (names_b - names_a) - collections.Counter(short(p.name) for p in result.only_b)
    assert len(aligned) + len(result.only_a) == len(ka.passes) and len(aligned) + len(result.only_b) == len(kb.passes)
    assert result.divergence is not None and not result.identical
