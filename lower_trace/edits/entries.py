"""The edit index's entries (override.py): their format, the old format, and what
`lower-trace edits` derives from them alone -- which copies are stale. Pure Python.

An entry (format 2) says which kernel variant a working copy is for::

    kernel, signature, role, language   the group: copies of one kernel's source
    variant, skeleton, reference        the variant's key, its code, the stored TIR of that code
    constants, config                   the literals it differs in from that TIR; target and pass configs
    order                               when the copy was created (the group's listing order)
    from                                the older codes this copy was taken over from, oldest first
    taken                               when the copy last got its variant (created, or taken over)
    failed                              the hash of the working copy's text whose compile failed

`taken` and `failed` are newer than format 2 itself: an entry without them reads as
taken when it was created, and not failed.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

_SAFE_FILE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")  # one plain name inside edits/, never a path
_HEX = re.compile(r"[0-9a-f]{32}")
STRINGS = ("kernel", "signature", "role", "language", "variant", "skeleton", "reference", "config")

# Why a copy is stale, as the listing says it.
FAILED = "compile failed"
CODE_CHANGED = "code changed"


def text_digest(text: str) -> str:
    """What `failed` holds: the working copy's text, hashed (surrogates as the files are read)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def valid(name: Any, entry: Any) -> dict[str, Any] | None:
    """A well-formed entry (format 2), or None (a hand-edited index must not break the compile)."""
    if not isinstance(name, str) or not _SAFE_FILE.fullmatch(name) or not isinstance(entry, dict):
        return None
    if not all(isinstance(entry.get(key), str) for key in STRINGS) or not isinstance(entry.get("order"), int):
        return None
    if entry["variant"] and not all(_HEX.fullmatch(entry[key]) for key in ("variant", "skeleton", "reference")):
        return None
    constants, history = entry.get("constants"), entry.get("from")
    if not isinstance(constants, dict) or not all(isinstance(k, str) and k.isdigit() and isinstance(v, str) for k, v in constants.items()):
        return None
    if not isinstance(history, list) or not all(isinstance(code, str) for code in history):
        return None
    taken, failed = entry.get("taken", entry["order"]), entry.get("failed", "")
    if not isinstance(taken, int) or not (failed == "" or (isinstance(failed, str) and _HEX.fullmatch(failed))):
        return None
    out = {key: entry[key] for key in STRINGS}
    out.update(constants=dict(constants), order=entry["order"], taken=taken, failed=failed)
    out["from"] = list(history)
    return out


def migrate(key: Any, entry: Any, order: int) -> dict[str, Any] | None:
    """A format-1 entry ("kernel|signature|role" -> file, kernel, role, language) as a copy
    with no variant yet: the first variant it fits takes it over."""
    if not isinstance(key, str) or not isinstance(entry, dict):
        return None
    kernel, role, language = entry.get("kernel"), entry.get("role"), entry.get("language", "")
    if not all(isinstance(v, str) for v in (kernel, role, language)) or not isinstance(entry.get("file"), str):
        return None
    head, tail = f"{kernel}|", f"|{role}"
    if not (key.startswith(head) and key.endswith(tail) and len(key) >= len(head) + len(tail)):
        return None
    signature = key[len(head) : len(key) - len(tail)]
    unknown = dict.fromkeys(("variant", "skeleton", "reference", "config"), "")
    entry = {"kernel": kernel, "signature": signature, "role": role, "language": language, **unknown, "constants": {}}
    return {**entry, "order": order, "taken": order, "failed": "", "from": []}


def left_behind(group: dict[str, dict[str, Any]]) -> set[str]:
    """The copies of one group (file -> entry) whose code the kernel left: a copy of the group
    was taken over from that code by changed code later than any copy last got that code.

    Such a copy's variant has not been compiled since the kernel's code changed (it would
    have been taken over too). Code the group never left -- another kernel of the same
    name and buffers, or changed code too unlike the old to take a copy over -- leaves
    nothing behind.
    """
    last_had: dict[str, int] = {}  # code -> when a copy last got it
    last_left: dict[str, int] = {}  # code -> when a copy that had it was last taken over
    for entry in group.values():
        if not entry["variant"]:
            continue
        last_had[entry["skeleton"]] = max(last_had.get(entry["skeleton"], entry["taken"]), entry["taken"])
        for code in entry["from"]:
            if code != entry["skeleton"]:
                last_left[code] = max(last_left.get(code, entry["taken"]), entry["taken"])
    return {
        name for name, entry in group.items()
        if entry["variant"] and last_left.get(entry["skeleton"], -1) > last_had[entry["skeleton"]]
    }
