"""`lower-trace reduce`: a failing pass's input shrunk to a module that still fails the same way.

Delta debugging (Zeller's ddmin) over the places the IR can be made smaller (integrations/
reruns/reduce_ir.py: functions, statements, loops, branches, unused buffers and parameters, annotations,
stored values, loop extents, buffer shapes), one kind at a time, coarse to fine, round after
round until a round changes nothing: the result is 1-minimal -- taking away any one more place
makes it stop failing. A candidate is tried as the reproducer itself
runs it: its repro.py on the candidate's input.json, in a child process with a timeout (a pass
may abort or hang), `jobs` at a time; TVM's well-formedness verifier filters candidates first.

Interesting (C-Reduce's word) by default: the child fails with the original's exception type and
a message equal to the original's once numbers are blanked; --matches REGEX on the message
instead; --test SCRIPT: the script, given a candidate's folder, exits 0 (forked warm as well when
its #! line starts this interpreter: rerun/check_runs.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lower_trace.integrations.reruns import reduce_ir
from lower_trace.rerun.check_runs import compiler_module, executable_python_script
from lower_trace.rerun.repro import ERROR, INPUT, SCRIPT
from lower_trace.rerun.warm_children import WarmChildren, quiet_environment

# Coarse to fine: what takes away most first; what only makes numbers smaller last.
KINDS = ("function", "statement", "loop", "branch", "attribute", "buffer", "parameter", "annotation", "layout", "value", "extent", "shape")
REDUCED = "reduced.py"
_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Exit|Interrupt))(?:: ?(.*))?$")


class NotInteresting(RuntimeError):
    """The unreduced input does not fail the way asked for: nothing to reduce."""


@dataclass(frozen=True)
class Failure:
    type: str
    message: str  # the whole message, every line of it

    @property
    def headline(self) -> str:
        return self.message.split("\n", 1)[0]


@dataclass
class Reduction:
    before: int  # statements
    after: int
    tries: int
    ill_formed: int  # candidates the verifier rejected (not run)
    timeouts: int
    seconds: float
    folder: str
    failure: Failure | None
    interrupted: bool = False
    original: Failure | None = None  # the unreduced input's


def failure_of(stderr: str) -> Failure | None:
    """The exception a reproducer's child died of: the last unindented line naming one (a
    traceback's frames are indented), with the lines of its message that follow it."""
    lines = stderr.strip().splitlines()
    for at in range(len(lines) - 1, -1, -1):
        line = lines[at]
        match = _EXCEPTION.match(line) if line[:1].strip() else None
        if match:
            return Failure(match.group(1), "\n".join([(match.group(2) or "").strip(), *lines[at + 1 :]]).strip())
    return None


def normalised(message: str) -> str:
    """A message's first line with what a reduction changes blanked: numbers (extents, indices,
    line numbers). Later lines quote the IR, which a reduction changes."""
    return re.sub(r"\d+", "N", message.split("\n", 1)[0].split("  --> ")[0]).strip()


class Tester:
    """Runs candidates; says whether each is interesting; counts and caches."""

    def __init__(self, script: str, timeout: float, matches: str | None, test: str | None, jobs: int) -> None:
        self.script, self.timeout, self.test = script, timeout, test
        self.matches = re.compile(matches) if matches else None
        self.reference: Failure | None = None
        self.tries = self.ill_formed = self.timeouts = 0
        self._seen: dict[str, tuple[bool, Failure | None]] = {}
        self.stop = threading.Event()  # Ctrl-C: no more tries
        self.best: str | None = None  # the shortest interesting input tried (what Ctrl-C keeps)
        self.first_timed_out = False  # the unreduced input ran past the timeout
        self._lock = threading.Lock()
        self.work = tempfile.mkdtemp(prefix="lower-trace-reduce-")
        self.env = quiet_environment()
        # The reproducer's own runs fork from a Python that imported the compiler once, and so does
        # a --test script whose #! line names this interpreter; any other runs as it is.
        self.test_script = executable_python_script(test) if test else None
        module = _compiler_module(script) if not test else compiler_module() if self.test_script else None
        self.warm = WarmChildren([module], jobs, self.env) if module else None

    def close(self, kill: bool = False) -> None:
        if self.warm is not None:
            self.warm.close(kill)
        shutil.rmtree(self.work, ignore_errors=True)

    def run(self, text: str) -> tuple[bool, Failure | None]:
        """(interesting, the failure) of an input given as TVM's JSON."""
        key = hashlib.blake2b(text.encode(), digest_size=12).hexdigest()
        with self._lock:
            if key in self._seen:
                return self._seen[key]
            if self.stop.is_set():
                return (False, None)
            self.tries += 1
        folder = os.path.join(self.work, key)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, INPUT), "w", encoding="utf-8") as handle:
            handle.write(text)
        shutil.copy(self.script, os.path.join(folder, SCRIPT))
        timed_out = False
        try:
            if self.warm is not None and self.test_script:
                proc = self.warm.run(self.test_script, folder, self.timeout, [folder], self.env)
            elif self.warm is not None:
                proc = self.warm.run(os.path.join(folder, SCRIPT), folder, self.timeout)
            else:
                command = [str(self.test), folder]
                proc = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout, cwd=folder, stdin=subprocess.DEVNULL, env=self.env)
        except subprocess.TimeoutExpired:
            with self._lock:
                self.timeouts += 1
            timed_out = True
            result: tuple[bool, Failure | None] = (False, None)
        else:
            failure = failure_of(proc.stderr) if proc.returncode != 0 else None
            result = (proc.returncode == 0 if self.test else self._interesting(failure), failure)
        shutil.rmtree(folder, ignore_errors=True)
        if self.stop.is_set() and not result[0]:
            return result  # cut short by Ctrl-C: not an answer to remember
        if timed_out and self.reference is None:
            self.first_timed_out = True
        with self._lock:
            self._seen[key] = result
            if result[0] and (self.best is None or len(text) < len(self.best)):
                self.best = text
        return result

    def run_result(self, text: str) -> Failure | None:
        """The failure an input already tried gave (None if not tried or none)."""
        key = hashlib.blake2b(text.encode(), digest_size=12).hexdigest()
        with self._lock:
            seen = self._seen.get(key)
        return seen[1] if seen else None

    def count_ill_formed(self) -> None:
        with self._lock:
            self.ill_formed += 1

    def _interesting(self, failure: Failure | None) -> bool:
        if failure is None:
            return False
        if self.matches is not None:
            return bool(self.matches.search(failure.message))
        ref = self.reference
        return ref is not None and failure.type == ref.type and normalised(failure.message) == normalised(ref.message)


def _compiler_module(script: str) -> str:
    """What the reproducer imports its compiler as: tilelang, or plain TVM's tvm."""
    with open(script, encoding="utf-8") as handle:
        return "tilelang" if re.search(r"^\s*import tilelang\b", handle.read(), re.MULTILINE) else "tvm"


def ddmin(items: Sequence[Any], interesting: Callable[[list[Any]], bool], jobs: int, stop: threading.Event | None = None) -> list[Any]:
    """A 1-minimal sublist of items (as kept) for which interesting(kept) holds, given it holds
    for all of them. The subsets and complements of a split are tried `jobs` at a time; the
    first (in order) that is interesting is taken."""
    kept = list(items)
    n = 2
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        while len(kept) >= 2:
            chunks = [kept[i * len(kept) // n : (i + 1) * len(kept) // n] for i in range(n)]
            candidates = [c for c in chunks if c] + ([[x for c2 in chunks if c2 is not c for x in c2] for c in chunks] if n > 2 else [])
            found = None
            for start in range(0, len(candidates), max(1, jobs)):
                batch = candidates[start : start + max(1, jobs)]
                answers = list(pool.map(interesting, batch))
                if stop is not None and stop.is_set():
                    raise KeyboardInterrupt
                found = next((c for c, ok in zip(batch, answers, strict=True) if ok), None)
                if found is not None:
                    break
            if found is not None:
                n = 2 if len(found) < len(kept) and found in chunks else max(n - 1, 2)
                kept = found
            elif n < len(kept):
                n = min(len(kept), 2 * n)
            else:
                break
        if len(kept) == 1 and interesting([]):
            kept = []
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)  # the tries in flight end with their servers
        raise
    pool.shutdown()
    return kept


def reduce(
    repro_folder: str, out_folder: str, timeout: float = 120.0, jobs: int = 0, matches: str | None = None, test: str | None = None,
    say: Callable[[str], None] = lambda line: None, warn: Callable[[str], None] = lambda line: None,
) -> Reduction:  # fmt: skip
    """Reduce the reproducer in repro_folder into out_folder (created); Ctrl-C keeps the best so far."""
    started = time.perf_counter()
    with open(os.path.join(repro_folder, INPUT), encoding="utf-8") as handle:
        original = handle.read()
    jobs = jobs or os.cpu_count() or 1
    tester = Tester(os.path.join(repro_folder, SCRIPT), timeout, matches, test, jobs)
    best_text, best_failure = original, None
    mod = reduce_ir.load(original)
    before = reduce_ir.statement_count(mod)
    interrupted = False
    previous = _on_ctrl_c(tester)
    try:
        ok, tester.reference = tester.run(original)
        best_failure = tester.reference
        if not ok and not tester.test and matches is None:
            ok = tester.reference is not None
        if tester.stop.is_set():
            raise KeyboardInterrupt
        if not ok:
            raise NotInteresting(_why_not(tester, matches, test))
        failed_kinds: set[str] = set()
        changed = True
        while changed:
            changed = False
            for kind in KINDS:
                if tester.stop.is_set():
                    raise KeyboardInterrupt
                try:
                    smaller = _one_kind(mod, kind, tester, jobs, say)
                except Exception as exc:  # a fault of the reducer's own: that kind is skipped, the rest goes on
                    if kind not in failed_kinds:
                        failed_kinds.add(kind)
                        warn(f"the {kind} round failed ({type(exc).__name__}: {exc}); going on without it (please report this)")
                    continue
                if smaller is not None:
                    mod, best_text, changed = smaller, reduce_ir.save(smaller), True
                    best_failure = tester.run(best_text)[1] or best_failure
    except KeyboardInterrupt:
        interrupted = True
        if tester.best is not None and len(tester.best) < len(best_text):  # a try of the kind it was at
            best_text = tester.best
            best_failure = tester.run_result(best_text) or best_failure
    finally:
        tester.close(kill=interrupted)
    try:  # a second Ctrl-C while the result is written only sets the stop again
        _write(out_folder, repro_folder, best_text, reduce_ir.script(reduce_ir.load(best_text)), best_failure, tester.reference)
        after = reduce_ir.statement_count(reduce_ir.load(best_text))
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    seconds = time.perf_counter() - started
    return Reduction(before, after, tester.tries, tester.ill_formed, tester.timeouts, seconds, out_folder, best_failure, interrupted, tester.reference)


def _on_ctrl_c(tester: Tester) -> Any:
    """Ctrl-C sets the tester's stop (checked between tries, never raised inside TVM's callbacks,
    where it would turn into a RuntimeError) and ends the warm Pythons' runs at once; a second
    one does the same. The handler it replaced (None off the main thread, where none is set)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int, frame: Any) -> None:
        tester.stop.set()
        if tester.warm is not None:
            tester.warm.kill()

    return signal.signal(signal.SIGINT, stop)


def _why_not(tester: Tester, matches: str | None, test: str | None) -> str:
    """Why the unreduced input is not interesting (NotInteresting's message)."""
    if tester.first_timed_out:
        return f"it ran longer than --timeout {tester.timeout:g} s; give it more time"
    if test:
        return f"{test} exits non-zero on it (it must exit 0 on the unreduced input)"
    if matches and tester.reference:
        return f"its failure ({tester.reference.type}: {tester.reference.headline[:160]}) does not match {matches!r}"
    return "it does not fail"


def _one_kind(mod: Any, kind: str, tester: Tester, jobs: int, say: Callable[[str], None]) -> Any | None:
    """One round of delta debugging over the module's sites of one kind: the smaller module, or
    None when none of them can go."""
    sites = reduce_ir.sites(mod, kind)
    if not sites:
        return None
    say(f"{kind}s: {len(sites)} to try, {reduce_ir.statement_count(mod)} statements now, {tester.tries} tries so far")
    # A candidate must not be worse than the module it came from: ill-formed where that is well
    # formed (late in a pipeline TVM's verifier rejects the input itself), or with more
    # out-of-bounds accesses.
    checked = reduce_ir.well_formed(mod)
    bounds = reduce_ir.out_of_bounds(mod) if kind == "shape" else 0

    def interesting(kept: list[Any]) -> bool:
        candidate = reduce_ir.without(mod, [s for s in sites if s not in kept])
        if (checked and not reduce_ir.well_formed(candidate)) or (kind == "shape" and reduce_ir.out_of_bounds(candidate) > bounds):
            tester.count_ill_formed()
            return False
        return tester.run(reduce_ir.save(candidate))[0]

    kept = ddmin(sites, interesting, jobs, tester.stop)
    return reduce_ir.without(mod, [s for s in sites if s not in kept]) if len(kept) < len(sites) else None


def _write(out_folder: str, repro_folder: str, text: str, script: str, failure: Failure | None, original: Failure | None) -> None:
    """The reduced reproducer: its input, the reproducer's script (its docstring's error made the
    one this input raises), the module as TVMScript, and the error (none: a --test reduction)."""
    os.makedirs(out_folder, exist_ok=True)
    with open(os.path.join(out_folder, INPUT), "w", encoding="utf-8") as handle:
        handle.write(text)
    with open(os.path.join(repro_folder, SCRIPT), encoding="utf-8") as handle:
        runner = handle.read()
    runner = runner.replace("Reproducer written by lower-trace:", "Reproducer written by lower-trace and reduced by lower-trace reduce:", 1)
    if failure is not None and failure != original:
        runner = re.sub(r"^Error: .*$", lambda _: f"Error: {failure.type}: {failure.headline}", runner, count=1, flags=re.MULTILINE)
    with open(os.path.join(out_folder, SCRIPT), "w", encoding="utf-8") as handle:
        handle.write(runner)
    with open(os.path.join(out_folder, REDUCED), "w", encoding="utf-8") as handle:
        handle.write(f"# The input lower-trace reduce left (TVMScript, for reading; repro.py runs {INPUT})\n{script.rstrip()}\n")
    if failure is not None:
        with open(os.path.join(out_folder, ERROR), "w", encoding="utf-8") as handle:
            handle.write(f"{failure.type}: {failure.message}\n")
