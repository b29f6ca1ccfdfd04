"""``lower-trace edits``: the working copies of generated source, listed or reset."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from lower_trace.cli.options import add_trace
from lower_trace.cli.selection import UsageError
from lower_trace.config import DEFAULT_TRACE_DIR


def _script_dirs(path: str) -> list[str]:
    """Script folders holding working copies, from a run folder, a script folder, its
    edits/ folder or a file in it, or the trace root (every script below it)."""
    from lower_trace.store.layout import EDITS, MANIFEST

    folder = os.path.normpath(path)
    if os.path.isfile(folder):  # a run's manifest, or a working copy
        folder = os.path.dirname(folder) or "."
    if os.path.isdir(os.path.join(folder, EDITS)):
        return [folder]
    if os.path.basename(folder) == EDITS and os.path.isdir(folder):
        return [os.path.dirname(folder) or "."]
    if os.path.isfile(os.path.join(folder, MANIFEST)):  # a run folder: its script's working copies
        parent = os.path.normpath(os.path.join(folder, os.pardir))
        return [parent] if os.path.isdir(os.path.join(parent, EDITS)) else []
    try:
        children = sorted(entry.path for entry in os.scandir(folder) if entry.is_dir())
    except OSError:
        raise UsageError(f"{path}: no such directory; pass a trace folder (default {DEFAULT_TRACE_DIR})") from None
    return [child for child in children if os.path.isdir(os.path.join(child, EDITS))]


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
        matching = [s for s in stores if any(args.reset in (e.kernel, e.file, os.path.splitext(e.file)[0]) for e in s.entries())]
        if len(matching) > 1:
            folders = ", ".join(os.path.dirname(s.root) for s in matching)
            raise UsageError(
                f"several scripts have working copies for {args.reset!r}; name one: lower-trace edits FOLDER --reset {args.reset} (folders: {folders})"
            )
        done = [item for store in matching for item in store.reset(args.reset)]
        if not done:
            known = sorted({e.kernel for store in stores for e in store.entries()})
            raise UsageError(f"no working copy for {args.reset!r}; kernels: {', '.join(known)}")
        write_reset(sys.stdout, done)
        return 0
    write_listing(sys.stdout, [(store.root, store.entries()) for store in stores])
    return 0


def add_parser(sub: Any) -> None:
    edits = sub.add_parser("edits", help="list or reset the editable generated sources", description=cmd_edits.__doc__)
    add_trace(edits, "a run folder, a script folder or the trace root (every script in it)")
    edits.add_argument("--reset", metavar="KERNEL", help="return KERNEL's working copies (or one FILE's) to the generated source; edits are kept aside")
    edits.set_defaults(func=cmd_edits)
