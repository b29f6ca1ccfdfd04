"""Where a pass was run from, found by walking the Python stack.

Used to name passes that were defined without a name (TileLang's ``pass_fn``)
and to place passes that ran outside any named pipeline phase. Only a handful
of frames are looked at, so this stays cheap.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_FACTORY_CALL = re.compile(r"([A-Za-z_]\w*)\s*\([^()]*\)\s*\(")
_CALLED = re.compile(r"=\s*([A-Za-z_][\w.]*)\s*\(\s*\w+\s*\)\s*$")
_MAX_FRAMES = 24


@dataclass(frozen=True)
class CallSite:
    function: str  # qualified name, e.g. "CUDAPassPipelineBody"
    filename: str
    lineno: int

    def source_line(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()


def call_sites(skip_dirs: Sequence[str], marker: Any = None, limit: int = 8) -> tuple[list[CallSite], int]:
    """Python frames that called into the compiler, innermost first, skipping library internals.

    With a `marker` code object (e.g. ``Pass.__call__``) the whole stack is walked
    and the frames running it are counted: that tells how many nested passes were
    called from Python rather than C++. Without one, the walk stops at `limit` sites.
    """
    prefixes = tuple(os.path.join(d, "") for d in skip_dirs)
    sites: list[CallSite] = []
    marked = 0
    frame = sys._getframe(1)
    seen = 0
    while frame is not None and seen < _MAX_FRAMES:
        code = frame.f_code
        if code is marker:
            marked += 1
        elif len(sites) < limit and not code.co_filename.startswith(prefixes):
            sites.append(CallSite(getattr(code, "co_qualname", code.co_name), code.co_filename, frame.f_lineno))
        elif marker is None and len(sites) >= limit:
            break
        frame = frame.f_back
        seen += 1
    return sites, marked


def factory_name(site: CallSite) -> str | None:
    """For ``Factory()(mod)`` on the caller's line, the name ``Factory``; for
    ``mod = pipeline(mod)``, the name ``pipeline``."""
    line = site.source_line()
    matches = _FACTORY_CALL.findall(line)
    if matches:
        return matches[-1]
    called = _CALLED.search(line)
    return called.group(1).rsplit(".", 1)[-1] if called else None
