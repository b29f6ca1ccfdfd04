"""Names shared by the seed's module takeover (_takeover.py, seed_api.py) and the integrations that
must still reach TileLang's own tracer functions (a leaf: it imports nothing of lower-trace)."""

from __future__ import annotations

from typing import Any

MODULE = "tilelang.tools.lower_trace"  # TileLang's tracer module
ENV_BUILTIN = "TL_LOWER_TRACE_BUILTIN"  # 1: that module stays TileLang's own tracer
ORIGINALS = "_lower_trace_builtin"  # the module's own functions, kept on it when taken over: {name: function}


def builtin(module: Any, attr: str) -> Any:
    """TileLang's own function `attr` of its tracer module, taken over or not (None if it has none)."""
    return getattr(module, ORIGINALS, {}).get(attr) or getattr(module, attr, None)


def taken_over(module: Any) -> bool:
    return hasattr(module, ORIGINALS)
