"""TileLang's tracer module, driven by lower-trace.

Scripts written for TileLang's built-in tracer call it through its module
(``tilelang.tools.lower_trace``)::

    lower_trace.enable(mode="html", trace_dir="traces", codegen_output="codegen.cu")
    ...
    lower_trace.reset(); lower_trace.disable()
    lower_trace.lower_trace(func, [pass_a, ("named", pass_b)], mode="both", html_path="diff.html")

With lower-trace installed, that module's ``enable``, ``reset``, ``disable`` and ``lower_trace``
are these functions (the same parameters; startup/takeover.py puts them there when the module is
imported), so the script gets lower-trace: one tracer, one report format, working copies
in ``edits/``. ``TL_LOWER_TRACE_BUILTIN=1`` keeps TileLang's own.
"""

from __future__ import annotations

import sys
from typing import Any

from lower_trace.config import parse_mode_loosely, seed_default_mode
from lower_trace.integrations.adapters.builtin_tracer import ENV_BUILTIN

_UNSET: Any = object()
_said: list[bool] = []


def _say_once() -> None:
    if not _said:
        _said.append(True)
        sys.stderr.write(f"lower-trace: tilelang.tools.lower_trace now drives lower-trace ({ENV_BUILTIN}=1 keeps TileLang's own tracer)\n")


def enable(*, mode: Any = _UNSET, trace_dir: Any = _UNSET, codegen_output: Any = _UNSET) -> None:
    """Trace every later compile (TileLang's enable(), same parameters): mode "terminal", "html" or
    "both" (None or a falsy value: off; unset: TL_LOWER_TRACE, else html); trace_dir (unset:
    TL_LOWER_TRACE_DIR, else ./tmp/lower_trace_dir); codegen_output: a file that also holds the
    first kernel's editable generated source (None: no working copies; unset: edits/)."""
    from lower_trace import api

    _say_once()
    if mode is _UNSET:
        mode = seed_default_mode()
    if mode is None or not parse_mode_loosely(str(mode)):
        api.disable()
        return
    api.enable(
        mode=str(mode),
        trace_dir=None if trace_dir is _UNSET or trace_dir is None else trace_dir,
        codegen_output="" if codegen_output is _UNSET else codegen_output,
    )


def reset() -> None:
    """Close the current run (its report is written); later compiles go to a new one."""
    from lower_trace import api

    api.reset()


def disable() -> None:
    """Stop tracing; TileLang is left exactly as it was."""
    from lower_trace import api

    api.disable()


def lower_trace(
    func_or_mod: Any, passes: Any, *, mode: str = "terminal", context: int = 3, html_path: str = "lower_trace_report.html",
) -> list[dict[str, Any]]:
    """TileLang's one-shot lower_trace(): lower_trace.run_passes with the same parameters and result."""
    from lower_trace import api

    return api.run_passes(func_or_mod, passes, mode=mode, context=context, html_path=html_path)


SHIMS = {"enable": enable, "reset": reset, "disable": disable, "lower_trace": lower_trace}
