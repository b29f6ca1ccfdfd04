"""Reproducers: a failed pass as a folder that makes the failure happen again without the
user's program -- ``input.json`` (the IR the pass received, TVM's own JSON), ``repro.py``
(plain Python: needs TileLang or TVM, not lower-trace) and ``error.txt`` (what failed).

Pure: the text of the script is built from recorded data (how to build each pass is
worked out by the integrations: integrations/replay.py's pass_build). ``repro.py`` carries
a copy of integrations/tilelang_layout_restore.py, which brings TileLang layouts back
exactly. Capture writes one for every failed pass (capture/session.py); ``lower-trace
repro`` writes one from a stored trace.
"""

from __future__ import annotations

import os
import pprint
from collections.abc import Sequence
from importlib import resources

from lower_trace.integrations.pass_factories import ANONYMOUS, FACTORY_MODULES
from lower_trace.model import ErrorInfo, KernelTrace, PassBuild, PassRecord, ReproSpec, Trace
from lower_trace.store.layout import REPRO
from lower_trace.store.paths import safe_component
from lower_trace.text_safety import headline

INPUT = "input.json"
SCRIPT = "repro.py"
ERROR = "error.txt"


def folder(run_dir: str, kernel_id: str, seq: int, name: str) -> str:
    """Where a run keeps the reproducer of pass seq of a kernel: repro/k4-23-LayoutInference."""
    return os.path.join(run_dir, REPRO, f"{kernel_id}-{seq}-{safe_component(name.rsplit('.', 1)[-1])}")


def write(folder: str, spec: ReproSpec, ir_json: str) -> str:
    """Write the reproducer into folder (created; an earlier reproducer's files there replaced);
    returns the script's path."""
    os.makedirs(folder, exist_ok=True)
    for name in (INPUT, SCRIPT, ERROR):
        if os.path.lexists(os.path.join(folder, name)):
            os.remove(os.path.join(folder, name))
    with open(os.path.join(folder, INPUT), "w", encoding="utf-8") as handle:
        handle.write(ir_json)
    if spec.error is not None:
        with open(os.path.join(folder, ERROR), "w", encoding="utf-8") as handle:
            handle.write(f"{spec.error.type}: {spec.error.message}\n")
    path = os.path.join(folder, SCRIPT)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(script(spec))
    return path


def command(folder: str) -> str:
    return f"python {os.path.join(folder, SCRIPT)}"


def _first_line(error: ErrorInfo | None) -> str:
    return f"{error.type}: {headline(error.message)}" if error is not None else ""


def script(spec: ReproSpec) -> str:
    """The text of repro.py."""
    tilelang = "tilelang" in spec.versions
    versions = ", ".join(f"{name} {version}" for name, version in spec.versions.items()) or "unknown"
    modules = sorted({module for build in spec.passes for module in build.imports} - {"tvm"})
    names = " -> ".join(build.name for build in spec.passes)
    note = f"\n{spec.why}\n" if spec.why else ""
    if spec.error is not None:
        what = f"{spec.failed} failed on kernel {spec.kernel}.\n\nRecorded with {versions}.\nError: {_first_line(spec.error)}\n"
        expect = f"The error should be the one above ({ERROR}); passes that now succeed print the IR they made."
    else:
        what = f"{spec.failed} on kernel {spec.kernel}, rerun (it did not fail when traced).\n\nRecorded with {versions}.\n"
        expect = "It prints the IR the passes make."
    header = (
        f'"""Reproducer written by lower-trace: {what}{note}\n'
        f"Run it where the same compiler is installed:  python repro.py\n"
        f"It loads the IR {spec.first} received ({INPUT}: TVM's JSON, source spans kept; TileLang layouts\n"
        f"are brought back exactly) and runs {names} on it, under the original target and pass configs.\n{expect}\n"
        '"""\n'
    )
    imports = "import tilelang  # noqa: F401  (registers TileLang's passes and IR nodes)\nfrom tilelang import tvm\n" if tilelang else "import tvm\n"
    imports += "".join(f"import {module}\n" for module in modules)
    configs = pprint.pformat(dict(spec.context.get("configs") or {}), sort_dicts=True)
    target = spec.context.get("target") or ""
    listing = "".join(f"        {build.expression},\n" for build in spec.passes)
    return (
        header
        + "\nimport importlib  # noqa: F401  (the passes' arguments may name modules through it)\nimport json\nimport os\nimport sys\n\n"
        + imports
        + f"\nHERE = os.path.dirname(os.path.abspath(__file__))\nPASS_CONFIGS = {configs}\nTARGET = {target!r}  # TVM's JSON of the target (and its host)\n"
        + f"\n\ndef build_passes():\n    return [\n{listing}    ]\n"
        + (_find_pass() if any(build.expression.startswith("find_pass(") for build in spec.passes) else "")
        + _layout_restore()
        + _MAIN.replace("{INPUT}", INPUT)
    )


def _layout_restore() -> str:
    """integrations/tilelang_layout_restore.py, as the script's own code (it needs no lower-trace)."""
    source = resources.files("lower_trace").joinpath("integrations").joinpath("tilelang_layout_restore.py").read_text(encoding="utf-8")
    body = source.split('"""', 2)[2].lstrip("\n")  # without its module docstring
    return "\n\n# --- TileLang layouts brought back exactly (a copy of lower-trace's tilelang_layout_restore.py) ---\n\n" + body


_FIND_PASS = '''

def find_pass(name):
    """The pass TVM calls `name`, built with no arguments by a factory of that name."""
    import importlib

    short = name.rsplit(".", 1)[-1]
    for module_name in {FACTORY_MODULES}:
        try:
            factory = getattr(importlib.import_module(module_name), short)
            built = factory()
        except Exception:
            continue
        if str(built.info.name) == name or (str(built.info.name) in {ANONYMOUS} and short == name):
            return built
    sys.exit(f"no Python factory builds the pass {name!r} here (it takes arguments, or exists only in C++)")
'''

def _find_pass() -> str:
    return _FIND_PASS.replace("{FACTORY_MODULES}", repr(FACTORY_MODULES)).replace("{ANONYMOUS}", repr(ANONYMOUS))


_MAIN = '''

def main():
    with open(os.path.join(HERE, "{INPUT}"), encoding="utf-8") as handle:
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
'''


def spec_for(trace: Trace, kernel: KernelTrace, record: PassRecord, passes: Sequence[PassBuild], why: str = "") -> ReproSpec:
    """The reproducer of record (a pass of kernel), running `passes` from the first one's input."""
    error = record.error if record.status.value in ("failed", "incomplete") and record.error is not None else None
    return ReproSpec(record.name, tuple(passes), kernel.name, dict(kernel.context), dict(trace.run.versions), error, why)
