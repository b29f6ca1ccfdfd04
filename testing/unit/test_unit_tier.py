"""`pytest testing/unit` runs where only the `test` extra is installed (pytest, hypothesis): the
tier's modules and conftests import neither TileLang, TVM, torch nor playwright, even through a
helper. Checked in a fresh interpreter, where nothing else has imported them first."""

import ast
import os
import subprocess
import sys

from support import TESTING

UNIT = os.path.join(TESTING, "unit")
HEAVY = ("tilelang", "tvm", "tvm_ffi", "torch", "playwright")

IMPORT_ALL = """
import importlib.util, pathlib, sys
import pytest
sys.path[:0] = [{testing!r}, {unit!r}]
loaded, skipped = [], []
for path in [pathlib.Path({testing!r}) / "conftest.py", pathlib.Path({unit!r}) / "conftest.py", *sorted(pathlib.Path({unit!r}).glob("test_*.py"))]:
    spec = importlib.util.spec_from_file_location("unit_tier_" + path.stem, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except pytest.skip.Exception as skip:  # hypothesis missing (the tvm-0.27 venv): that module skips itself
        skipped.append(str(skip))
        continue
    loaded.append(path.name)
print(len(loaded))
print(repr(skipped))
print(sorted({{name.split(".")[0] for name in sys.modules}} & set({heavy!r})))
"""


def test_the_unit_tier_imports_no_compiler_and_no_browser():
    code = IMPORT_ALL.format(testing=TESTING, unit=UNIT, heavy=HEAVY)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "PYTEST_"))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    count, skipped, heavy = done.stdout.splitlines()
    modules = [name for name in os.listdir(UNIT) if name.startswith("test_") and name.endswith(".py")]
    skipped = ast.literal_eval(skipped)
    # Every test module and both conftests; a module may skip itself only for hypothesis, which the
    # `test` extra has and the tvm-0.27 venv lacks.
    assert int(count) + len(skipped) == len(modules) + 2
    assert all("hypothesis" in reason for reason in skipped), skipped
    assert heavy == "[]", f"the unit tier imported {heavy}"


def test_a_missing_console_script_says_how_to_install(monkeypatch, tmp_path):
    """Where lower-trace is not installed, a test that runs its command fails saying what to
    install (it once died on a TypeError in subprocess.run([None, ...]))."""
    import sys

    import pytest

    import support

    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match=r"install lower-trace \(pip install '\.\[test\]'\)"):
        support.lower_trace_cli()
