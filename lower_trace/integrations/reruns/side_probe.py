"""Run as a script in a side's interpreter by lower-trace regress (regress/sides.py): what that
interpreter has -- its TileLang, whether lower-trace traces there (its startup hook), whether its
pytest plugin is registered, and which of the pass configs named in argv[1] TileLang does not know
or would refuse the value of -- as one JSON line on stdout. Importing this module imports nothing
of TileLang.

argv[1] is a JSON list of [owner, key, value] (owner: the side whose option gave it). Each value is
checked the way TVM checks it when a compile opens its PassContext: TVM converts it to the type the
config was registered with (PassContext.list_configs() says which) or refuses it, so the answer is
TVM's own, before any corpus runs."""

import json
import sys
from importlib import util

# Run as a script, this folder is first on sys.path: taken off, so that no module of ours can
# stand in for one of TileLang's or the standard library's.
if sys.path and sys.path[0] and __file__.startswith(sys.path[0]):
    del sys.path[0]


def main() -> None:
    out: dict = {"python": sys.executable}
    try:
        import tilelang

        out["tilelang"] = str(getattr(tilelang, "__version__", "?"))
    except Exception as exc:
        out["tilelang_error"] = f"{type(exc).__name__}: {exc}"
    # lower-trace importable, and its startup hook (lower_trace_startup.pth) installed: that is what
    # turns tracing on from the environment there. Found, not imported.
    hooked = any(type(f).__name__ == "LowerTraceTakeover" for f in sys.meta_path)
    out["lower_trace"] = "yes" if hooked and util.find_spec("lower_trace") is not None else ""
    try:
        from importlib import metadata

        out["plugin"] = any(e.value.startswith("lower_trace") for e in metadata.entry_points(group="pytest11"))
    except Exception:
        out["plugin"] = False
    wanted = json.loads(sys.argv[1]) if len(sys.argv) > 1 else []
    if wanted and "tilelang" in out:
        try:
            out["unknown"], out["mistyped"] = check_configs(wanted)
        except Exception as exc:
            out["unknown_error"] = str(exc)
    print(json.dumps(out))


def check_configs(wanted: list) -> tuple[list, list]:
    """([owner, key] TileLang does not know, [owner, key, declared type, TVM's message] it would refuse)."""
    from tilelang import tvm

    declared = tvm.transform.PassContext.list_configs()
    known = {str(k) for k in declared}
    unknown, mistyped = [], []
    for owner, key, value in wanted:
        if key not in known:
            unknown.append([owner, key])
            continue
        try:
            tvm.transform.PassContext(config={key: value})
        except Exception as exc:  # TVM's conversion to the declared type failed
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            mistyped.append([owner, key, declared_type(declared, key), (lines or [type(exc).__name__])[-1][:300]])
    return unknown, mistyped


def declared_type(declared, key: str) -> str:
    """The type key TVM registered the config with ("ir.IntImm", "ir.FloatImm", "str", ...)."""
    try:
        return str(declared[key]["type"])
    except Exception:
        return "?"


if __name__ == "__main__":
    main()
