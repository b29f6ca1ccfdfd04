"""The unit tier's rule: no compiler, no browser. A unit test that asks for a fixture that
compiles with TileLang or opens Chromium fails collection (it belongs in integration/ or
browser/); test_unit_tier.py checks that importing the tier pulls in neither."""

import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
# The fixtures of testing/conftest.py and browser/conftest.py that compile or open a browser.
NOT_HERE = {"tilelang", "cuda_target", "lower_cuda", "real_trace", "layouts_traced", "killed", "browser"}


def pytest_collection_modifyitems(config, items):
    wrong = [(item.nodeid, sorted(NOT_HERE & set(getattr(item, "fixturenames", ())))) for item in items if str(item.path).startswith(HERE + os.sep)]
    wrong = [(nodeid, names) for nodeid, names in wrong if names]
    if wrong:
        raise pytest.UsageError("unit tests may not compile or open a browser: " + "; ".join(f"{n} uses {', '.join(f)}" for n, f in wrong))
