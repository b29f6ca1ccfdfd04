"""How bisect runs the user's check, again and again: a Python script run by this interpreter
(`lower-trace bisect -- python check.py`, or `reduce --test SCRIPT` whose #! line starts this
interpreter) forks from a Python that imported the compiler once
(rerun/warm_children.py), which saves the compiler's import on every run (about 3 s for
TileLang); any other command (pytest, a shell script, another interpreter) runs as given. The
child sees the run's environment from its start (lower-trace's startup hook runs under it) and
exits as an interpreter does, so the trace is written as a fresh process writes it; what differs
is only what importing the compiler did before the script ran (sys.path holds tilelang/lib
already). testing/integration/test_check_runs.py holds each warm run to a cold one. A warm Python
that cannot start or dies gives way to cold runs: the answer is the same, only slower."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence

from lower_trace.config import ENV_BISECT, ENV_DIR, ENV_MODE
from lower_trace.rerun.warm_children import WarmChildren

_PER_RUN = (ENV_MODE, ENV_DIR, ENV_BISECT)  # what differs between runs: set in each child, not in the server
_NO_LIMIT = 10.0**9  # seconds: the fork server always takes a timeout


class CheckRuns:
    def __init__(self, command: Sequence[str]) -> None:
        self.command = list(command)
        self.script = python_script(self.command)
        self._warm: WarmChildren | None = None

    def run(self, env: dict[str, str], output: str, timeout: float | None) -> int:
        """The check's exit code; its stdout and stderr in the file output. Raises
        subprocess.TimeoutExpired past the timeout, OSError when the command cannot start."""
        with open(output, "wb") as out:
            if self.script is None:
                return subprocess.run(self.command, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode
        if self._warm is None:
            server_env = {name: value for name, value in env.items() if name not in _PER_RUN}
            self._warm = WarmChildren([compiler_module()], 1, server_env)
        done = self._warm.run(self.script, os.getcwd(), timeout or _NO_LIMIT, self.command[2:], env, output)
        return done.returncode

    @contextlib.contextmanager
    def kept_warm(self) -> Iterator[None]:
        """The warm Python lives for the block (a search's runs): ended after it, killed with the
        run in progress when the block is left by an exception (Ctrl-C)."""
        try:
            yield
        except BaseException:
            self.close(kill=True)
            raise
        finally:
            self.close()

    def close(self, kill: bool = False) -> None:
        if self._warm is not None:
            self._warm.close(kill)
            self._warm = None


def python_script(command: Sequence[str], suffix: str = ".py") -> str | None:
    """The script (as given), when the command is this interpreter running a Python file (with
    arguments or not): what a warm Python can run."""
    if len(command) < 2 or not command[1].endswith(suffix) or not os.path.isfile(command[1]):
        return None
    program = shutil.which(command[0])  # `python` as the shell finds it on PATH
    if program is None:
        return None
    # The same file in the same folder: python3 beside python in one venv is this Python; the
    # interpreter a venv links to is not (another environment).
    program, ours = os.path.abspath(program), os.path.abspath(sys.executable)
    if os.path.dirname(program) != os.path.dirname(ours) or not os.path.samefile(program, ours):
        return None
    return command[1]  # as given: the child runs in this folder, and sys.argv[0] is what was typed


def executable_python_script(path: str) -> str | None:
    """The script, when `path` is an executable whose #! line runs it with this interpreter
    (`#!/path/to/venv/bin/python`, or `#!/usr/bin/env python3` finding it on PATH): what a warm
    Python can run as `path ARGS` would run."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if len(words) == 2 and os.path.basename(words[0]) == "env":
        words = words[1:]  # `env python3`: found on PATH, as the kernel's exec would
    if len(words) != 1:  # interpreter options (-u, -S, ...) change how it starts: run it as it is
        return None
    return path if python_script([words[0], path], suffix="") else None


def compiler_module() -> str:
    """What the warm Python imports: TileLang where it is installed (it brings its own TVM), else TVM."""
    return "tilelang" if importlib.util.find_spec("tilelang") is not None else "tvm"
