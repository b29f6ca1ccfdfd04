"""The model's records as JSON: what the trace's files hold (store/), what `--json` prints and the
report's page receives (render/). Writing leaves default values out; reading keeps only the
fields a record knows, so a newer writer's extra keys do not break an older reader.
"""

from __future__ import annotations

import enum
from dataclasses import fields
from typing import Any

from lower_trace.model import (
    CodegenRecord,
    EditStatus,
    ErrorInfo,
    FragmentLayout,
    KernelRebuild,
    LaunchRecord,
    LaunchValue,
    PassCall,
    PassRecord,
    PassStatus,
    RunInfo,
)

_ALWAYS = frozenset(("status", "kernel", "seq", "name"))
_FIELD_DEFAULTS: dict[type, tuple[tuple[str, Any, bool], ...]] = {}
_PLAIN = frozenset((str, int, float, bool))  # written as they are


def to_json(record: Any) -> dict[str, Any]:
    """A JSON-ready dict of a record: Enums become values, default-valued fields are left out.

    Written by hand rather than with dataclasses.asdict: this runs twice per pass (the trace, the
    report), so the common case -- a plain value or a default -- takes one type test.
    """
    cls = type(record)
    spec = _FIELD_DEFAULTS.get(cls)
    if spec is None:
        spec = tuple((f.name, f.default, f.name in _ALWAYS) for f in fields(record))
        _FIELD_DEFAULTS[cls] = spec
    out: dict[str, Any] = {}
    for name, default, always in spec:
        value = getattr(record, name)
        if value is None or (not always and value == default):
            continue
        out[name] = value if type(value) in _PLAIN else _json_value(value)
    return out


def _json_value(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return [to_json(item) if hasattr(item, "__dataclass_fields__") else item for item in value]
    if hasattr(value, "__dataclass_fields__"):
        return to_json(value)
    return value


def _error_from(data: Any) -> ErrorInfo | None:
    if not data:
        return None
    return ErrorInfo(type=str(data.get("type", "")), message=str(data.get("message", "")), traceback=str(data.get("traceback", "")))


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """Keep only the fields cls knows, so newer writers' extra keys do not break loading."""
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in data.items() if key in names}


def pass_from_json(data: dict[str, Any]) -> PassRecord:
    values = _known(PassRecord, data)
    values["status"] = PassStatus(values.get("status", "incomplete"))
    values["error"] = _error_from(values.get("error"))
    values["layouts"] = tuple(_layout_from(item) for item in values.get("layouts") or ())
    values["call"] = _call_from(values.get("call"))
    return PassRecord(**values)


def _call_from(data: Any) -> PassCall | None:
    if not isinstance(data, dict) or not data.get("factory"):
        return None
    values = _known(PassCall, data)
    values["args"] = tuple(str(item) for item in values.get("args") or ())
    values["kwargs"] = tuple((str(key), str(value)) for key, value in values.get("kwargs") or ())
    values["imports"] = tuple(str(item) for item in values.get("imports") or ())
    return PassCall(**values)


def _layout_from(data: dict[str, Any]) -> FragmentLayout:
    values = _known(FragmentLayout, data)
    for name in ("shape", "vars", "index"):
        values[name] = tuple(values.get(name) or ())
    return FragmentLayout(**values)


def codegen_from_json(data: dict[str, Any]) -> CodegenRecord:
    values = _known(CodegenRecord, data)
    values["error"] = _error_from(values.get("error"))
    status = values.get("edit_status")
    if status is not None and not isinstance(status, str):
        raise ValueError("edit_status is not a string")
    values["edit_status"] = EditStatus(status) if status else None  # an unknown word: ValueError, a damaged record
    return CodegenRecord(**values)


def launch_from_json(data: dict[str, Any]) -> LaunchRecord:
    """A launch record; raises (TypeError, ValueError) on one of the wrong shape (a damaged line)."""
    values = _known(LaunchRecord, data)
    values["error"] = _error_from(values.get("error"))
    for side in ("args", "after"):
        values[side] = tuple(_launch_value(item) for item in values.get(side, ()))
    return LaunchRecord(**values)


def _launch_value(data: dict[str, Any]) -> LaunchValue:
    values = _known(LaunchValue, data)
    for key in ("shape", "strides"):
        values[key] = tuple(int(n) for n in values.get(key, ()))
    return LaunchValue(**values)


def rebuild_from_json(data: dict[str, Any]) -> KernelRebuild:
    """A kernel's rebuild record; raises (TypeError, ValueError) on one of the wrong shape."""
    values = _known(KernelRebuild, data)
    for key in ("compile", "factory", "versions"):
        if not isinstance(values.get(key, {}), dict):
            raise ValueError(f"{key} is not an object")
    return KernelRebuild(**values)


def run_from_json(data: dict[str, Any]) -> RunInfo:
    values = _known(RunInfo, data)
    values["argv"] = tuple(values.get("argv", ()))
    values["notes"] = tuple(values.get("notes", ()))
    return RunInfo(**values)
