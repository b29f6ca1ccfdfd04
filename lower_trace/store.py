"""The trace directory: the on-disk interchange format, written and read back.

Layout (this module owns every name in it)::

    {trace_dir}/{script}/
        report.html           # a pointer page to the latest run's report
        edits/                # working copies of the generated source (override.py)
        {run_id}/             # one process run: run-YYYYmmdd-HHMMSS-PID[-N]
            trace.jsonl       # records, one JSON object per line, appended as things happen
            snapshots.jsonl   # {"digest", "text"} per line: each distinct IR / source text once
            report.html       # the run's report (render/)

``trace.jsonl`` record types: ``run`` (first line), ``kernel``, ``pass``, ``pass_start``
(replay), ``pass_open``, ``codegen``, ``kernel_end``, ``note`` (shapes: model.py). Records name snapshots by digest (20 hex
digits of BLAKE2b of the text). Both files are only ever appended to and every
line is flushed when written, so a process killed half-way leaves a trace that
loads (a torn last line is skipped). JSON is written ASCII-only, so any text
(lone surrogates, U+2028) survives. One pack file rather than a file per
snapshot: appends are cheap, a 100-kernel run is two files, not thousands.

Format history (bump FORMAT_VERSION and add a line for every change; the loader
keeps reading every older version, see testing/fixtures):
    1 -- first version. (pass_open records came later, without a bump: a reader that does not
         know a record type skips it, and such a trace loads as it did before.)
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from typing import Any

from .model import (
    CRASHED,
    CRASHED_NESTED,
    ErrorInfo,
    KernelStatus,
    KernelTrace,
    PassRecord,
    PassStatus,
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
IR = "ir.jsonl"  # pass inputs as TVM's JSON, for reproducers and replay
REPRO = "repro"  # a run's reproducers: one folder per failed pass
REPORT = "report.html"
EDITS = "edits"
PYTEST_DIR = "pytest"  # under the trace root: `pytest --lower-trace` keeps a folder per test in it


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


def digest_of(text: str) -> str:
    """Content address of a snapshot: 20 hex digits of BLAKE2b."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


class TraceWriter:
    """Appends one run's records and snapshots to its directory.

    Thread-safe. Creates nothing until the first write, so a run that compiles
    no kernel leaves no empty folder behind. Lines are buffered; ``flush()`` (the
    worker calls it whenever its queue runs dry) hands them to the OS, so a killed
    process loses at most what was queued. Raises OSError on failure; the caller
    decides how loud to be (see capture.run).
    """

    def __init__(self, run_dir: str, run: RunInfo) -> None:
        self.run_dir = run_dir
        self.run = run
        self._lock = threading.Lock()
        self._manifest: Any = None
        self._snapshots: Any = None
        self._stored: set[str] = set()
        self._ir: Any = None
        self._ir_stored: set[str] = set()

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
            self._stored.add(digest)

    def add_ir(self, digest: str, text: str, now: bool = False) -> None:
        """Store a module's TVM JSON under its digest once; now: in the OS's hands on return
        (it must outlive a process that dies in the next pass)."""
        with self._lock:
            if digest not in self._ir_stored:
                self._open()
                if self._ir is None:
                    self._ir = open(os.path.join(self.run_dir, IR), "a", encoding="ascii")
                self._ir.write(json.dumps({"digest": digest, "zjson": pack_ir(text)}) + "\n")
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
        with self._lock:
            # The snapshot pack first: a record on disk never names a snapshot that is not.
            for handle in (self._snapshots, self._ir, self._manifest):
                if handle is not None:
                    handle.flush()

    def close(self) -> None:
        with self._lock:
            for handle in (self._snapshots, self._ir, self._manifest):
                if handle is not None:
                    handle.close()
            self._manifest = self._snapshots = self._ir = None

    @property
    def started(self) -> bool:
        return self._manifest is not None


# --- reading ---------------------------------------------------------------


class TraceDamaged(UserWarning):
    """Part of a trace could not be read (bytes that are not UTF-8, a line that is not a record);
    the rest was loaded. Issued with :func:`warnings.warn`; the CLI shows it as one line."""


def _read_lines(path: str, damaged: list[int]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of each readable line; damaged lines' numbers go to `damaged`.

    A torn last line (no line break: the writer was killed mid-line) is skipped silently.
    Raises OSError if the file cannot be read.
    """
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            line = raw.strip()
            if not line:
                continue
            try:
                record = json.loads(line.decode("utf-8"))  # written ASCII-only: any other byte is damage
            except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
                if raw.endswith(b"\n"):
                    damaged.append(number)
                continue
            if isinstance(record, dict):
                yield number, record
            else:
                damaged.append(number)


def _damage(path: str, damaged: list[int], consequence: str) -> str:
    shown = ", ".join(map(str, damaged[:5])) + (", ..." if len(damaged) > 5 else "")
    count = len(damaged)
    return f"{path}: {count} damaged {'line' if count == 1 else 'lines'} skipped (line {shown}); {consequence}"


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


def load_trace(path: str) -> Trace:
    """Read a trace directory back into model objects; needs no TVM or TileLang.

    Raises TraceNotFound (one line) when there is no trace to load. A damaged trace
    loads what is readable: each damaged line is skipped, and a :class:`TraceDamaged`
    warning (also kept in the run's notes) says which lines were.
    """
    run_dir = find_run_dir(path)
    manifest = os.path.join(run_dir, MANIFEST)
    damaged: list[int] = []
    try:
        records = list(_read_lines(manifest, damaged))
    except OSError as exc:
        raise TraceNotFound(f"{manifest}: cannot read it ({exc.strerror or exc})") from None
    if not records or records[0][1].get("type") != "run":
        if damaged and damaged[0] == 1:
            raise TraceNotFound(f"{manifest}: line 1 (the run header) is damaged; this trace cannot be loaded")
        raise TraceNotFound(f"{run_dir}: {MANIFEST} has no run header; not a lower-trace directory")
    header = records[0][1]
    try:
        version = int(header.get("format", 1))
        run = run_from_json(header)
    except (ValueError, TypeError, AttributeError):
        raise TraceNotFound(f"{manifest}: line {records[0][0]} (the run header) is damaged; this trace cannot be loaded") from None
    if version > FORMAT_VERSION:
        raise TraceNotFound(
            f"{run_dir}: trace format {version} is newer than this lower-trace reads ({FORMAT_VERSION}); upgrade lower-trace"
        )
    notes = list(run.notes)
    kernels: dict[str, dict[str, Any]] = {}
    for number, record in records[1:]:
        try:
            _add_record(kernels, notes, record)
        except (ValueError, TypeError, AttributeError, KeyError):  # a record of the wrong shape
            damaged.append(number)
    built = []
    for entry in kernels.values():
        entry["passes"] = tuple(sorted([*entry["passes"], *_crashed(entry)], key=lambda p: p.seq))
        entry["codegen"] = tuple(sorted(entry["codegen"], key=lambda c: c.seq))
        built.append(KernelTrace(**entry))
    if damaged:
        message = _damage(manifest, sorted(damaged), "the rest of the trace is loaded")
        warnings.warn(TraceDamaged(message), stacklevel=2)
        notes.append(message)
    snapshots = _SnapshotPack(os.path.join(run_dir, SNAPSHOTS))
    ir = _SnapshotPack(os.path.join(run_dir, IR), field="zjson", decode=unpack_ir)

    return Trace(
        path=run_dir,
        run=RunInfo(**{**run.__dict__, "notes": tuple(notes)}),
        kernels=tuple(built),
        read_snapshot=snapshots.get,
        format=version,
        read_ir=ir.get,
    )


def _crashed(entry: dict[str, Any]) -> list[PassRecord]:
    """Passes the process died in: started (pass_start, replay) or known to run (pass_open: written
    when their first nested pass started) and never recorded. Each gets its time so far: what its
    record says (its time before its first nested pass; 0 for a pass_start) plus its recorded
    nested passes' time -- up to the end of the last nested pass recorded, the gaps between them
    left out (they are not measured), so at least that long."""
    done = {p.seq for p in entry["passes"]}
    started: dict[int, tuple[PassRecord, bool]] = {}
    for p, late in entry.pop("opened", []):
        if p.seq not in done and (p.seq not in started or not late):
            started[p.seq] = (p, late)  # a pass_start knows more than a pass_open
    # The deepest one was running (or, known from a pass_open, something nested in it); the ones around it had not finished.
    crashed = max((p for p, _ in started.values()), key=lambda p: (p.depth, p.seq), default=None)
    if crashed is None:
        return []
    ms = {p.seq: p.ms for p in entry["passes"]}
    nested: dict[int, list[PassRecord]] = {}
    for p in entry["passes"]:
        if p.parent is not None:
            nested.setdefault(p.parent, []).append(p)
    out = []
    for p, late in sorted(started.values(), key=lambda item: -item[0].depth):  # innermost first: their time counts in their parent's
        ms[p.seq] = p.ms + sum(ms[c.seq] for c in nested.get(p.seq, ()))
        if p is not crashed:
            message = f"did not finish: nested pass {crashed.name} crashed"
        elif late:
            last = max(nested.get(p.seq, ()), key=lambda c: c.seq, default=None)
            message = CRASHED_NESTED + (f"; the last nested pass recorded: {last.seq} {last.name}" if last else "")
        else:
            message = CRASHED
        out.append(replace(p, status=PassStatus.INCOMPLETE, ms=round(ms[p.seq], 3), error=ErrorInfo("Crashed", message)))
        if p.parent is not None:
            nested.setdefault(p.parent, []).append(out[-1])
    return out


def _add_record(kernels: dict[str, dict[str, Any]], notes: list[str], record: dict[str, Any]) -> None:
    """One manifest record into the kernels being built; raises on a record of the wrong shape."""
    kind = record.get("type")
    kernel_id = str(record.get("kernel_id", record.get("kernel", "")))
    if kind == "note":
        notes.append(str(record.get("text", "")))
        return
    if kind not in ("kernel", "pass", "pass_start", "pass_open", "codegen", "kernel_end"):
        return  # a record type a newer writer added: nothing this reader knows
    entry = kernels.get(kernel_id) or {"kernel_id": kernel_id, "name": kernel_id, "passes": [], "codegen": []}
    if kind == "kernel":
        for key, convert in (("name", str), ("started", float), ("target", str), ("entry", str), ("pass_configs", dict), ("context", dict)):
            if key in record:
                entry[key] = convert(record[key])
    elif kind == "pass":
        entry["passes"].append(_checked(pass_from_json(record)))
    elif kind in ("pass_start", "pass_open"):
        entry.setdefault("opened", []).append((_checked(pass_from_json({**record, "status": "incomplete"})), kind == "pass_open"))
    elif kind == "codegen":
        entry["codegen"].append(_checked(codegen_from_json(record)))
    else:
        entry["status"] = KernelStatus(record.get("status", "ok"))
        entry["ms"] = float(record.get("ms", 0.0))
        if record.get("target"):
            entry["target"] = str(record["target"])
        if record.get("error"):
            err = record["error"]
            entry["error"] = ErrorInfo(str(err.get("type", "")), str(err.get("message", "")), str(err.get("traceback", "")))
    kernels[kernel_id] = entry


# The types every view relies on, per record field (a damaged or hand-edited line may break them).
_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    **dict.fromkeys(("seq", "depth"), int),
    "ms": (int, float),
    **dict.fromkeys(("kernel", "name", "phase", "caller", "before", "after", "role", "function", "target", "language", "tir", "source"), str),
    **dict.fromkeys(("edit_status", "edit_path", "edit_backup", "generated", "input", "repro"), str),
}


def _checked(step: Any) -> Any:
    """A pass or codegen record whose fields have the types every view uses; ValueError if not."""
    for item in fields(step):
        wanted = _FIELD_TYPES.get(item.name)
        if wanted is not None and not isinstance(getattr(step, item.name), wanted):
            raise ValueError(f"{item.name} is not a {wanted}")
    return step


class _SnapshotPack:
    """Reads snapshots.jsonl on first use; a torn last line (killed writer) is skipped, damaged
    lines too (with a :class:`TraceDamaged` warning): their snapshots read as ""."""

    def __init__(self, path: str, field: str = "text", decode: Callable[[str], str] = lambda text: text) -> None:
        self.path = path
        self.field = field
        self.decode = decode
        self._texts: dict[str, str] | None = None

    def get(self, digest: str) -> str:
        if self._texts is None:
            self._texts = self._load()
        found = self._texts.get(digest, "")
        try:
            return self.decode(found) if found else ""
        except (ValueError, zlib.error):
            warnings.warn(TraceDamaged(f"{self.path}: the entry {digest} is damaged; it reads as empty"), stacklevel=2)
            return ""

    def _load(self) -> dict[str, str]:
        texts: dict[str, str] = {}
        if not os.path.isfile(self.path):
            return texts
        damaged: list[int] = []
        try:
            for number, entry in _read_lines(self.path, damaged):
                if isinstance(entry.get("digest"), str) and isinstance(entry.get(self.field), str):
                    texts[entry["digest"]] = entry[self.field]
                else:
                    damaged.append(number)
        except OSError as exc:
            warnings.warn(TraceDamaged(f"{self.path}: cannot read it ({exc.strerror or exc}); no IR or source can be shown"), stacklevel=3)
            return texts
        if damaged:
            warnings.warn(TraceDamaged(_damage(self.path, damaged, "the IR or source stored there is missing from this view")), stacklevel=3)
        return texts
