"""A Python that imports the compiler once, then runs each script it is sent in a child forked
from itself: a fresh process per run, as `python script.py` would be, without paying the
compiler's import (about 3 s for TileLang) every time. `lower-trace reduce` runs its candidates
so, and `lower-trace bisect` a check that is a Python script (rerun/warm_children.py); it is run
as a script, not imported:

    python fork_server.py MODULE...      # the modules to import first (tilelang, or tvm)

Requests on stdin, answers on stdout, one JSON object a line each:
    {"script": PATH, "cwd": FOLDER, "timeout": SECONDS}
    optional: "args": [...] (sys.argv[1:]), "env": {...} (the child's whole environment, set
    before anything of the script runs, lower-trace's startup hook run again under it), "output":
    PATH (stdout and stderr both appended there, as `> PATH 2>&1` would)
 -> {"returncode": N, "stdout": TEXT, "stderr": TEXT, "timed_out": BOOL}
The child's output goes to files in its folder (no pipe can fill up), read back and removed.
The child ends as an interpreter does: non-daemon threads joined, atexit functions run (a traced
run writes its trace then). Only the server's main thread runs when it forks, so nothing is held
by a thread that would not exist in the child.
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
            answer = run(request["script"], request["cwd"], float(request["timeout"]), request)
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


def run(script: str, cwd: str, timeout: float, request: dict | None = None) -> dict:
    request = request or {}
    out_path = err_path = request.get("output") or ""
    if not out_path:
        out_path, err_path = os.path.join(cwd, ".fork-stdout"), os.path.join(cwd, ".fork-stderr")
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _child(script, cwd, out_path, err_path, request)
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
    texts = ["", ""]  # with "output", the caller reads the file itself
    for index, path in enumerate(() if request.get("output") else (out_path, err_path)):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                texts[index] = handle.read()
            os.remove(path)
        except OSError:
            pass
    return {"returncode": os.waitstatus_to_exitcode(status), "stdout": texts[0], "stderr": texts[1], "timed_out": timed_out}


def _child(script: str, cwd: str, out_path: str, err_path: str, request: dict) -> None:
    code = 1
    try:
        os.chdir(cwd)
        write = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if out_path == err_path else os.O_TRUNC)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(os.open(out_path, write, 0o600), 1)
        os.dup2(os.open(err_path, write, 0o600) if err_path != out_path else 1, 2)
        sys.argv = [script, *request.get("args", ())]
        if request.get("env") is not None:
            os.environ.clear()
            os.environ.update(request["env"])
            _startup_hook()
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python script.py` puts it first
        try:
            runpy.run_path(os.path.abspath(script), run_name="__main__")  # __file__ absolute, argv[0] as given: as python does
            code = 0
        except SystemExit as exc:  # as the interpreter treats it: None 0, an int itself, else printed and 1
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        _exit_as_python()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _startup_hook() -> None:
    """What lower-trace's startup hook (lower_trace_startup.pth) does at a fresh interpreter's start,
    done again under the child's environment: the server started untraced."""
    import site

    for folder in [*site.getsitepackages(), site.getusersitepackages()]:
        path = os.path.join(folder, "lower_trace_startup.pth")
        if os.path.exists(path):
            sys.modules.pop("lower_trace.startup.hook", None)  # its "done already" flag starts anew
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith("import"):
                        exec(line, {"__name__": "lower_trace_startup"})  # as site.py runs a .pth's import lines
            return


def _exit_as_python() -> None:
    """What the interpreter does before it exits: join non-daemon threads, run atexit functions."""
    import atexit
    import threading

    try:
        threading._shutdown()  # type: ignore[attr-defined]
    except Exception:
        traceback.print_exc()
    atexit._run_exitfuncs()


if __name__ == "__main__":
    main()
