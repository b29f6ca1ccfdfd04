"""Which source a codegen call hands on: the user's edit of the working copy or the fresh codegen.

The three-way decision itself is edits/'s, reached through the run's ``WorkingCopies`` port
(ports.py); this module asks it for one generated source, keyed by the kernel's variant (what
the user wrote: the TIR as handed to lowering, the target and pass configs), and says so when a
compile that used an edit fails.
"""

from __future__ import annotations

import os
from typing import Protocol

from lower_trace.capture.codegen_step import ActiveCodegen
from lower_trace.capture.faults import Guard
from lower_trace.capture.sink import TraceSink
from lower_trace.capture.snapshots import Snapshots
from lower_trace.capture.worker import SnapshotRef, Worker
from lower_trace.model import EditOutcome
from lower_trace.text_safety import line_directive


class EditingSession(Protocol):
    """What the edit decision uses of its compile's session (session.CompileSession)."""

    run: TraceSink
    faults: Guard
    worker: Worker
    snapshots: Snapshots
    kernel_name: str
    signature: str
    variant_config: str  # target and pass configs
    initial: SnapshotRef | None  # the TIR as handed to lowering (when edits are on)
    edits_enabled: bool
    edits_used: list[EditOutcome]  # this compile's decisions


def edit_source(session: EditingSession, active: ActiveCodegen, generated: str) -> str:
    """The source to compile instead of `generated`: the user's edit when PATCHED."""
    edits = session.run.edits
    if edits is None or not session.kernel_name or not session.edits_enabled:
        return generated

    def decide() -> EditOutcome:
        return edits.resolve(
            session.kernel_name,
            session.signature,
            active.role,
            active.language,
            generated,
            tir=_initial_tir(session),
            config=session.variant_config,
        )

    def settle() -> EditOutcome | None:
        try:
            outcome = decide()
            alias = session.run.edit_alias
            if alias is not None:  # enable(codegen_output=PATH): PATH may be this copy too
                outcome = alias.sync(active.role, outcome, decide)
                if alias.note:
                    session.run.note(alias.note, once="codegen-output")
        except OSError as exc:  # the working copies' disk: edits are off, not a tracer fault
            session.run.edits_fault(exc)
            return None
        return outcome

    outcome = session.faults.call(settle)
    if outcome is None:
        return generated
    active.edit = (outcome, generated)
    session.edits_used.append(outcome)
    session.run.edit_resolved(session.kernel_name, outcome)
    if outcome.uses_edit:
        return line_directive(outcome.compile_text, outcome.path, active.language)
    return outcome.compile_text


def _initial_tir(session: EditingSession) -> str:
    """The text of the TIR as handed to lowering: printed on the worker by codegen time (one
    core: at once; a worker thread behind: it is waited for)."""
    ref = session.initial
    if ref is None:
        return ""
    if not ref.digest:
        session.worker.wait()
    texts = session.snapshots.texts
    return texts.get(ref.digest, "") if texts is not None and ref.digest else ""


def note_failed_edits(run: TraceSink, kernel_name: str, used: list[EditOutcome]) -> None:
    """A compile that failed while using the user's edit: where the errors point, and the way back."""
    for outcome in used:
        if outcome.uses_edit:
            run.note(
                f"{kernel_name}: the compile failed while using your edit of {outcome.path} "
                "(the compiler's errors name that file and line); the edit is kept: fix it and rerun, "
                f"or `lower-trace edits --reset {os.path.basename(outcome.path)}` to go back to the generated source"
            )
