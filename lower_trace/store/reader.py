"""Reading a trace folder back into model objects (needs no TVM or TileLang): damaged lines
skipped and said, crashed passes rebuilt from their start records, every older format read."""

from __future__ import annotations

import json
import os
import threading
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from typing import Any

from lower_trace.device_model import device_from_json
from lower_trace.model import (
    CRASHED,
    CRASHED_NESTED,
    ErrorInfo,
    KernelStatus,
    KernelTrace,
    PassRecord,
    PassStatus,
    RunInfo,
    Trace,
)
from lower_trace.model_json import codegen_from_json, launch_from_json, pass_from_json, rebuild_from_json, run_from_json
from lower_trace.store.layout import FORMAT_VERSION, IR, MANIFEST, SNAPSHOTS, SnapshotUnpacker, TraceNotFound, find_run_dir, unpack_ir
from lower_trace.text_safety import plural


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
    return f"{path}: {plural(count, 'damaged line')} skipped (line {shown}); {consequence}"


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
    snapshots = _SnapshotPack(os.path.join(run_dir, SNAPSHOTS), read=SnapshotUnpacker().text)
    ir = _SnapshotPack(os.path.join(run_dir, IR), read=lambda entry: entry.get("zjson"), decode=unpack_ir)

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
    if kind not in ("kernel", "pass", "pass_start", "pass_open", "codegen", "device", "launch", "rebuild", "kernel_end"):
        return  # a record type a newer writer added: nothing this reader knows
    entry = kernels.get(kernel_id) or {"kernel_id": kernel_id, "name": kernel_id, "passes": [], "codegen": []}
    if kind == "kernel":
        for key, convert in (("name", str), ("started", float), ("target", str), ("entry", str), ("pass_configs", dict), ("context", dict)):
            if key in record:
                entry[key] = convert(record[key])
        if "stack" in record:
            entry["stack"] = tuple((str(file), int(line), str(function)) for file, line, function in record["stack"])
    elif kind == "pass":
        entry["passes"].append(_checked(pass_from_json(record)))
    elif kind in ("pass_start", "pass_open"):
        entry.setdefault("opened", []).append((_checked(pass_from_json({**record, "status": "incomplete"})), kind == "pass_open"))
    elif kind == "codegen":
        entry["codegen"].append(_checked(codegen_from_json(record)))
    elif kind == "device":
        entry["device"] = (*entry.get("device", ()), device_from_json(record))
    elif kind == "launch":
        entry["launches"] = (*entry.get("launches", ()), launch_from_json(record))
    elif kind == "rebuild":
        entry["rebuild"] = rebuild_from_json(record)
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
    **dict.fromkeys(("edit_path", "edit_backup", "generated", "input", "repro", "line_map"), str),  # edit_status: codegen_from_json
}


def _checked(step: Any) -> Any:
    """A pass or codegen record whose fields have the types every view uses; ValueError if not."""
    for item in fields(step):
        wanted = _FIELD_TYPES.get(item.name)
        if wanted is not None and not isinstance(getattr(step, item.name), wanted):
            raise ValueError(f"{item.name} is not a {wanted}")
    return step


class _SnapshotPack:
    """Reads snapshots.jsonl (or ir.jsonl) on first use; a torn last line (killed writer) is
    skipped, damaged lines too (with a :class:`TraceDamaged` warning): their snapshots read as "".
    `read` takes each line's entry to its stored value (None: damaged), in file order; `decode`
    turns a stored value into the text when it is asked for."""

    def __init__(self, path: str, read: Callable[[dict[str, Any]], Any], decode: Callable[[str], str] = lambda text: text) -> None:
        self.path = path
        self.read = read
        self.decode = decode
        self._texts: dict[str, str] | None = None
        self._lock = threading.Lock()  # views read from several threads (lower-trace device's pool)

    def get(self, digest: str) -> str:
        if self._texts is None:
            with self._lock:  # one load: the stream decoder must see the lines once, in order
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
                stored = self.read(entry)
                if isinstance(entry.get("digest"), str) and isinstance(stored, str):
                    texts[entry["digest"]] = stored
                else:
                    damaged.append(number)
        except OSError as exc:
            warnings.warn(TraceDamaged(f"{self.path}: cannot read it ({exc.strerror or exc}); no IR or source can be shown"), stacklevel=3)
            return texts
        if damaged:
            warnings.warn(TraceDamaged(_damage(self.path, damaged, "the IR or source stored there is missing from this view")), stacklevel=3)
        return texts
