"""The trace directory: the on-disk interchange format, written and read back.

Layout of one process run::

    {trace_dir}/{script}/{run_id}/
        trace.jsonl       # records, one JSON object per line, appended as things happen
        snapshots.jsonl   # {"digest", "text"} per line: each distinct IR / source text once
        report.html       # written by the HTML renderer

``trace.jsonl`` record types: ``run`` (first line), ``kernel``, ``pass``,
``codegen``, ``kernel_end``, ``note``. Records name snapshots by digest (20 hex
digits of BLAKE2b of the text). Both files are only ever appended to and every
line is flushed when written, so a process killed half-way leaves a trace that
loads (a torn last line is skipped). JSON is written ASCII-only, so any text
(lone surrogates, U+2028) survives. One pack file rather than a file per
snapshot: appends are cheap, a 100-kernel run is two files, not thousands.

Format history (bump FORMAT_VERSION and add a line for every change; the loader
keeps reading every older version, see testing/fixtures):
    1 -- first version.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator
from typing import Any

from .model import (
    ErrorInfo,
    KernelStatus,
    KernelTrace,
    RunInfo,
    Trace,
    codegen_from_json,
    pass_from_json,
    run_from_json,
    to_json,
)

FORMAT_VERSION = 1
MANIFEST = "trace.jsonl"
SNAPSHOTS = "snapshots.jsonl"
REPORT = "report.html"


class TraceNotFound(LookupError):
    """The given path holds no trace."""


def digest_of(text: str) -> str:
    """Content address of a snapshot: 20 hex digits of BLAKE2b."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


class TraceWriter:
    """Appends one run's records and snapshots to its directory.

    Thread-safe. Creates nothing until the first write, so a run that compiles
    no kernel leaves no empty folder behind. Raises OSError on failure; the
    caller decides how loud to be (see capture.run).
    """

    def __init__(self, run_dir: str, run: RunInfo) -> None:
        self.run_dir = run_dir
        self.run = run
        self._lock = threading.Lock()
        self._manifest: Any = None
        self._snapshots: Any = None
        self._stored: set[str] = set()

    def _open(self) -> None:
        if self._manifest is None:
            os.makedirs(self.run_dir, exist_ok=True)
            self._snapshots = open(os.path.join(self.run_dir, SNAPSHOTS), "a", encoding="ascii")
            manifest = open(os.path.join(self.run_dir, MANIFEST), "a", encoding="ascii")
            header = {"type": "run", "format": FORMAT_VERSION, **to_json(self.run)}
            manifest.write(json.dumps(header) + "\n")
            manifest.flush()
            self._manifest = manifest

    def append(self, record_type: str, data: dict[str, Any]) -> None:
        line = json.dumps({"type": record_type, **data}) + "\n"
        with self._lock:
            self._open()
            self._manifest.write(line)
            self._manifest.flush()

    def add_snapshot(self, digest: str, text: str) -> None:
        """Store text under its digest once; later calls with the same digest cost nothing."""
        if digest in self._stored:
            return
        line = json.dumps({"digest": digest, "text": text}) + "\n"
        with self._lock:
            if digest in self._stored:
                return
            self._open()
            # Snapshots go out before any record that names them (records are written after).
            self._snapshots.write(line)
            self._snapshots.flush()
            self._stored.add(digest)

    def close(self) -> None:
        with self._lock:
            for handle in (self._manifest, self._snapshots):
                if handle is not None:
                    handle.close()
            self._manifest = self._snapshots = None

    @property
    def started(self) -> bool:
        return self._manifest is not None


# --- reading ---------------------------------------------------------------


def _read_lines(manifest_path: str) -> Iterator[dict[str, Any]]:
    with open(manifest_path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line from a killed process
            if isinstance(record, dict):
                yield record


def find_run_dir(path: str) -> str:
    """Resolve a run folder, a script folder (its latest run) or a trace root (latest run in it)."""
    path = os.fspath(path)
    if os.path.isfile(os.path.join(path, MANIFEST)):
        return path
    if os.path.isfile(path) and os.path.basename(path) == MANIFEST:
        return os.path.dirname(path) or "."
    runs = list_runs(path)
    if runs:
        return runs[-1]
    if not os.path.exists(path):
        raise TraceNotFound(f"{path}: no such directory; pass a trace folder (default ./tmp/lower_trace_dir)")
    raise TraceNotFound(f"{path}: no trace here; run your script with TL_LOWER_TRACE=html first")


def list_runs(root: str) -> list[str]:
    """All run folders below root (itself, or one or two levels down), oldest first."""
    found = []
    if not os.path.isdir(root):
        return found
    for level in (root, *_subdirs(root)):
        if _has_manifest(level):
            found.append(level)
            continue
        for child in _subdirs(level):
            if _has_manifest(child):
                found.append(child)
    return sorted(set(found), key=lambda run: (os.path.getmtime(os.path.join(run, MANIFEST)), run))


def _has_manifest(path: str) -> bool:
    """A run folder: its manifest exists and holds at least the run header (a run that
    could not write a byte, e.g. on a full disk, is no run to show)."""
    try:
        return os.path.getsize(os.path.join(path, MANIFEST)) > 0
    except OSError:
        return False


def _subdirs(path: str) -> list[str]:
    try:
        return [entry.path for entry in os.scandir(path) if entry.is_dir()]
    except OSError:
        return []


def load_trace(path: str) -> Trace:
    """Read a trace directory back into model objects; needs no TVM or TileLang."""
    run_dir = find_run_dir(path)
    records = list(_read_lines(os.path.join(run_dir, MANIFEST)))
    if not records or records[0].get("type") != "run":
        raise TraceNotFound(f"{run_dir}: {MANIFEST} has no run header; not a lower-trace directory")
    header = records[0]
    version = int(header.get("format", 1))
    if version > FORMAT_VERSION:
        raise TraceNotFound(
            f"{run_dir}: trace format {version} is newer than this lower-trace reads ({FORMAT_VERSION}); upgrade lower-trace"
        )
    run = run_from_json(header)
    notes = list(run.notes)
    kernels: dict[str, dict[str, Any]] = {}
    for record in records[1:]:
        kind = record.get("type")
        kernel_id = str(record.get("kernel_id", record.get("kernel", "")))
        if kind == "note":
            notes.append(str(record.get("text", "")))
            continue
        entry = kernels.setdefault(kernel_id, {"kernel_id": kernel_id, "name": kernel_id, "passes": [], "codegen": []})
        if kind == "kernel":
            for key in ("name", "started", "target", "entry", "pass_configs"):
                if key in record:
                    entry[key] = record[key]
        elif kind == "pass":
            entry["passes"].append(pass_from_json(record))
        elif kind == "codegen":
            entry["codegen"].append(codegen_from_json(record))
        elif kind == "kernel_end":
            entry["status"] = KernelStatus(record.get("status", "ok"))
            entry["ms"] = float(record.get("ms", 0.0))
            if record.get("target"):
                entry["target"] = record["target"]
            if record.get("error"):
                err = record["error"]
                entry["error"] = ErrorInfo(str(err.get("type", "")), str(err.get("message", "")), str(err.get("traceback", "")))
    built = []
    for entry in kernels.values():
        entry["passes"] = tuple(sorted(entry["passes"], key=lambda p: p.seq))
        entry["codegen"] = tuple(sorted(entry["codegen"], key=lambda c: c.seq))
        built.append(KernelTrace(**entry))
    snapshots = _SnapshotPack(os.path.join(run_dir, SNAPSHOTS))

    return Trace(
        path=run_dir,
        run=RunInfo(**{**run.__dict__, "notes": tuple(notes)}),
        kernels=tuple(built),
        read_snapshot=snapshots.get,
        format=version,
    )


class _SnapshotPack:
    """Reads snapshots.jsonl on first use; a torn last line (killed writer) is skipped."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._texts: dict[str, str] | None = None

    def get(self, digest: str) -> str:
        if self._texts is None:
            self._texts = {}
            if os.path.isfile(self.path):
                for entry in _read_lines(self.path):
                    if isinstance(entry.get("digest"), str) and isinstance(entry.get("text"), str):
                        self._texts[entry["digest"]] = entry["text"]
        return self._texts.get(digest, "")
