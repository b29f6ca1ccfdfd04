"""The integration tier: real compiles (TileLang 0.1.15, the legacy 0.1.13 / 0.1.9 tests, plain
TVM). Its compile fixtures, shared with the browser tier, are in testing/conftest.py."""

import os

# The modules whose tests take longest (each a bisection or a reproducer: a dozen fresh
# interpreters that import TileLang): run first, so that on two cores (pytest-xdist) the end of
# the run is short tests that even out, not one long test while the other core idles.
LONGEST_FIRST = ("test_gpu_check.py", "test_bisect.py", "test_edits.py", "test_repro.py")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        name = os.path.basename(str(item.path))
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items[:] = sorted(items, key=rank)  # stable: the order within each group is kept
