"""Running the corpus on one side of lower-trace regress.

The corpus is the user's command, run once per side with that side's interpreter first on
PATH (so ``python`` and ``pytest`` are the side's), TileLang's kernel cache off, and the side's
pass configs forced on every compile (TL_LOWER_TRACE_CONFIGS). A pytest corpus is traced per
test by lower-trace's pytest plugin, each test a run of its own named by its node id, all of
them kept; under pytest-xdist every worker writes its tests' runs into the same folder, and the
folder loads as one side. Any other command is traced as a script (TL_LOWER_TRACE=trace: the
trace only, no report). What the command printed goes to the side's ``command.log``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from lower_trace.config import ENV_CONFIGS, ENV_DIR, ENV_LAUNCHES, ENV_MODE, pytest_addopts
from lower_trace.regress.sides import Interpreter, SideError

LOG = "command.log"
_PYTEST = ("pytest", "py.test")


@dataclass(frozen=True)
class SideRun:
    label: str
    folder: str  # where its traces are
    returncode: int
    seconds: float
    log: str


def is_pytest(command: Sequence[str]) -> bool:
    """`pytest ...`, `py.test ...` or `python -m pytest ...`."""
    first = os.path.basename(command[0]) if command else ""
    return first in _PYTEST or (first.startswith("python") and list(command[1:3]) == ["-m", "pytest"])


def side_env(interpreter: Interpreter, folder: str, pytest_corpus: bool, launches: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE") and k != "PYTEST_ADDOPTS"}
    bin_dir = os.path.dirname(interpreter.python)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    venv = os.path.dirname(bin_dir)
    if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        env["VIRTUAL_ENV"] = venv
    env["TILELANG_DISABLE_CACHE"] = "1"  # a cached kernel runs no pass: nothing to compare
    if interpreter.configs:
        env[ENV_CONFIGS] = json.dumps(interpreter.configs, sort_keys=True)
    if launches:  # regress --run: launches kept with their tensors, to compare results
        env[ENV_LAUNCHES] = launches
    if pytest_corpus:
        addopts = pytest_addopts()
        plugin = "" if interpreter.plugin else "-p lower_trace.pytest_plugin "
        env["PYTEST_ADDOPTS"] = f"{addopts} {plugin}--lower-trace=trace --lower-trace-keep=all --lower-trace-dir={shlex.quote(folder)}".strip()
    else:
        env[ENV_MODE] = "trace"
        env[ENV_DIR] = folder
    return env


def run_side(
    label: str, command: Sequence[str], interpreter: Interpreter, folder: str, workdir: str, timeout: float | None = None, launches: str = "",
) -> SideRun:
    """Run the corpus for one side into folder (which must not hold traces yet)."""
    os.makedirs(folder, exist_ok=True)
    log = os.path.join(folder, LOG)
    env = side_env(interpreter, folder, is_pytest(command), launches)
    argv = list(command)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = interpreter.python  # the side's, whatever PATH the shell had
    started = time.monotonic()
    with open(log, "w", encoding="utf-8", errors="replace") as out:
        out.write(f"$ {shlex.join(argv)}\n")
        out.flush()
        try:
            proc = subprocess.run(argv, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
        except FileNotFoundError:
            raise SideError(f"{argv[0]}: no such command on the {label} side; give the corpus after --: -- pytest tests/, -- python kernels.py") from None
        except subprocess.TimeoutExpired:
            out.write(f"\nlower-trace regress: stopped after {timeout:g} s (--timeout)\n")
            return SideRun(label, folder, 124, time.monotonic() - started, log)
    return SideRun(label, folder, proc.returncode, time.monotonic() - started, log)


# pytest-xdist's word for a worker process that died under a test (a crash at launch, as a real
# kernel's does): the side's pytest goes on with a new worker and exits 1 like any failing test.
_XDIST_CRASH = re.compile(r"worker '?(\w+)'? crashed while running '([^']+)'")


def crashed_tests(path: str) -> list[str]:
    """The tests whose xdist worker died under them, as the side's log names them (in order, once each)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return []
    return list(dict.fromkeys(test for _, test in _XDIST_CRASH.findall(text)))


def log_tail(path: str, lines: int = 3) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            kept = [line.rstrip() for line in handle.read().splitlines() if line.strip()]
    except OSError:
        return ""
    return " | ".join(kept[-lines:])
