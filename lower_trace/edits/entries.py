"""The edit index's entries (working_copies.py): their format, the old format, and what
`lower-trace edits` derives from them alone -- which copies are stale. Pure Python.

An entry (format 2) says which kernel variant a working copy is for; as JSON::

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
from dataclasses import dataclass
from typing import NamedTuple

_SAFE_FILE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")  # one plain name inside edits/, never a path
_HEX = re.compile(r"[0-9a-f]{32}")
_PLACE = re.compile(r"[0-9]+")
STRINGS = ("kernel", "signature", "role", "language", "variant", "skeleton", "reference", "config")


class Group(NamedTuple):
    """The copies of one kernel's generated source: a variant picks its copy among them."""

    kernel: str
    signature: str
    role: str
    language: str


@dataclass(frozen=True)
class IndexEntry:
    """One working copy's entry in the index (see the module doc for each field)."""

    kernel: str
    signature: str
    role: str
    language: str
    variant: str  # "" for a copy from format 1, not matched to a variant yet
    skeleton: str
    reference: str
    config: str
    constants: tuple[tuple[int, str], ...]  # (place among the reference's literals, the literal), in order
    order: int
    taken: int
    failed: str
    history: tuple[str, ...]  # "from" in the JSON

    @property
    def group(self) -> Group:
        return Group(self.kernel, self.signature, self.role, self.language)

    def to_json(self) -> dict[str, object]:
        """The entry as index.json and index.log hold it."""
        out: dict[str, object] = {key: getattr(self, key) for key in STRINGS}
        out.update(constants={str(place): literal for place, literal in self.constants}, order=self.order, taken=self.taken, failed=self.failed)
        out["from"] = list(self.history)
        return out

    @classmethod
    def parse(cls, name: object, data: object) -> IndexEntry | None:
        """The entry `data` (format 2) for the file `name`, or None when either is not well formed
        (a hand-edited index must not break the compile)."""
        if not isinstance(name, str) or not _SAFE_FILE.fullmatch(name) or not isinstance(data, dict):
            return None
        strings = [data.get(key) for key in STRINGS]
        order = data.get("order")
        if not all(isinstance(value, str) for value in strings) or not isinstance(order, int):
            return None
        if data["variant"] and not all(_HEX.fullmatch(data[key]) for key in ("variant", "skeleton", "reference")):
            return None
        constants, history = data.get("constants"), data.get("from")
        if not isinstance(constants, dict) or not all(isinstance(k, str) and _PLACE.fullmatch(k) and isinstance(v, str) for k, v in constants.items()):
            return None
        if not isinstance(history, list) or not all(isinstance(code, str) for code in history):
            return None
        taken, failed = data.get("taken", order), data.get("failed", "")
        if not isinstance(taken, int) or not (failed == "" or (isinstance(failed, str) and _HEX.fullmatch(failed))):
            return None
        kernel, signature, role, language, variant, skeleton, reference, config = (str(value) for value in strings)
        places = tuple(sorted((int(place), literal) for place, literal in constants.items()))
        return cls(kernel, signature, role, language, variant, skeleton, reference, config, places, order, taken, str(failed), tuple(history))

    @classmethod
    def migrate(cls, key: object, data: object, order: int) -> tuple[str, IndexEntry] | None:
        """A format-1 entry ("kernel|signature|role" -> file, kernel, role, language) as (file, a copy
        with no variant yet): the first variant it fits takes it over. None when it is not well formed."""
        if not isinstance(key, str) or not isinstance(data, dict):
            return None
        kernel, role, language, name = data.get("kernel"), data.get("role"), data.get("language", ""), data.get("file")
        if not (isinstance(kernel, str) and isinstance(role, str) and isinstance(language, str) and isinstance(name, str)):
            return None
        if not _SAFE_FILE.fullmatch(name):
            return None
        head, tail = f"{kernel}|", f"|{role}"
        if not (key.startswith(head) and key.endswith(tail) and len(key) >= len(head) + len(tail)):
            return None
        signature = key[len(head) : len(key) - len(tail)]
        return name, cls(kernel, signature, role, language, "", "", "", "", constants=(), order=order, taken=order, failed="", history=())


def text_digest(text: str) -> str:
    """What `failed` holds: the working copy's text, hashed (surrogates as the files are read)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def left_behind(group: dict[str, IndexEntry]) -> set[str]:
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
        if not entry.variant:
            continue
        last_had[entry.skeleton] = max(last_had.get(entry.skeleton, entry.taken), entry.taken)
        for code in entry.history:
            if code != entry.skeleton:
                last_left[code] = max(last_left.get(code, entry.taken), entry.taken)
    return {name for name, entry in group.items() if entry.variant and last_left.get(entry.skeleton, -1) > last_had[entry.skeleton]}
