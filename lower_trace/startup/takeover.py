"""Put seed_shims' functions into ``tilelang.tools.lower_trace`` as it is imported.

The startup hook (lower_trace_startup.pth) adds a finder to sys.meta_path that looks only at
that module's name and imports nothing else: this module is imported once the user's program
imports TileLang's tracer module, never before. TL_LOWER_TRACE_BUILTIN=1 leaves the finder out (set
from Python before that import, it keeps the module TileLang's own too: the benchmarks do so).
"""

from __future__ import annotations

import sys
from typing import Any

from lower_trace.integrations.adapters.builtin_tracer import ENV_BUILTIN, MODULE, ORIGINALS


def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
    """Called by the startup hook's finder for MODULE: import it with take_over() run right after
    (unless TL_LOWER_TRACE_BUILTIN=1 is set by now: then it stays TileLang's own)."""
    from lower_trace.config import switch_is_on
    from lower_trace.integrations.adapters import post_import

    for finder in list(sys.meta_path):
        if type(finder).__name__ == "LowerTraceTakeover":
            sys.meta_path.remove(finder)  # once is enough
    if switch_is_on(ENV_BUILTIN):
        return None
    post_import.when_imported(MODULE, take_over)
    return post_import.find_spec(name, path, target)


def take_over(module: Any) -> None:
    from lower_trace.startup.seed_shims import SHIMS

    try:
        kept = {attr: getattr(module, attr) for attr in SHIMS if hasattr(module, attr)}
        setattr(module, ORIGINALS, kept)
        for attr, function in SHIMS.items():
            setattr(module, attr, function)
    except Exception as exc:  # never stop the user's import
        sys.stderr.write(f"lower-trace: could not take over {MODULE} ({type(exc).__name__}: {exc}); it stays TileLang's own\n")
