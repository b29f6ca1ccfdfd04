"""The run's job queue: printing snapshots, appending records, feeding the listeners.

Jobs run in the order they were submitted, so a record's snapshots are always
resolved before the record is written: on a worker thread (``threaded=True``),
or right away on the submitting thread.

Which one is a trade measured on TileLang 0.1.15 (benchmarks/sweep.py): TVM holds
the GIL for much of printing, so the thread overlaps only part of it, and the
hand-overs cost CPU. With a spare core the thread shortens the run (a GEMM sweep
1.18x untraced wall instead of 1.36x) for more CPU (1.44x instead of 1.36x); on
one core (taskset) it can only cost, so the run picks it by the cores it may use.

Threaded, jobs are queued without a wake-up and the worker is woken only for
work worth starting at once (``urgent``: printing) or when enough has piled up.
Either way ``on_idle`` runs when the queue is empty (the store flushes its files
then), so a killed process loses at most what was still queued.
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Callable

from lower_trace.capture.faults import guarded_job

Job = Callable[[], object]  # what a job returns is ignored
_BATCH = 64  # queued jobs that wake the worker even when none is urgent
_BACKLOG = 4096  # bounded: a compile far ahead of its printer waits rather than hoarding memory


class SnapshotRef:
    """A snapshot whose text is printed later; ``digest`` is set when it has been."""

    __slots__ = ("digest", "ir")

    def __init__(self, digest: str = "") -> None:
        self.digest = digest
        self.ir = ""  # digest of the content's TVM JSON, once kept (replay)


class Worker:
    def __init__(self, on_fault: Callable[[BaseException], None], on_idle: Callable[[], None] | None = None, threaded: bool = False) -> None:
        self._on_fault = on_fault
        self.threaded = threaded
        self._on_idle = on_idle
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._jobs: collections.deque[Job] = collections.deque()
        self._waiting = False  # the worker sleeps on _wake (read without the lock: see _signal)
        self._stop = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._closed = False
        self._later: collections.deque[Job] = collections.deque()  # deferred until close (no thread)

    def submit(self, job: Job, urgent: bool = False) -> None:
        """Run job after every job submitted before it (now, unless threaded)."""
        if not self.threaded or self._closed or not self._ensure_thread():
            guarded_job(self._on_fault, job)  # no thread to be had (interpreter shutting down): run it here
            self._idle()
            return
        jobs = self._jobs
        jobs.append(job)
        if urgent or len(jobs) >= _BATCH:
            self._signal()
            if len(jobs) > _BACKLOG and threading.current_thread() is not self._thread:
                self.wait()

    def defer(self, job: Job) -> None:
        """Run job once the compile no longer waits for it: on the thread, like any job; without
        one (one core), when the run closes, after every job submitted before it. For derived work
        that is slow and not needed by the compile (ptxas' resource report of a kernel's PTX)."""
        if self.threaded and not self._closed:
            self.submit(job)
        elif self._closed:
            self.submit(job)  # the run already closed: nothing left to wait for
        else:
            self._later.append(job)

    def kick(self) -> None:
        """Start on whatever is queued now."""
        if self._jobs:
            self._signal()

    def wait(self) -> None:
        """Block until every job submitted so far has run (on the worker itself: they have, up to
        the job asking)."""
        if self._thread is None or self._closed or threading.current_thread() is self._thread:
            return
        done = threading.Event()
        self._jobs.append(done.set)  # straight in: a wait must not itself wait for the backlog
        self._signal()
        done.wait()

    def close(self) -> None:
        """Run what is queued, then stop the thread. Later jobs run inline."""
        with self._lock:
            thread, self._closed = self._thread, True
            self._stop = True
            self._wake.notify()
        if thread is not None and thread.is_alive():
            thread.join()
        while self._jobs:  # a thread that never started, or a fork's leftovers
            guarded_job(self._on_fault, self._jobs.popleft())
        while self._later:
            guarded_job(self._on_fault, self._later.popleft())
        self._idle()

    def _signal(self) -> None:
        # The worker sets _waiting under the lock and checks the queue again before it
        # sleeps, so reading the flag here without the lock cannot lose a wake-up.
        if self._waiting:
            with self._lock:
                self._wake.notify()

    def _ensure_thread(self) -> bool:
        if self._thread is not None and self._pid == os.getpid():
            return True
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's thread did not come along
                self._jobs = collections.deque()
                self._thread = None
                self._waiting = False
                self._pid = os.getpid()
            if self._thread is not None:
                return True
            thread = threading.Thread(target=self._loop, name="lower-trace-writer", daemon=True)
            try:
                thread.start()
            except RuntimeError:
                return False
            self._thread = thread
            return True

    def _loop(self) -> None:
        jobs, on_fault = self._jobs, self._on_fault
        while True:
            while jobs:
                guarded_job(on_fault, jobs.popleft())  # a job's fault must never reach the compile
            self._idle()
            with self._lock:
                if not jobs:
                    if self._stop:
                        return
                    self._waiting = True
                    while not jobs and not self._stop:
                        self._wake.wait()
                    self._waiting = False

    def _idle(self) -> None:
        if self._on_idle is not None:
            guarded_job(self._on_fault, self._on_idle)
