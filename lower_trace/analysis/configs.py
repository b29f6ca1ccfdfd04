"""A kernel's pass configs as JSON values (true, 32, "x"), for every --json answer that shows them.

A kernel record keeps ``pass_configs`` as TVM prints the values (``"T.bool(True)"``, ``"32"``) and,
since traces record a rerun context, ``context["configs"]`` typed. Typed values win; a config only
the printed form has (an old trace) is read back from TVMScript's literal syntax.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from lower_trace.model import KernelTrace

_BOOL = re.compile(r"T\.bool\((True|False)\)")
_INT = re.compile(r"T\.u?int\d+\((-?\d+)\)|(-?\d+)")  # an int32 IntImm prints bare: "32"
_FLOAT = re.compile(r"T\.b?float\d+\((.+)\)|(-?\d+\.\d*(?:e[-+]?\d+)?)")


def config_from_text(text: str) -> Any:
    """A config value as TVM printed it, as the plain value it stands for; other text stays text."""
    match = _BOOL.fullmatch(text)
    if match:
        return match.group(1) == "True"
    match = _INT.fullmatch(text)
    if match:
        return int(match.group(1) or match.group(2))
    match = _FLOAT.fullmatch(text)
    if match:
        try:
            value = float(match.group(1) or match.group(2))
        except ValueError:
            return text
        return value if math.isfinite(value) else text  # JSON has no inf / nan
    if text[:1] in "([" and text[-1:] in ")]":  # an Array: ("-O3", "--use_fast_math")
        try:
            items = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return text
        if isinstance(items, (tuple, list)) and all(isinstance(item, (str, int, float, bool)) for item in items):
            return list(items)
    return text


def typed_configs(kernel: KernelTrace) -> dict[str, Any]:
    """The pass configs the kernel was compiled under, each as a JSON value, in pass_configs' order."""
    context = kernel.context if isinstance(kernel.context, dict) else {}
    found = context.get("configs")
    typed: dict[str, Any] = found if isinstance(found, dict) else {}
    configs = {key: typed[key] if key in typed else config_from_text(str(value)) for key, value in kernel.pass_configs.items()}
    configs.update((key, value) for key, value in typed.items() if key not in configs)
    return configs


def config_changes(a: KernelTrace, b: KernelTrace) -> dict[str, dict[str, Any]]:
    """{config: {"a": A's value, "b": B's value}} where they differ (None: not set), as JSON values."""
    ca, cb = typed_configs(a), typed_configs(b)
    differ = [key for key in sorted({*ca, *cb}) if _typed(ca.get(key)) != _typed(cb.get(key))]
    return {key: {"a": ca.get(key), "b": cb.get(key)} for key in differ}


def config_value_text(value: Any) -> str:
    """A pass config's value as a comparison says it ('x', True, 2.0, ['-O3']; unset). The report's
    summaries carry these texts: from the page's JSON, 2.0 is 2 and a list has no Python text."""
    return "unset" if value is None else repr(value) if isinstance(value, str) else str(value)


def _typed(value: Any) -> tuple[type, str]:
    # True == 1 in Python, [True] == [1], -0.0 == 0.0: a config set to true is not one set to 1. By
    # the value's text, as the report's page compares them (its summaries carry the texts).
    return (type(value), repr(value))
