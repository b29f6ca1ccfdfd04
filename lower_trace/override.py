"""Edit the generated source and rerun: per-kernel working copies, three-way safe.

Layout, beside the runs of a script::

    {trace_dir}/{script}/edits/
        index.json                  kernel (name, signature, role) -> file name
        gemm.cu                     the working copy: yours to edit
        .baseline/gemm.cu           what codegen produced when the working copy was last synced
        gemm.cu.<stamp>.edit        your edit, kept when a conflict or a reset replaced it
        gemm.cu.<stamp>.base        the baseline that edit was made against

On every traced compile, for each generated source (device, and host where it is
compiled from source), the working copy, the baseline and the latest codegen decide:

    working == baseline, latest == baseline  -> SYNCED       compile latest
    working != baseline, latest == baseline  -> PATCHED      compile the working copy
    working == baseline, latest != baseline  -> REGENERATED  refresh the copy, compile latest
    both changed (and working != latest)     -> CONFLICT     keep the edit aside, refresh, compile latest

No edit is ever lost: a working copy is only overwritten after it has been saved
aside, and the message says how to bring it back. Pure Python; no tvm import.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

from .paths import safe_component

EDITS = "edits"
BASELINE = ".baseline"
INDEX = "index.json"
_SAFE_FILE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")  # one plain name inside edits/, never a path
EXTENSIONS = {"cuda": ".cu", "hip": ".hip", "c": ".c", "metal": ".metal", "wgsl": ".wgsl", "python": ".py"}


class EditStatus(str, enum.Enum):
    SYNCED = "SYNCED"
    PATCHED = "PATCHED"
    REGENERATED = "REGENERATED"
    CONFLICT = "CONFLICT"


@dataclass(frozen=True)
class EditOutcome:
    status: EditStatus
    path: str  # the working copy
    compile_text: str  # what the compiler gets
    backup: str = ""  # where an edit was saved aside (CONFLICT)
    backup_base: str = ""  # the baseline that edit was made against
    created: bool = False  # the working copy was written for the first time
    siblings: tuple[str, ...] = ()  # edited working copies of same-named kernels with other buffers

    @property
    def uses_edit(self) -> bool:
        return self.status is EditStatus.PATCHED

    def message(self, kernel: str) -> str:
        where = _short(self.path)
        if self.created:
            text = f"{kernel}: generated source saved to {where}; edit it and rerun to compile your version"
            if self.siblings:
                others = ", ".join(_short(p) for p in self.siblings)
                text += f" (your edit in {others} is for other shapes or dtypes, so it is not used here)"
            return text
        if self.status is EditStatus.PATCHED:
            return f"{kernel}: PATCHED, compiling your edit of {where}"
        if self.status is EditStatus.REGENERATED:
            return f"{kernel}: REGENERATED, codegen changed; {where} now holds the new source"
        if self.status is EditStatus.CONFLICT:
            return (
                f"{kernel}: CONFLICT, codegen changed and {where} was edited; compiling the new codegen. "
                f"Your edit is saved in {_short(self.backup)}; to re-apply it: "
                f"diff -u {_short(self.backup_base)} {_short(self.backup)} | patch {where}"
            )
        return f"{kernel}: SYNCED, {where}"


def _short(path: str) -> str:
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else path


def line_directive(text: str, path: str, language: str) -> str:
    """Prefix C-family source with #line, so compiler errors point into the user's file."""
    if language not in ("cuda", "hip", "c"):
        return text
    quoted = path.replace("\\", "\\\\").replace('"', '\\"')
    return f'#line 1 "{quoted}"\n{text}'


def signature_key(signature: str) -> str:
    return hashlib.blake2b(signature.encode("utf-8", "surrogatepass"), digest_size=3).hexdigest()


class EditStore:
    """The working copies of one script (one folder, shared by all its runs)."""

    def __init__(self, script_dir: str) -> None:
        self.root = os.path.join(script_dir, EDITS)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Two processes tracing the same script take turns deciding."""
        os.makedirs(os.path.join(self.root, BASELINE), exist_ok=True)
        with open(os.path.join(self.root, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _index(self) -> dict[str, dict[str, str]]:
        try:
            with open(os.path.join(self.root, INDEX), encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        # Keep only well-formed entries: a hand-edited index must not break the compile.
        return {
            key: entry
            for key, entry in data.items()
            if isinstance(entry, dict) and isinstance(entry.get("file"), str) and _SAFE_FILE.fullmatch(entry["file"])
            and isinstance(entry.get("kernel"), str) and isinstance(entry.get("role"), str)
        }

    def _save_index(self, index: dict[str, dict[str, str]]) -> None:
        _write(os.path.join(self.root, INDEX), json.dumps(index, indent=1, sort_keys=True) + "\n")

    def file_for(self, index: dict[str, dict[str, str]], kernel: str, signature: str, role: str, language: str) -> str:
        """The working copy's file name: the kernel's name, plus a short key when another
        kernel of the same name (other shapes or dtypes) already has that name."""
        key = f"{kernel}|{signature}|{role}"
        if key in index:
            return index[key]["file"]
        stem = safe_component(kernel, fallback="kernel") + ("" if role == "device" else f".{role}")
        ext = EXTENSIONS.get(language, ".txt")
        taken = {entry["file"] for entry in index.values()}
        name = f"{stem}{ext}"
        if name in taken:
            name = f"{stem}-{signature_key(signature)}{ext}"
        index[key] = {"file": name, "kernel": kernel, "role": role, "language": language}
        return name

    def resolve(self, kernel: str, signature: str, role: str, language: str, latest: str) -> EditOutcome:
        """Decide what to compile for this kernel's generated source, updating the files."""
        with self._locked():
            index = self._index()
            name = self.file_for(index, kernel, signature, role, language)
            self._save_index(index)
            working_path = os.path.join(self.root, name)
            baseline_path = os.path.join(self.root, BASELINE, name)
            working = _read(working_path)
            baseline = _read(baseline_path)
            if working is None or baseline is None:
                if working is not None and working != latest:
                    # A working copy without a baseline (baseline deleted by hand): keep it as an edit.
                    backup, base = self._set_aside(name, working, baseline or "")
                    _write(baseline_path, latest)
                    _write(working_path, latest)
                    return EditOutcome(EditStatus.CONFLICT, working_path, latest, backup, base)
                _write(baseline_path, latest)
                _write(working_path, latest)
                siblings = tuple(e["path"] for e in self.entries() if e["kernel"] == kernel and e["file"] != name and e["state"] == "edited")
                return EditOutcome(EditStatus.SYNCED, working_path, latest, created=working is None, siblings=siblings)
            edited = working != baseline
            regenerated = latest != baseline
            if not edited and not regenerated:
                return EditOutcome(EditStatus.SYNCED, working_path, latest)
            if edited and not regenerated:
                return EditOutcome(EditStatus.PATCHED, working_path, working)
            if not edited:
                _write(baseline_path, latest)
                _write(working_path, latest)
                return EditOutcome(EditStatus.REGENERATED, working_path, latest)
            if working == latest:  # the edit is exactly what codegen now produces
                _write(baseline_path, latest)
                return EditOutcome(EditStatus.SYNCED, working_path, latest)
            backup, base = self._set_aside(name, working, baseline)
            _write(baseline_path, latest)
            _write(working_path, latest)
            return EditOutcome(EditStatus.CONFLICT, working_path, latest, backup, base)

    def _set_aside(self, name: str, edit: str, base: str) -> tuple[str, str]:
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

    def entries(self) -> list[dict[str, str]]:
        """Every working copy: kernel, role, file, and whether it differs from its baseline."""
        out = []
        for key, entry in sorted(self._index().items(), key=lambda item: item[1]["file"]):
            path = os.path.join(self.root, entry["file"])
            working = _read(path)
            baseline = _read(os.path.join(self.root, BASELINE, entry["file"]))
            state = "missing" if working is None else "edited" if working != baseline else "as generated"
            out.append({**entry, "key": key, "path": path, "state": state})
        return out

    def reset(self, kernel: str) -> list[tuple[str, str]]:
        """Return a kernel's working copies to the generated source; edits are saved aside.

        kernel may be a kernel name (all its working copies) or one working copy's file
        name, with or without extension. Returns (path, backup) pairs.
        """
        done = []
        with self._locked():
            for entry in self.entries():
                if kernel not in (entry["kernel"], entry["file"], os.path.splitext(entry["file"])[0]):
                    continue
                baseline = _read(os.path.join(self.root, BASELINE, entry["file"]))
                if baseline is None:
                    continue
                working = _read(entry["path"])
                backup = ""
                if working is not None and working != baseline:
                    backup, _ = self._set_aside(entry["file"], working, baseline)
                _write(entry["path"], baseline)
                done.append((entry["path"], backup))
        return done


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8", errors="surrogateescape", newline="") as handle:
        handle.write(text)
    os.replace(tmp, path)
