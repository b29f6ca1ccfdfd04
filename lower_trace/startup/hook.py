"""Called by the installed ``lower_trace_startup.pth`` when TL_LOWER_TRACE is set.

It must never stop the interpreter from starting: every problem is one line on
stderr and the program runs on untraced.
"""

from __future__ import annotations

import sys

_done = False


def activate() -> None:
    global _done
    if _done:  # safe to run twice (a .pth can be processed more than once)
        return
    _done = True
    try:
        from lower_trace.config import ConfigError, config_from_env

        try:
            config = config_from_env()
        except ConfigError as exc:
            sys.stderr.write(f"lower-trace: {exc}; tracing stays off\n")
            from lower_trace.integrations import keep_builtin_off

            keep_builtin_off()
            return
        if not config.enabled:
            return
        from lower_trace import api

        api.start(config)
    except Exception as exc:  # pragma: no cover - last line of defence
        sys.stderr.write(f"lower-trace: could not switch tracing on ({type(exc).__name__}: {exc}); running untraced\n")
        try:  # untraced means untraced: TileLang's own tracer must not start in our place
            from lower_trace.integrations import keep_builtin_off

            keep_builtin_off()
        except Exception:
            pass
