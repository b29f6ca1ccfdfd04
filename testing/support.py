"""What test modules of every tier import (fixtures live in the conftests): where things are,
the console script, and why the browser tests cannot run here. Imports nothing optional.

Test modules import this, not `conftest`: each tier has a conftest of its own, and which one
`import conftest` finds depends on what pytest collected last."""

import importlib.util
import os
import shutil
import sys

TESTING = os.path.dirname(os.path.abspath(__file__))  # kernels.py, report_fixtures.py, ... live here
ROOT = os.path.dirname(TESTING)
FIXTURES = os.path.join(TESTING, "fixtures")  # traces written by real compiles, kept as they were
CHROMIUM = "/usr/bin/chromium"


NOT_INSTALLED = "the lower-trace command is not installed for this Python: install lower-trace (pip install '.[test]')"


def lower_trace_cli():
    """The installed console script, next to this interpreter. A test that needs it and runs
    where lower-trace is not installed fails with what to do, not with a TypeError."""
    path = os.path.join(os.path.dirname(sys.executable), "lower-trace")
    found = path if os.path.exists(path) else shutil.which("lower-trace")
    if found is None:
        import pytest

        pytest.fail(NOT_INSTALLED, pytrace=False)
    return found


def pythonpath():
    """PYTHONPATH for a child Python that imports kernels.py: testing/, then the PYTHONPATH the
    tests run under (a checkout named on it reaches the child too, as it reaches this process)."""
    return os.pathsep.join(p for p in (TESTING, os.environ.get("PYTHONPATH", "")) if p)


def installed(module):
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def browser_missing():
    """Why the report's browser tests cannot run here, or None. scripts/test.sh passes on why
    the browser could not be installed (LOWER_TRACE_NO_BROWSER_REASON)."""
    reason = os.environ.get("LOWER_TRACE_NO_BROWSER_REASON", "").strip()
    if reason:
        return reason
    if not os.path.exists(CHROMIUM):
        return f"{CHROMIUM} is not installed (scripts/test.sh installs Debian's chromium)"
    if not installed("playwright"):
        return "the playwright package is not installed (scripts/env.sh installs it)"
    return None
