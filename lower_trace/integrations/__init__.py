"""Compiler integrations: the only modules that import tvm or tilelang.

``attach(get_run)`` picks the integration that fits what is installed and
attaches it as soon as TileLang is imported (now, if it already is).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sys

from .. import post_import
from ..config import hide_mode_variable

_installed: list[Any] = []


def attach(get_run: Callable[[], Any]) -> None:
    if "tilelang" not in sys.modules:
        post_import.while_importing("tilelang", _builtin_tracer_stays_off)
    post_import.when_imported("tilelang", lambda module: _attach_tilelang(get_run))


def _builtin_tracer_stays_off() -> Callable[[], None]:
    """TileLang's __init__ switches its own tracer on when it sees TL_LOWER_TRACE (and
    announces it on stdout). Our variable, our tracer: TileLang does not see it while
    its __init__ runs, so its tracer never starts. Put back right after."""
    return hide_mode_variable()


def _attach_tilelang(get_run: Callable[[], Any]) -> None:
    run = get_run()
    if run is None:
        return
    try:
        from .tilelang import TileLangIntegration
    except ImportError as exc:
        run.note(
            f"this TileLang has no instrumentation API ({exc}); lower-trace supports TileLang 0.1.15 and later; "
            "your program runs on untraced",
            once="unsupported",
        )
        return
    try:
        integration = TileLangIntegration(get_run)
        integration.install()
    except Exception as exc:
        run.tracer_fault(exc)
        return
    _installed.append(integration)


def keep_builtin_off() -> None:
    """With an invalid TL_LOWER_TRACE, TileLang's own tracer would fall back to html; keep it off too."""
    if "tilelang" in sys.modules:
        return
    post_import.while_importing("tilelang", _builtin_tracer_stays_off)
    post_import.when_imported("tilelang", lambda module: None)


def detach() -> None:
    post_import.cancel("tilelang")
    while _installed:
        integration = _installed.pop()
        try:
            integration.uninstall()
        except Exception:
            pass
