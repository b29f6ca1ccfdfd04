"""What an edit decision says: the four statuses, the outcome of one decision, its message.

Shared by the working-copy store (override.py), capture (which compiles what the
outcome says) and the renderers (which show the status). Pure Python.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass


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
    siblings: tuple[str, ...] = ()  # edited working copies of this kernel's other variants

    @property
    def uses_edit(self) -> bool:
        return self.status is EditStatus.PATCHED

    def message(self, kernel: str) -> str:
        where = short_path(self.path)
        if self.created:
            text = f"{kernel}: generated source saved to {where}; edit it and rerun to compile your version"
            if self.siblings:
                others = ", ".join(short_path(p) for p in self.siblings[:3])
                if len(self.siblings) > 3:
                    others += f" and {len(self.siblings) - 3} more"
                verb = "is" if len(self.siblings) == 1 else "are"
                noun = "edit" if len(self.siblings) == 1 else "edits"
                text += f" (your {noun} in {others} {verb} for other variants of {kernel}, so not used here; `lower-trace edits` says which is which)"
            return text
        if self.status is EditStatus.PATCHED:
            return f"{kernel}: PATCHED, compiling your edit of {where}"
        if self.status is EditStatus.REGENERATED:
            return f"{kernel}: REGENERATED, codegen changed; {where} now holds the new source"
        if self.status is EditStatus.CONFLICT:
            return (
                f"{kernel}: CONFLICT, codegen changed and {where} was edited; compiling the new codegen. "
                f"Your edit is saved in {short_path(self.backup)}; to re-apply it: "
                f"diff -u {short_path(self.backup_base)} {short_path(self.backup)} | patch {where}"
            )
        return f"{kernel}: SYNCED, {where}"


def short_path(path: str) -> str:
    """A path as messages show it: relative to the current folder when below it."""
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else path


def line_directive(text: str, path: str, language: str) -> str:
    """Prefix C-family source with #line, so compiler errors point into the user's file."""
    if language not in ("cuda", "hip", "c"):
        return text
    quoted = path.replace("\\", "\\\\").replace('"', '\\"')
    return f'#line 1 "{quoted}"\n{text}'
