"""The three-way decision: what one traced compile does with a generated source's working copy.

Three texts decide (docs/edits.md, "The four statuses"): the working copy (the user's
file), its baseline (what codegen produced when the copy was last synced) and the latest
codegen. Either file may be missing (a first compile; a file deleted by hand). In the
table, ``B`` is the baseline's text, ``L`` the latest codegen (another text than ``B``
where both appear), ``W`` an edit (a text other than both) and ``-`` a missing file::

    copy  baseline  latest  status       compiles  then
    -     -         L       SYNCED       L         write the copy and the baseline (a new copy)
    -     B         L       SYNCED       L         write the copy and the baseline (a new copy)
    L     -         L       SYNCED       L         write the copy and the baseline
    W     -         L       CONFLICT     L         set W aside (against an empty base), write both
    B     B         B       SYNCED       B         nothing
    W     B         B       PATCHED      W         nothing
    B     B         L       REGENERATED  L         write both
    L     B         L       SYNCED       L         write the baseline (the edit is what codegen now makes)
    W     B         L       CONFLICT     L         set W aside (against B), write both

"Write" is of the latest codegen. No edit is ever lost: a working copy that differs from
the latest codegen is only overwritten after it has been set aside. Pure: no files here
(EditStore reads and writes them); only equality of the texts matters, so digests serve
as well.
"""

from __future__ import annotations

from dataclasses import dataclass

from lower_trace.model import EditStatus


@dataclass(frozen=True)
class Decision:
    status: EditStatus
    compiles_edit: bool  # the compiler gets the working copy (else the latest codegen)
    set_aside: bool = False  # keep the working copy as an .edit file (with its base) first
    write_baseline: bool = False  # the baseline becomes the latest codegen
    write_copy: bool = False  # the working copy becomes the latest codegen
    created: bool = False  # the working copy is written for the first time


_SYNCED = Decision(EditStatus.SYNCED, compiles_edit=False)


def decide(working: str | None, baseline: str | None, latest: str) -> Decision:
    """The decision for these texts (None: that file is missing); see the module's table."""
    if working is None or baseline is None:
        if working is not None and working != latest:
            # A working copy without a baseline (baseline deleted by hand): keep it as an edit.
            return Decision(EditStatus.CONFLICT, compiles_edit=False, set_aside=True, write_baseline=True, write_copy=True)
        return Decision(EditStatus.SYNCED, compiles_edit=False, write_baseline=True, write_copy=True, created=working is None)
    edited = working != baseline
    regenerated = latest != baseline
    if not edited and not regenerated:
        return _SYNCED
    if edited and not regenerated:
        return Decision(EditStatus.PATCHED, compiles_edit=True)
    if not edited:
        return Decision(EditStatus.REGENERATED, compiles_edit=False, write_baseline=True, write_copy=True)
    if working == latest:  # the edit is exactly what codegen now produces
        return Decision(EditStatus.SYNCED, compiles_edit=False, write_baseline=True)
    return Decision(EditStatus.CONFLICT, compiles_edit=False, set_aside=True, write_baseline=True, write_copy=True)
