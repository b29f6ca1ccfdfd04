"""Writing a file whole or not at all: the one atomic write every module uses.

A reader (a browser opening the report, the next traced run reading a working copy, a second
process) sees the old file or the new one, never half of one: the text goes to a temporary in
the same folder (so the rename cannot cross file systems), which is renamed over the path.
On failure the temporary is removed and the error propagates; the old file is untouched.
There is no fsync: what this guards against is a process killed or a disk filling up
mid-write, not a power cut, and a sweep of hundreds of kernels must not wait on the disk.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def replacing(path: str) -> Iterator[str]:
    """A temporary path beside `path` to write to; renamed over `path` when the block ends
    normally, removed when it raises. Unique per process and thread."""
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def write_atomically(path: str, text: str, errors: str = "strict") -> None:
    """Write text (UTF-8; errors: the encoder's error handler) to path whole, or not at all.
    Line ends are written as they are in text."""
    with replacing(path) as tmp, open(tmp, "w", encoding="utf-8", errors=errors, newline="") as handle:
        handle.write(text)
