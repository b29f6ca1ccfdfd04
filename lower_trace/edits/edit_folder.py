"""The edits folder on disk, beside the runs of a script; working_copies.py decides what goes in it::

    {trace_dir}/{script}/edits/
        index.json                  working copy -> kernel, buffers, role, variant (format 2)
        index.log                   changes since index.json was written (folded in now and then)
        gemm.cu                     the working copy of the first variant: yours to edit
        gemm-3fa9c1.cu              another variant's (other constants, tiles, shapes, configs)
        .baseline/gemm.cu           what codegen produced when the working copy was last synced
        .variants/<hash>.tir        the TIR of one version of the kernel's code (to tell variants apart)
        gemm.cu.<stamp>.edit        your edit, kept when a conflict or a reset replaced it
        gemm.cu.<stamp>.base        the baseline that edit was made against

This module reads and writes those files: the lock two processes take turns by, the index
(only what changed since it was last read), copies, baselines, stored TIRs and edits set aside.
Pure Python; no tvm import.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import time
from collections.abc import Iterator

from lower_trace.edits.entries import IndexEntry
from lower_trace.store.files import write_atomically
from lower_trace.store.layout import EDITS, MANIFEST

BASELINE = ".baseline"
VARIANTS = ".variants"
INDEX = "index.json"
JOURNAL = "index.log"
FORMAT = 2  # 1 (no "format" key): {"kernel|signature|role": {file, kernel, role, language}}

_Stat = tuple[int, int, int]  # inode, size, mtime: what tells a changed index file


@dataclasses.dataclass
class IndexChanges:
    """What the index files hold that this process has not read yet."""

    reloaded: bool  # index.json was read whole: the entries replace everything known before
    entries: list[tuple[str, IndexEntry | None]]  # in file order (None: an entry not well formed)
    journal: int  # how many of them are index.log's lines (another process's changes)


class EditFolder:
    """One script's edits folder. Keeps where it stopped reading the index, so that reading
    it again costs two stats when nothing changed and only the appended lines when little did."""

    def __init__(self, script_dir: str) -> None:
        self.root = os.path.join(script_dir, EDITS)
        self._stamp: tuple[_Stat | None, _Stat | None] | None = None
        self._journal_at = 0  # bytes of index.log read
        self._journal_lines = 0
        self._rewrite = False  # the index on disk is in the old format: write it whole

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Two processes tracing the same script take turns deciding."""
        os.makedirs(os.path.join(self.root, BASELINE), exist_ok=True)
        with open(os.path.join(self.root, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def exists(self) -> bool:
        return os.path.isdir(self.root)

    # --- the index: index.json, plus index.log appended since ------------------------

    def changes(self) -> IndexChanges | None:
        """The index entries written since this process last read or wrote them; None when the
        files did not change (a stat each)."""
        stamp = (_stat(os.path.join(self.root, INDEX)), _stat(os.path.join(self.root, JOURNAL)))
        if stamp == self._stamp:
            return None
        old = self._stamp
        # Only lines appended to the same index.log since: read those; else read it all again.
        journal, was = stamp[1], old[1] if old is not None else None
        grown = old is not None and stamp[0] == old[0] and journal is not None
        grown = grown and (was is None or (journal is not None and journal[0] == was[0] and journal[1] >= self._journal_at))
        entries = [] if grown else self._load_index()
        appended = self._read_journal()
        self._stamp = (stamp[0], _stat(os.path.join(self.root, JOURNAL)))
        return IndexChanges(not grown, entries + appended, len(appended))

    def _load_index(self) -> list[tuple[str, IndexEntry | None]]:
        self._journal_at, self._journal_lines, self._rewrite = 0, 0, False
        try:
            with open(os.path.join(self.root, INDEX), encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict):
            data = {}
        entries: list[tuple[str, IndexEntry | None]] = []
        if "format" in data:
            copies = data.get("copies")
            for name, entry in (copies.items() if isinstance(copies, dict) else ()):
                entries.append((name, IndexEntry.parse(name, entry)))
        else:  # format 1: one copy per kernel, signature and role; they become copies to match
            self._rewrite = bool(data)
            for order, (key, entry) in enumerate(sorted(data.items(), key=lambda item: str(item[0])), start=-len(data)):
                migrated = IndexEntry.migrate(key, entry, order)
                if migrated is not None:
                    entries.append(migrated)
        return entries

    def _read_journal(self) -> list[tuple[str, IndexEntry | None]]:
        try:
            with open(os.path.join(self.root, JOURNAL), "rb") as handle:
                handle.seek(self._journal_at)
                data = handle.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1  # a torn last line (a killed process) is not read
        entries: list[tuple[str, IndexEntry | None]] = []
        for line in data[:end].splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("file"), str):
                entries.append((record["file"], IndexEntry.parse(record["file"], record.get("entry"))))
                self._journal_lines += 1
        self._journal_at += end
        return entries

    def save(self, name: str, copies: dict[str, IndexEntry]) -> None:
        """Record one changed entry of `copies` (the whole index): a line appended, or the whole index now and then."""
        if self._rewrite or self._journal_lines >= max(64, len(copies)):
            payload = {"format": FORMAT, "copies": {name: entry.to_json() for name, entry in copies.items()}}
            _write(os.path.join(self.root, INDEX), json.dumps(payload, indent=1, sort_keys=True) + "\n")
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(self.root, JOURNAL))
            self._journal_at, self._journal_lines, self._rewrite = 0, 0, False
        else:
            line = json.dumps({"file": name, "entry": copies[name].to_json()}, sort_keys=True) + "\n"
            path = os.path.join(self.root, JOURNAL)
            with open(path, "ab") as handle:
                if handle.tell() > self._journal_at:  # someone's torn line: end it first
                    line = "\n" + line
                handle.write(line.encode("utf-8", "surrogatepass"))
                self._journal_at = handle.tell()
            self._journal_lines += 1
        self._stamp = (_stat(os.path.join(self.root, INDEX)), _stat(os.path.join(self.root, JOURNAL)))

    # --- working copies, baselines, stored TIRs, edits set aside ----------------------

    def copy_path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def baseline_path(self, name: str) -> str:
        return os.path.join(self.root, BASELINE, name)

    def read_copy(self, name: str) -> str | None:
        return _read(self.copy_path(name))

    def read_baseline(self, name: str) -> str | None:
        return _read(self.baseline_path(name))

    def write_copy(self, name: str, text: str) -> None:
        _write(self.copy_path(name), text)

    def write_baseline(self, name: str, text: str) -> None:
        _write(self.baseline_path(name), text)

    def read_tir(self, reference: str) -> str | None:
        return _read(os.path.join(self.root, VARIANTS, f"{reference}.tir"))

    def store_tir(self, reference: str, text: str) -> None:
        """A variant's TIR under its text key, written once."""
        path = os.path.join(self.root, VARIANTS, f"{reference}.tir")
        if not os.path.exists(path):
            _write(path, text)

    def set_aside(self, name: str, edit: str, base: str) -> tuple[str, str]:
        """Keep an edit and the baseline it was made against beside the copy: (edit's path, base's path)."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        backup = os.path.join(self.root, f"{name}.{stamp}.edit")
        n = 1
        while os.path.exists(backup):
            n += 1
            backup = os.path.join(self.root, f"{name}.{stamp}-{n}.edit")
        base_path = backup[: -len(".edit")] + ".base"
        _write(backup, edit)
        _write(base_path, base)
        return backup, base_path


def _stat(path: str) -> _Stat | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomically(path, text, errors="surrogateescape")


def script_dirs(path: str) -> list[str]:
    """Script folders holding working copies, from a run folder, a script folder, its edits/ folder
    or a file in it, or the trace root (every script below it); OSError when path is no folder."""
    folder = os.path.normpath(path)
    if os.path.isfile(folder):  # a run's manifest, or a working copy
        folder = os.path.dirname(folder) or "."
    named = _script_named(folder)
    if named is not None:
        return named
    children = sorted(entry.path for entry in os.scandir(folder) if entry.is_dir())
    return [child for child in children if _has_edits(child)]


def _script_named(folder: str) -> list[str] | None:
    """[the script] when folder is a script folder, its edits/ folder or one of its runs ([] when that
    script has no working copies yet); None when it is none of those (a trace root)."""
    if _has_edits(folder):
        return [folder]
    if os.path.basename(folder) == EDITS and os.path.isdir(folder):
        return [os.path.dirname(folder) or "."]
    if os.path.isfile(os.path.join(folder, MANIFEST)):  # a run folder: its script's working copies
        parent = os.path.normpath(os.path.join(folder, os.pardir))
        return [parent] if _has_edits(parent) else []
    return None


def _has_edits(folder: str) -> bool:
    return os.path.isdir(os.path.join(folder, EDITS))
