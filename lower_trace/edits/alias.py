"""``codegen_output=PATH`` (the seed's parameter of ``enable()``): one kernel variant -- the first
device source compiled with that setting -- has its editable generated source at PATH too,
besides its working copy in ``edits/``.

PATH is an alias of that working copy, kept in step both ways around each decision: an edit
made in PATH since (it differs from the working copy) is copied into the working copy before
the three-way decision is taken again, so it counts as the user's edit; afterwards the working
copy, as it now stands, is written to PATH. The outcome names PATH, so messages and compiler
errors (``#line``) point at the file the user named.

Which working copy PATH belongs to is kept in ``edits/codegen_output.json``: across runs
(``reset()``), processes and compile orders PATH stays that kernel's, and another kernel never
reads it as an edit of its own. A file already at PATH that belongs to no kernel yet is kept
aside as PATH.orig before the first copy is written there."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable

from lower_trace.model import EditOutcome

OWNERS = "codegen_output.json"  # in edits/: {PATH: the working copy it is an alias of}


class EditAlias:
    def __init__(self, path: str, edits_root: str) -> None:
        self.path = os.path.abspath(path)
        self.owners = os.path.join(edits_root, OWNERS)
        self.note = ""  # something to tell the user once (a file set aside)

    def sync(self, role: str, outcome: EditOutcome, decide_again: Callable[[], EditOutcome]) -> EditOutcome:
        """The outcome with PATH in step with the working copy when PATH is this copy's alias (see the
        module doc); the outcome as it is otherwise. OSError propagates."""
        owners = _owners(self.owners)
        owner = owners.get(self.path)
        if owner is None:
            if role != "device":
                return outcome
            owners[self.path] = owner = outcome.path
            found = _read(self.path)
            if found is not None and found != _read(outcome.path):
                os.replace(self.path, self.path + ".orig")
                self.note = f"codegen_output: {self.path} held another file; it is kept as {self.path}.orig"
            _write(self.owners, json.dumps(owners, indent=1, sort_keys=True) + "\n")
        if owner != outcome.path:
            return outcome  # another kernel or variant: its copy stays in edits/ alone
        alias, working = _read(self.path), _read(outcome.path)
        if alias is not None and alias != working:
            _write(outcome.path, alias)
            outcome = decide_again()
        current = _read(outcome.path)
        if current is not None and current != alias:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            _write(self.path, current)
        return dataclasses.replace(outcome, path=self.path)


def _owners(path: str) -> dict[str, str]:
    text = _read(path)
    try:
        found = json.loads(text) if text else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
