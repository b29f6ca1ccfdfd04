"""``codegen_output=PATH`` (the seed's parameter of ``enable()``): the first kernel variant compiled
in a run has its editable generated source at PATH too, besides its working copy in ``edits/``.

PATH is an alias of that working copy, kept in step both ways around each decision: an edit
made in PATH since (it differs from the working copy) is copied into the working copy before
the three-way decision is taken again, so it counts as the user's edit; afterwards the working
copy, as it now stands, is written to PATH. The outcome names PATH, so messages and compiler
errors (``#line``) point at the file the user named. Other kernels keep their working copies in
``edits/`` alone (said once)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from .edit_outcome import EditOutcome


class EditAlias:
    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        self.owner: tuple[str, str, str] | None = None  # (kernel, role, language) whose copy PATH is
        self.owner_copy = ""  # that kernel variant's working copy

    def applies_to(self, kernel: str, role: str, language: str) -> bool:
        key = (kernel, role, language)
        if self.owner is None and role == "device":
            self.owner = key
        return key == self.owner

    def sync(self, outcome: EditOutcome, decide_again: Callable[[], EditOutcome]) -> EditOutcome:
        """The outcome with PATH in step with the working copy (see the module doc). OSError propagates."""
        if self.owner_copy and outcome.path != self.owner_copy:
            return outcome  # another variant of the kernel: its copy stays in edits/ alone
        self.owner_copy = outcome.path
        alias, working = _read(self.path), _read(outcome.path)
        if alias is not None and alias != working:
            _write(outcome.path, alias)
            outcome = decide_again()
        current = _read(outcome.path)
        if current is not None and current != alias:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            _write(self.path, current)
        return dataclasses.replace(outcome, path=self.path)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
