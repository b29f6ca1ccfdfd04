"""Appending one run's records and snapshots to its folder (the names: store/layout.py)."""

from __future__ import annotations

import json
import os
import threading
import weakref
from typing import Any

from lower_trace.model import RunInfo
from lower_trace.model_json import to_json
from lower_trace.store.layout import FORMAT_VERSION, IR, MANIFEST, SNAPSHOTS, SnapshotPacker, pack_ir

_OPEN: weakref.WeakSet[TraceWriter] = weakref.WeakSet()


def _flush_before_fork() -> None:
    """A forked child would write the parent's buffered lines again (a stream piece twice breaks
    the stream): they go to the OS first."""
    for writer in list(_OPEN):
        try:
            writer.flush()
        except OSError:
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_flush_before_fork)


class TraceWriter:
    """Appends one run's records and snapshots to its directory.

    Thread-safe. Creates nothing until the first write, so a run that compiles
    no kernel leaves no empty folder behind. Lines are buffered; ``flush()`` (the
    worker calls it whenever its queue runs dry) hands them to the OS, so a killed
    process loses at most what was queued. Raises OSError on failure; the caller
    decides how loud to be (see capture.run).
    """

    def __init__(self, run_dir: str, run: RunInfo, existing: bool = False) -> None:
        self.run_dir = run_dir
        self.run = run
        self._header = not existing  # existing: appending to a run that has its header (lower-trace device)
        self._lock = threading.Lock()
        self._manifest: Any = None
        self._snapshots: Any = None
        self._stored: set[str] = set()
        self._ir: Any = None
        self._ir_stored: set[str] = set()
        self._packer = SnapshotPacker(os.getpid())
        self._unflushed: set[Any] = set()  # the files written since the last flush()

    def _open(self) -> None:
        if self._manifest is None:
            os.makedirs(self.run_dir, exist_ok=True)
            self._snapshots = open(os.path.join(self.run_dir, SNAPSHOTS), "a", encoding="ascii")  # noqa: SIM115  (open for the run; close() closes it)
            self._packer = SnapshotPacker(os.getpid())  # a new stream in a file (re)opened
            manifest = open(os.path.join(self.run_dir, MANIFEST), "a", encoding="ascii")  # noqa: SIM115  (likewise)
            if self._header:
                header = {"type": "run", "format": FORMAT_VERSION, **to_json(self.run)}
                manifest.write(json.dumps(header) + "\n")
                manifest.flush()
            self._manifest = manifest
            _OPEN.add(self)

    def append(self, record_type: str, data: dict[str, Any]) -> None:
        line = json.dumps({"type": record_type, **data}) + "\n"
        with self._lock:
            self._open()
            self._manifest.write(line)
            self._unflushed.add(self._manifest)

    def add_snapshot(self, digest: str, text: str) -> None:
        """Store text under its digest once; later calls with the same digest cost nothing."""
        if digest in self._stored:
            return
        with self._lock:
            if digest in self._stored:
                return
            self._open()
            if self._packer.stream != os.getpid():  # a forked child: a stream of its own
                self._packer = SnapshotPacker(os.getpid())
            # Snapshots go out before any record that names them (records are written after).
            self._snapshots.write(self._packer.line(digest, text))
            self._unflushed.add(self._snapshots)
            self._stored.add(digest)

    def add_ir(self, digest: str, text: str, now: bool = False) -> None:
        """Store a module's TVM JSON under its digest once; now: in the OS's hands on return
        (it must outlive a process that dies in the next pass)."""
        with self._lock:
            if digest not in self._ir_stored:
                self._open()
                if self._ir is None:
                    self._ir = open(os.path.join(self.run_dir, IR), "a", encoding="ascii")  # noqa: SIM115  (likewise)
                self._ir.write(json.dumps({"digest": digest, "zjson": pack_ir(text)}) + "\n")
                self._unflushed.add(self._ir)
                self._ir_stored.add(digest)
            if now and self._ir is not None:
                self._ir.flush()

    def append_now(self, record_type: str, data: dict[str, Any]) -> None:
        """Append a record and hand the manifest to the OS at once (before a pass that may crash)."""
        line = json.dumps({"type": record_type, **data}) + "\n"
        with self._lock:
            self._open()
            self._manifest.write(line)
            self._manifest.flush()

    def flush(self) -> None:
        if not self._unflushed:  # the worker asks whenever its queue runs dry: mostly nothing new
            return
        with self._lock:
            # The snapshot pack first: a record on disk never names a snapshot that is not.
            for handle in (self._snapshots, self._ir, self._manifest):
                if handle in self._unflushed:
                    handle.flush()
            self._unflushed.clear()

    def close(self) -> None:
        with self._lock:
            for handle in (self._snapshots, self._ir, self._manifest):
                if handle is not None:
                    handle.close()
            self._manifest = self._snapshots = self._ir = None
            self._unflushed.clear()
