"""Fresh processes for reproducer runs, without a fresh compiler import each: a pool of fork
servers (integrations/reruns/fork_server.py), one per job, each a Python that imported the compiler
once and forks a child per run. A server that cannot start or dies is replaced by plain
`python script.py` runs, so the answer is the same either way, only slower."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import IO, Any

from lower_trace.integrations.reruns import fork_server


class _Server:
    def __init__(self, modules: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, fork_server.__file__, *modules], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, env=env, start_new_session=True,  # Ctrl-C reaches lower-trace, which ends the servers itself
        )  # fmt: skip
        self.ready: bool | None = None  # read on first use: the servers import side by side

    def ask(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The answer, or None when the server is gone (it could not import, or died)."""
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        try:
            if self.ready is None:
                self.ready = _read(stdout) == {"ready": True}
            if not self.ready:
                return None
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
            return _read(stdout)
        except (OSError, ValueError):
            self.ready = False
            return None

    def close(self, kill: bool = False) -> None:
        """Ends the server; kill: at once, with the child it is running (its own process group)."""
        if kill:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            if self.proc.stdin:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _read(stream: IO[str]) -> dict[str, Any] | None:
    line = stream.readline()
    return json.loads(line) if line else None


class WarmChildren:
    """run(script, cwd, timeout) as subprocess.run would (returncode, stdout, stderr; a run past
    the timeout raises subprocess.TimeoutExpired), `jobs` at a time from as many threads."""

    def __init__(self, modules: list[str], jobs: int, env: dict[str, str]) -> None:
        self.env = env
        self._idle: queue.Queue[_Server] = queue.Queue()
        self._servers = [_Server(modules, env) for _ in range(max(1, jobs))]
        for server in self._servers:
            self._idle.put(server)
        self.closed = False

    def run(
        self, script: str, cwd: str, timeout: float, args: Sequence[str] = (), env: dict[str, str] | None = None, output: str = "",
    ) -> subprocess.CompletedProcess[str]:
        """env: the child's environment (lower-trace's startup hook runs under it), else the
        servers'; output: a file that gets stdout and stderr both (appended), else they are returned."""
        server = self._idle.get()
        request: dict[str, Any] = {"script": script, "cwd": cwd, "timeout": timeout, "args": list(args)}
        request.update({"env": env} if env is not None else {})
        request.update({"output": output} if output else {})
        try:
            answer = server.ask(request)
        finally:
            self._idle.put(server)
        if answer is None and self.closed:  # Ctrl-C ended the servers: no cold run instead
            return subprocess.CompletedProcess([script], -9, "", "")
        if answer is None:  # no warm Python: a cold one
            return _cold(script, cwd, timeout, args, env or self.env, output)
        if answer["timed_out"]:
            raise subprocess.TimeoutExpired([script], timeout)
        return subprocess.CompletedProcess([script], answer["returncode"], answer["stdout"], answer["stderr"])

    def kill(self) -> None:
        """Ctrl-C: every server and the child it runs end now (safe in a signal handler: no wait)."""
        self.closed = True
        for server in self._servers:
            with contextlib.suppress(OSError):
                os.killpg(server.proc.pid, signal.SIGKILL)

    def close(self, kill: bool = False) -> None:
        self.closed = True
        for server in self._servers:
            server.close(kill)


def _cold(script: str, cwd: str, timeout: float, args: Sequence[str], env: dict[str, str], output: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, script, *args]
    if not output:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL, env=env)
    with open(output, "ab") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL, env=env)
    return subprocess.CompletedProcess(command, done.returncode, "", "")


def quiet_environment() -> dict[str, str]:
    """The environment for reruns: never traced themselves, whatever TL_LOWER_TRACE says here."""
    return {name: value for name, value in os.environ.items() if not name.startswith("TL_LOWER_TRACE")}
