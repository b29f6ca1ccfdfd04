"""Printing and writing, off the compiler's thread.

Printing an IR module takes about a millisecond and TVM releases the GIL while
it prints and while its passes run, so a worker thread that prints snapshots
and appends records runs alongside the compile instead of inside it. Jobs run
in the order they were submitted: a record's snapshots are always resolved
before the record is written.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable

Job = Callable[[], None]
_STOP = None
_BACKLOG = 4096  # bounded: a compile far ahead of its printer waits rather than hoarding memory


class SnapshotRef:
    """A snapshot whose text is printed later; ``digest`` is set when it has been."""

    __slots__ = ("digest",)

    def __init__(self, digest: str = "") -> None:
        self.digest = digest


class Worker:
    def __init__(self, on_fault: Callable[[BaseException], None]) -> None:
        self._on_fault = on_fault
        self._lock = threading.Lock()
        self._queue: queue.Queue[Job | None] = queue.Queue(_BACKLOG)
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._closed = False

    def submit(self, job: Job) -> None:
        """Run job on the worker thread, after every job submitted before it."""
        if self._closed or not self._ensure_thread():
            self._run(job)  # no thread to be had (interpreter shutting down): run it here
            return
        self._queue.put(job)

    def wait(self) -> None:
        """Block until every job submitted so far has run."""
        if self._thread is None or self._closed:
            return
        done = threading.Event()
        self.submit(done.set)
        done.wait()

    def close(self) -> None:
        """Run what is queued, then stop the thread. Later jobs run inline."""
        with self._lock:
            thread, self._closed = self._thread, True
        if thread is not None and thread.is_alive():
            self._queue.put(_STOP)
            thread.join()

    def _ensure_thread(self) -> bool:
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's thread did not come along
                self._queue = queue.Queue(_BACKLOG)
                self._thread = None
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
        while True:
            job = self._queue.get()
            if job is _STOP:
                return
            self._run(job)

    def _run(self, job: Job) -> None:
        try:
            job()
        except Exception as exc:  # a fault here must never reach the compile
            self._on_fault(exc)
