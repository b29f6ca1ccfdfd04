"""A Python that imports the compiler once, then runs each script it is sent in a child forked
from itself: a fresh process per run, as `python script.py` would be, without paying the
compiler's import (about 3 s for TileLang) every time. `lower-trace reduce` runs its candidates
so (rerun/warm_children.py); it is run as a script, not imported:

    python fork_server.py MODULE...      # the modules to import first (tilelang, or tvm)

Requests on stdin, answers on stdout, one JSON object a line each:
    {"script": PATH, "cwd": FOLDER, "timeout": SECONDS}
 -> {"returncode": N, "stdout": TEXT, "stderr": TEXT, "timed_out": BOOL}
The child's output goes to files in its folder (no pipe can fill up), read back and removed.
Only the server's main thread runs when it forks, so nothing is held by a thread that would
not exist in the child.
"""

import sys

# Run as a script, this folder is first on sys.path: taken off, so that no module of ours can
# stand in for one of the compiler's or the standard library's.
if sys.path and sys.path[0] and __file__.startswith(sys.path[0]):
    del sys.path[0]

import json
import os
import runpy
import signal
import time
import traceback


def main() -> None:
    for name in sys.argv[1:]:
        __import__(name)
    _warm_up()
    sys.stdout.write('{"ready": true}\n')
    sys.stdout.flush()
    for line in sys.stdin:
        if line.strip():
            request = json.loads(line)
            answer = run(request["script"], request["cwd"], float(request["timeout"]))
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


def _warm_up() -> None:
    """TVM's first C++ error reads its library's debug information for the backtrace (about 0.5
    s); one raised here is read once, and every child inherits what was read."""
    tilelang = sys.modules.get("tilelang")
    tvm = getattr(tilelang, "tvm", None) or sys.modules.get("tvm")
    if tvm is None:
        return
    tir = getattr(tvm, "tirx", None) or tvm.tir
    try:
        tir.BufferStore(tir.decl_buffer((1,), "float32", "warm_up"), tir.const(0, "float32"), [])  # indices missing
    except Exception:
        pass


def run(script: str, cwd: str, timeout: float) -> dict:
    out_path, err_path = os.path.join(cwd, ".fork-stdout"), os.path.join(cwd, ".fork-stderr")
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _child(script, cwd, out_path, err_path)
    deadline = time.monotonic() + timeout
    timed_out, status = False, 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            timed_out = True
            break
        time.sleep(0.005)
    texts = []
    for path in (out_path, err_path):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                texts.append(handle.read())
            os.remove(path)
        except OSError:
            texts.append("")
    return {"returncode": os.waitstatus_to_exitcode(status), "stdout": texts[0], "stderr": texts[1], "timed_out": timed_out}


def _child(script: str, cwd: str, out_path: str, err_path: str) -> None:
    code = 1
    try:
        os.chdir(cwd)
        write = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        for fd, path, mode in ((0, os.devnull, os.O_RDONLY), (1, out_path, write), (2, err_path, write)):
            os.dup2(os.open(path, mode, 0o600), fd)
        sys.argv = [script]
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as exc:  # as the interpreter treats it: None 0, an int itself, else printed and 1
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


if __name__ == "__main__":
    main()
