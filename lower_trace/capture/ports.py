"""What capture reaches outside itself: the edit workflow (edits/) and the reproducer writer
(rerun/repro.py), as small protocols. api.py hands the implementations to the run
(:class:`Ports`); capture imports neither, so the layers stay one-way -- the import check
(``[tool.importlinter]`` in pyproject.toml) fails the build otherwise. The data both sides
exchange (EditOutcome, ReproSpec) is defined in model.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from lower_trace.model import EditOutcome, ReproSpec


class WorkingCopies(Protocol):
    """One script's working copies (edits.working_copies.EditStore)."""

    root: str  # their folder

    def resolve(self, kernel: str, signature: str, role: str, language: str, latest: str, tir: str = "", config: str = "") -> EditOutcome:
        """The three-way decision for one generated source: what to compile. OSError on disk faults."""
        ...

    def compiled(self, path: str, failed: bool, text: str | None = None) -> None:
        """Whether the compile that used the working copy at path failed."""
        ...


class CodegenAlias(Protocol):
    """``enable(codegen_output=PATH)``: PATH kept in step with one working copy (edits.alias.EditAlias)."""

    note: str  # something to tell the user once

    def sync(self, role: str, outcome: EditOutcome, decide_again: Callable[[], EditOutcome]) -> EditOutcome: ...


class Reproducers(Protocol):
    """Writing the reproducer of a failed pass (the module rerun.repro)."""

    def folder(self, run_dir: str, kernel_id: str, seq: int, name: str) -> str: ...
    def write(self, folder: str, spec: ReproSpec, ir_json: str) -> str: ...
    def command(self, folder: str) -> str: ...


@dataclass(frozen=True)
class Ports:
    """The implementations a run uses; what is None is not done (api.py wires them all)."""

    working_copies: Callable[[str], WorkingCopies] | None = None  # a script's folder -> its working copies
    codegen_alias: Callable[[str, str], CodegenAlias] | None = None  # (PATH, the working copies' folder) -> the alias
    edited_copies: Callable[[str], str | None] | None = None  # a script's folder -> where edited copies wait, or None
    reproducers: Reproducers | None = None
