"""Pass configs added to every PassContext of a process: how lower-trace bisect --configs tries
one TileLang config at a time in its children, with no change to the user's program."""

from __future__ import annotations

import json
from typing import Any

try:  # TileLang's TVM is importable once TileLang is
    import tilelang  # noqa: F401
except ImportError:
    pass
import tvm

from lower_trace.integrations.adapters.patching import Patches

# The switches a user flips by hand: TileLang configs that turn something off, on, or force it.
_SWITCH_WORDS = ("disable_", "enable_", "force_")

_CONFIG_POSITION = 4  # PassContext(opt_level, required_pass, disabled_pass, instruments, config, ...)


def apply(configs_json: str, override: bool = False) -> Patches:
    """Every PassContext made from now on has these configs (the ones it names win; with override,
    ours win: a side of lower-trace regress forces them on every compile); the default context
    too, by entering one now. Undo with the returned Patches (the default stays entered: only a
    child that ends with the program asks for this)."""
    extra: dict[str, Any] = json.loads(configs_json)
    patches = Patches()
    original = tvm.transform.PassContext.__init__

    def merged(given: Any) -> dict[str, Any]:
        return {**dict(given or {}), **extra} if override else {**extra, **dict(given or {})}

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > _CONFIG_POSITION:
            args = (*args[:_CONFIG_POSITION], merged(args[_CONFIG_POSITION]), *args[_CONFIG_POSITION + 1 :])
        else:
            kwargs["config"] = merged(kwargs.get("config"))
        original(self, *args, **kwargs)

    patches.replace(tvm.transform.PassContext, "__init__", __init__)
    tvm.transform.PassContext(config=extra).__enter__()
    return patches


# Switches that only make the compiler talk (or write files), never change the code.
_QUIET_WORDS = ("verbose", "dump")


def switch_configs() -> list[str]:
    """The on/off pass configs a user flips by hand: registered as integers (TVM registers bools as
    IntImm) with disable_/enable_/force_ in the name, in every namespace (tl., tirx., ...), in the
    order of TileLang's PassConfigKey first. Without a registry to ask: PassConfigKey's tl. ones."""
    try:
        from tilelang.transform import PassConfigKey

        ordered = [str(getattr(member, "value", member)) for member in PassConfigKey]
    except ImportError:
        ordered = []
    try:
        registry = {str(key): str(dict(info).get("type", "")) for key, info in tvm.transform.PassContext.list_configs().items()}
    except Exception:
        registry = {}

    def switch(key: str) -> bool:
        return any(word in key for word in _SWITCH_WORDS) and not any(word in key for word in _QUIET_WORDS)

    if not registry:
        return [key for key in ordered if key.startswith("tl.") and switch(key)]
    flags = {key for key, kind in registry.items() if kind == "ir.IntImm" and switch(key)}
    return [key for key in ordered if key in flags] + sorted(flags - set(ordered))


def registered_configs() -> set[str]:
    """The pass configs TVM accepts here (an empty set when it cannot say)."""
    try:
        return {str(key) for key in tvm.transform.PassContext.list_configs()}
    except Exception:
        return set()
