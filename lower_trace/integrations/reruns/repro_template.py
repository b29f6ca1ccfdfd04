# The repro.py that lower-trace writes, as a template (rerun/repro.py fills it in): a real
# module, so that ruff and pyright check the script's code. How it is filled:
#   - these comment lines at the top, and the lines between "# <template only>" and
#     "# </template only>", are not written;
#   - "if FILL_X:" at the start of a line keeps its body (or its "else:" body), dedented, when
#     X holds, and drops it, with the blank lines before it, when nothing is left;
#   - a line that is only a comment "# FILL_X ..." becomes the lines made for X, indented as it;
#   - every other FILL_X is replaced by the text made for X (every one must be known).
"""Reproducer written by lower-trace: FILL_SUMMARY

Run it where the same compiler is installed:  python repro.py
It loads the IR FILL_FIRST received (FILL_INPUT: TVM's JSON, source spans kept; TileLang layouts
are brought back exactly) and runs FILL_NAMES on it, under the original target and pass configs.
FILL_EXPECT
"""

import importlib  # noqa: F401  (the passes' arguments may name modules through it)
import json
import os
import sys

# <template only>: stand-ins for what repro.py fills in (the layout code is inlined from this module)
from lower_trace.integrations.reruns.tilelang_layout_restore import restore_layouts

FILL_TILELANG = FILL_FIND_PASS = True
FILL_CONFIGS: dict[str, object] = {}
FILL_TARGET = ""
FILL_FACTORY_MODULES: tuple[str, ...] = ()
FILL_ANONYMOUS: tuple[str, ...] = ()
# </template only>
if FILL_TILELANG:
    import tilelang  # noqa: F401  (registers TileLang's passes and IR nodes)
    from tilelang import tvm
else:
    import tvm
# FILL_MODULE_IMPORTS: "import tilelang.transform", ...: the modules the passes are built from

HERE = os.path.dirname(os.path.abspath(__file__))
PASS_CONFIGS = FILL_CONFIGS
TARGET = FILL_TARGET  # TVM's JSON of the target (and its host)


def build_passes():
    return [
        # FILL_PASSES: "tilelang.transform.ThreadSync('shared'),", ...: one line per pass, in order
    ]


if FILL_FIND_PASS:

    def find_pass(name):
        """The pass TVM calls `name`, built with no arguments by a factory of that name."""
        import importlib

        short = name.rsplit(".", 1)[-1]
        for module_name in FILL_FACTORY_MODULES:
            try:
                factory = getattr(importlib.import_module(module_name), short)
                built = factory()
            except Exception:
                continue
            if str(built.info.name) == name or (str(built.info.name) in FILL_ANONYMOUS and short == name):
                return built
        sys.exit(f"no Python factory builds the pass {name!r} here (it takes arguments, or exists only in C++)")


# --- TileLang layouts brought back exactly (a copy of lower-trace's tilelang_layout_restore.py) ---

# FILL_LAYOUT_RESTORE: integrations/reruns/tilelang_layout_restore.py, without its docstring


def main():
    with open(os.path.join(HERE, "FILL_INPUT"), encoding="utf-8") as handle:
        text = handle.read()
    mod, note = restore_layouts(tvm.ir.load_json(text), text)
    if note:
        print(f"note: {note}", file=sys.stderr)
    target = tvm.target.Target(json.loads(TARGET)) if TARGET else None
    with tvm.transform.PassContext(config=PASS_CONFIGS):
        for one_pass in build_passes():
            if target is not None:
                with target:
                    mod = one_pass(mod)
            else:
                mod = one_pass(mod)
    print(mod.script())
    print("the passes ran without an error", file=sys.stderr)


if __name__ == "__main__":
    main()
