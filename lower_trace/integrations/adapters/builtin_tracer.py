"""TileLang's built-in tracer module as lower-trace knows it: its name, the variable that keeps it
TileLang's own, and where the seed's takeover (startup/takeover.py, startup/seed_shims.py) keeps
its own functions, which the integrations must still reach. A leaf: it imports nothing, TileLang
included, so the startup hook's takeover can use it before TileLang is imported."""

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
