"""Run as a script in a side's interpreter by lower-trace regress (regress/sides.py): what that
interpreter has -- its TileLang, whether lower-trace traces there (its startup hook), whether its
pytest plugin is registered, and which of the pass configs named in argv[1] (a JSON list) TileLang
does not know -- as one JSON line on stdout. Importing this module imports nothing of TileLang."""

import json
import sys
from importlib import util

# Run as a script, this folder is first on sys.path, and its tilelang.py and tvm.py would stand in
# for TileLang's own.
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
            from tilelang import tvm

            known = {str(k) for k in tvm.transform.PassContext.list_configs()}
            out["unknown"] = [k for k in wanted if k not in known]
        except Exception as exc:
            out["unknown_error"] = str(exc)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
