"""bisect's runs of a Python check fork from a warm Python (rerun/check_runs.py): each must be what
`python check.py` is, so the ground truth is a cold run of the same script, side by side: the same
environment, arguments, sys.path (plus what importing TileLang adds to it), exit code, threads joined and atexit functions run before the
exit, and the same trace written (the same passes of the same kernel, the pass limit obeyed)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("tilelang")

from lower_trace import load_trace
from lower_trace.config import ENV_BISECT, ENV_DIR, ENV_MODE
from lower_trace.rerun.bisection import KNOWN_REQUIRED
from lower_trace.rerun.check_runs import CheckRuns, executable_python_script, python_script
from support import TESTING

CHECK = """
import sys
warm = "tilelang" in sys.modules  # a cold Python has imported nothing yet
path = list(sys.path)
import atexit, json, os, threading, time
sys.path.insert(0, {testing!r})
import tilelang, kernels

tilelang.compile(kernels.scale_c(factor=3.0), target="c", execution_backend="cython")
seen = {{"warm": warm, "env": dict(os.environ), "argv": sys.argv, "file": __file__, "path": path, "path_after": sys.path, "cwd": os.getcwd(),
        "traced": "lower_trace.capture.run" in sys.modules}}
print("to stdout"); print("to stderr", file=sys.stderr)

def late():  # a non-daemon thread: the interpreter joins it before the atexit functions run
    time.sleep(0.3)
    seen["thread"] = True

threading.Thread(target=late).start()

@atexit.register
def write():
    with open(sys.argv[1], "w") as out:
        json.dump(seen, out)

sys.exit(7)
"""


def test_a_warm_run_is_a_cold_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `python check.py`, as typed in the check's folder
    script = tmp_path / "check.py"
    script.write_text(textwrap.dedent(CHECK.format(testing=TESTING)))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "PYTEST_"))}
    runs = {}
    for how in ("cold", "warm"):
        folder = tmp_path / how
        folder.mkdir()
        plan = json.dumps({"limit": 20, "required": list(KNOWN_REQUIRED)})
        env = {**base, ENV_MODE: "html", ENV_DIR: str(folder / "trace"), ENV_BISECT: plan, "TILELANG_DISABLE_CACHE": "1"}
        command = [sys.executable, "check.py", str(folder / "seen.json")]
        output = folder / "output.txt"
        if how == "cold":
            with open(output, "wb") as out:
                code = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=300).returncode
        else:
            check = CheckRuns(command)
            assert check.script == "check.py"
            try:
                code = check.run(env, str(output), 300)
            finally:
                check.close()
        seen = json.loads((folder / "seen.json").read_text())
        runs[how] = (code, seen, output.read_text(), load_trace(str(folder / "trace")))

    (cold_code, cold, cold_out, cold_trace), (warm_code, warm, warm_out, warm_trace) = runs["cold"], runs["warm"]
    assert (cold["warm"], warm["warm"]) == (False, True)  # each path really was taken
    assert warm_code == cold_code == 7
    assert warm["env"].pop(ENV_DIR).endswith("warm/trace") and cold["env"].pop(ENV_DIR).endswith("cold/trace")
    assert warm["env"] == cold["env"]
    assert warm["argv"][1].endswith("warm/seen.json") and cold["argv"][1].endswith("cold/seen.json")
    assert (warm["argv"][0], warm["file"], warm["cwd"]) == (cold["argv"][0], cold["file"], cold["cwd"]) == ("check.py", str(script), str(tmp_path))
    # sys.path: the cold run's, in its order, plus what importing TileLang adds (tilelang/lib), as
    # it adds it in the cold run too, only earlier: the warm Python imported it before the script ran.
    assert [entry for entry in warm["path"] if entry in cold["path"]] == cold["path"]
    extras = [entry for entry in warm["path"] if entry not in cold["path"]]
    assert extras and all(entry in cold["path_after"] for entry in extras), (extras, cold["path_after"])
    assert warm["traced"] and cold["traced"] and warm["thread"] and cold["thread"]
    for out in (cold_out, warm_out):
        assert "to stdout" in out and "to stderr" in out
    # The trace: the same kernel, the same passes, and only the first 20 counted ones run in each.
    (cold_kernel,), (warm_kernel,) = cold_trace.kernels, warm_trace.kernels
    assert [(p.name, p.ordinal, p.status) for p in warm_kernel.passes] == [(p.name, p.ordinal, p.status) for p in cold_kernel.passes]
    counted = [p for p in warm_kernel.passes if p.ordinal]
    assert any(p.status.name == "SKIPPED" for p in counted) and all(p.status.name != "SKIPPED" for p in counted if p.ordinal <= 20)


def test_only_this_pythons_scripts_run_warm(tmp_path):
    script = tmp_path / "check.py"
    script.write_text("")
    assert python_script([sys.executable, str(script), "x"]) == str(script)
    bin_folder = os.path.dirname(sys.executable)
    names = [name for name in ("python", "python3") if os.path.exists(os.path.join(bin_folder, name))]
    os.environ["PATH"] = bin_folder + os.pathsep + os.environ["PATH"]  # as an activated venv has it
    try:
        for name in names:  # `python check.py`, the interpreter found on PATH
            assert python_script([name, str(script)]) == str(script)
    finally:
        os.environ["PATH"] = os.environ["PATH"].split(os.pathsep, 1)[1]
    if os.path.realpath(sys.executable) != os.path.abspath(sys.executable):  # a venv: the Python it links to is another environment
        assert python_script([os.path.realpath(sys.executable), str(script)]) is None
    assert python_script(["/bin/sh", str(script)]) is None  # another program
    assert python_script([sys.executable, "-m", "pytest"]) is None
    assert python_script([sys.executable, str(tmp_path / "missing.py")]) is None  # a cold run says it is missing
    assert python_script(["pytest", str(script)]) is None


def test_a_test_script_whose_hash_bang_names_this_python_runs_warm(tmp_path):
    """reduce --test SCRIPT runs SCRIPT FOLDER: warm when its #! line starts this interpreter."""
    bin_folder = os.path.dirname(sys.executable)

    def script(name, first_line):
        path = tmp_path / name
        path.write_text(first_line + "\nimport sys\n")
        path.chmod(0o755)
        return str(path)

    direct = script("direct", f"#!{sys.executable}")
    assert executable_python_script(direct) == direct  # no .py needed: the #! line says what runs it
    os.environ["PATH"] = bin_folder + os.pathsep + os.environ["PATH"]  # as an activated venv has it
    try:
        for name in ("python", "python3"):
            if os.path.exists(os.path.join(bin_folder, name)):
                found = script(f"env-{name}.py", f"#!/usr/bin/env {name}")
                assert executable_python_script(found) == found
    finally:
        os.environ["PATH"] = os.environ["PATH"].split(os.pathsep, 1)[1]
    assert executable_python_script(script("sh", "#!/bin/sh")) is None  # another program
    assert executable_python_script(script("unbuffered.py", f"#!{sys.executable} -u")) is None  # options change the start
    assert executable_python_script(script("none.py", "import sys")) is None  # no #! line: the kernel would not run it
    assert executable_python_script(str(tmp_path / "missing")) is None
    if os.path.realpath(sys.executable) != os.path.abspath(sys.executable):  # the Python a venv links to: another environment
        assert executable_python_script(script("other.py", f"#!{os.path.realpath(sys.executable)}")) is None
