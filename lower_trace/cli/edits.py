"""``lower-trace edits``: the working copies of generated source, listed or reset."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from lower_trace.cli.options import add_trace
from lower_trace.cli.selection import UsageError
from lower_trace.config import DEFAULT_TRACE_DIR

if TYPE_CHECKING:
    from lower_trace.edits.working_copies import EditStore


def cmd_edits(args: argparse.Namespace) -> int:
    """List the editable generated sources (working copies): which kernel variant each is
    for, whether you edited it, and whether it is stale (its edit failed to compile, or the
    kernel's code moved on without it); or --reset one kernel's (or one file's)."""
    from lower_trace.edits.working_copies import EditStore
    from lower_trace.render.edits_view import write_listing, write_reset

    stores = [EditStore(folder) for folder in _script_dirs(args.trace)]
    if not stores:
        raise UsageError(f"{args.trace}: no working copies here yet; run your script with TL_LOWER_TRACE=html first")
    if args.reset:
        write_reset(sys.stdout, _reset(stores, args.reset))
        return 0
    write_listing(sys.stdout, [(store.root, store.entries()) for store in stores])
    return 0


def _script_dirs(path: str) -> list[str]:
    """The script folders a TRACE argument names that hold working copies (edits/edit_folder.py)."""
    from lower_trace.edits.edit_folder import script_dirs

    try:
        return script_dirs(path)
    except OSError:
        raise UsageError(f"{path}: no such directory; pass a trace folder (default {DEFAULT_TRACE_DIR})") from None


def _reset(stores: list[EditStore], key: str) -> list[tuple[str, str]]:
    """--reset KEY in the one script that has working copies for it: (path, backup) of each reset."""
    matching = [store for store in stores if store.holds(key)]
    if len(matching) > 1:
        folders = ", ".join(os.path.dirname(s.root) for s in matching)
        raise UsageError(f"several scripts have working copies for {key!r}; name one: lower-trace edits FOLDER --reset {key} (folders: {folders})")
    done = [item for store in matching for item in store.reset(key)]
    if not done:
        known = sorted({e.kernel for store in stores for e in store.entries()})
        raise UsageError(f"no working copy for {key!r}; kernels: {', '.join(known)}")
    return done


def add_parser(sub: Any) -> None:
    edits = sub.add_parser("edits", help="list or reset the editable generated sources", description=cmd_edits.__doc__)
    add_trace(edits, "a run folder, a script folder or the trace root (every script in it)")
    edits.add_argument("--reset", metavar="KERNEL", help="return KERNEL's working copies (or one FILE's) to the generated source; edits are kept aside")
    edits.set_defaults(func=cmd_edits)
