"""The trace directory's layout: every name in it, run folders, snapshot digests and packing.

The writer is store/writer.py, the reader store/reader.py; both take their names from here.

Layout (this module owns every name in it)::

    {trace_dir}/{script}/
        report.html           # a pointer page to the latest run's report
        edits/                # working copies of the generated source (edits/working_copies.py)
        {run_id}/             # one process run: run-YYYYmmdd-HHMMSS-PID[-N]
            trace.jsonl       # records, one JSON object per line, appended as things happen
            snapshots.jsonl   # one line per distinct IR / source text: {"digest", "stream", "deflate", "crc"}
                              # (format 2: see SnapshotPacker), {"digest", "text"} (format 1)
            report.html       # the run's report (render/)
            launches/k1-1/    # data mode: launch 1 of kernel k1, its tensors (in-A.npy, out-C.npy, ...)

``trace.jsonl`` record types: ``run`` (first line), ``kernel``, ``pass``, ``pass_start``
(replay), ``pass_open``, ``codegen``, ``device`` (device_model.py), ``kernel_end``, ``note``
(shapes: model.py). Records name snapshots by digest (20 hex
digits of BLAKE2b of the text). Both files are only ever appended to and every
line is flushed when written, so a process killed half-way leaves a trace that
loads (a torn last line is skipped). JSON is written ASCII-only, so any text
(lone surrogates, U+2028) survives. One pack file rather than a file per
snapshot: appends are cheap, a 100-kernel run is two files, not thousands.

Format history (bump FORMAT_VERSION and add a line for every change; the loader
keeps reading every older version, see testing/fixtures):
    1 -- first version. (pass_open records came later, without a bump: a reader that does not
         know a record type skips it, and such a trace loads as it did before. So did ``device``
         records, which `lower-trace device` may append to a finished run, after its other lines.)
    2 -- snapshots.jsonl holds its texts compressed: each line one piece of the file's one deflate
         stream ("deflate"), 8x smaller than format 1's "text" lines. Bumped because a format-1
         reader would misread such a trace: it takes a pack line without "text" for a damaged
         one and shows every snapshot empty; told "format 2", it says to upgrade instead. The
         reader reads "text" lines too (format-1 traces, and a pack that holds both).
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import time
import zlib
from typing import Any

FORMAT_VERSION = 2
MANIFEST = "trace.jsonl"
SNAPSHOTS = "snapshots.jsonl"
IR = "ir.jsonl"  # pass inputs as TVM's JSON, for reproducers and replay
REPRO = "repro"  # a run's reproducers: one folder per failed pass
LAUNCHES = "launches"  # data mode: a folder per launch (k1-1/), its tensors as .npy
REPORT = "report.html"
TRACER_FAULTS = "tracer-faults.txt"  # the tracebacks of the tracer's own faults, for a bug report
EDITS = "edits"
PYTEST_DIR = "pytest"  # under the trace root: `pytest --lower-trace` keeps a folder per test in it


def launch_dir(run_dir: str, kernel_id: str, n: int) -> str:
    """Where launch n of a kernel keeps its tensors: launches/k1-1."""
    return os.path.join(run_dir, LAUNCHES, f"{kernel_id}-{n}")


def script_dir_of(trace_dir: str, script: str) -> str:
    """The folder of one script's runs (and its working copies)."""
    return os.path.abspath(os.path.join(trace_dir, script))


def new_run_dir(script_dir: str) -> str:
    """A fresh run folder name under script_dir (not created): run-<time>-<pid>[-n]."""
    base = f"run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    candidate, n = base, 1
    while os.path.exists(os.path.join(script_dir, candidate)):
        n += 1
        candidate = f"{base}-{n}"
    return os.path.join(script_dir, candidate)


class TraceNotFound(LookupError):
    """The given path holds no trace."""


def pack_ir(text: str) -> str:
    """A module's TVM JSON as stored: zlib level 1 (a third of a millisecond for a GEMM's IR,
    8x smaller: TVM's JSON is several times the size of the printed IR) in base64."""
    return base64.b64encode(zlib.compress(text.encode("utf-8"), 1)).decode("ascii")


def unpack_ir(stored: str) -> str:
    return zlib.decompress(base64.b64decode(stored)).decode("utf-8")


class SnapshotPacker:
    """The lines of snapshots.jsonl (format 2), for one writer in one process: the texts go through
    one deflate stream (zlib level 1), sync-flushed after each text, so each line holds exactly its
    text's piece -- a complete JSON line that a killed process leaves whole or torn, like any
    other. The stream finds what consecutive snapshots share (a pass changes a few lines of a
    module): a GEMM's 234 KB of snapshot lines become 27 KB, where compressing each text alone
    gives 81 KB at three times the cost. A piece decodes only after every piece of its stream
    before it, from the line with "start"; "stream" (the writing process's id) keeps apart the
    streams of a forked child writing into the same file, "crc" (CRC-32 of the text's UTF-8)
    tells a damaged piece."""

    def __init__(self, stream: int) -> None:
        self.stream = stream
        self._deflate: Any = None

    def line(self, digest: str, text: str) -> str:
        data = text.encode("utf-8", "surrogatepass")
        record: dict[str, Any] = {"digest": digest, "stream": self.stream}
        if self._deflate is None:
            self._deflate = zlib.compressobj(1, zlib.DEFLATED, -15)  # raw deflate: no header per file
            record["start"] = True
        piece = self._deflate.compress(data) + self._deflate.flush(zlib.Z_SYNC_FLUSH)
        record["deflate"] = base64.b64encode(piece).decode("ascii")
        record["crc"] = zlib.crc32(data)
        return json.dumps(record) + "\n"


class SnapshotUnpacker:
    """Reads the texts of snapshots.jsonl's lines, in file order: "text" (format 1) as it is,
    "deflate" pieces through their stream. A piece that does not decode to its CRC breaks its
    stream until the stream's next "start": those texts read as None (the caller says they are
    missing)."""

    def __init__(self) -> None:
        self._streams: dict[Any, Any] = {}

    def text(self, entry: dict[str, Any]) -> str | None:
        text = entry.get("text")
        if isinstance(text, str):
            return text
        piece, stream = entry.get("deflate"), entry.get("stream")
        if not isinstance(piece, str) or not isinstance(stream, int):
            return None
        if entry.get("start") is True:
            self._streams[stream] = zlib.decompressobj(-15)
        inflate = self._streams.get(stream)
        if inflate is None:
            return None
        try:
            data = inflate.decompress(base64.b64decode(piece, validate=True))
            if zlib.crc32(data) != entry.get("crc"):
                raise ValueError("CRC mismatch")
            return data.decode("utf-8", "surrogatepass")
        except (ValueError, zlib.error):  # binascii.Error and UnicodeDecodeError are ValueErrors
            del self._streams[stream]  # what follows in this stream cannot be decoded
            return None


def digest_of(text: str) -> str:
    """Content address of a snapshot: 20 hex digits of BLAKE2b."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


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
    tests = os.path.join(path, PYTEST_DIR)  # the traces `pytest --lower-trace` kept: a level deeper
    if list_runs(tests):
        raise TraceNotFound(f"{path}: no trace of a script here; the traces pytest --lower-trace kept are in {tests} (lower-trace list --runs {tests})")
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
    return sorted(set(found), key=lambda run: (_mtime(os.path.join(run, MANIFEST)), run))


def _mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:  # removed meanwhile (another process cleaning up)
        return 0.0


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
