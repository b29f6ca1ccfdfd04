"""Reproducers: a failed pass as a folder that makes the failure happen again without the
user's program -- ``input.json`` (the IR the pass received, TVM's own JSON), ``repro.py``
(plain Python: needs TileLang or TVM, not lower-trace) and ``error.txt`` (what failed).

Pure: the script is integrations/reruns/repro_template.py (a module ruff and pyright check) filled in
with recorded data (how to build each pass is worked out by the integrations:
integrations/reruns/replay.py's pass_build). ``repro.py`` carries a copy of
integrations/reruns/tilelang_layout_restore.py, which brings TileLang layouts back exactly.
Capture writes one for every failed pass (capture/reproducer.py); ``lower-trace repro``
writes one from a stored trace.
"""

from __future__ import annotations

import os
import pprint
import re
from collections.abc import Sequence
from importlib import resources

from lower_trace.integrations.reruns.pass_factories import ANONYMOUS, FACTORY_MODULES
from lower_trace.model import ErrorInfo, KernelTrace, PassBuild, PassRecord, ReproSpec, Trace
from lower_trace.store.layout import REPRO
from lower_trace.store.paths import safe_component
from lower_trace.text_safety import headline

INPUT = "input.json"
SCRIPT = "repro.py"
ERROR = "error.txt"
TEMPLATE = "repro_template.py"  # the script, with its placeholders (in integrations/reruns/: it imports TVM)


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
    """The text of repro.py: repro_template.py filled in with spec."""
    versions = ", ".join(f"{name} {version}" for name, version in spec.versions.items()) or "unknown"
    note = f"\n{spec.why}\n" if spec.why else ""
    if spec.error is not None:
        what = f"{spec.failed} failed on kernel {spec.kernel}.\n\nRecorded with {versions}.\nError: {_first_line(spec.error)}\n"
        expect = f"The error should be the one above ({ERROR}); passes that now succeed print the IR they made."
    else:
        what = f"{spec.failed} on kernel {spec.kernel}, rerun (it did not fail when traced).\n\nRecorded with {versions}.\n"
        expect = "It prints the IR the passes make."
    texts = {
        "SUMMARY": (what + note)[:-1],  # the template's blank line follows it
        "FIRST": spec.first,
        "INPUT": INPUT,
        "NAMES": " -> ".join(build.name for build in spec.passes),
        "EXPECT": expect,
        "CONFIGS": pprint.pformat(dict(spec.context.get("configs") or {}), sort_dicts=True),
        "TARGET": repr(spec.context.get("target") or ""),
        "FACTORY_MODULES": repr(FACTORY_MODULES),
        "ANONYMOUS": repr(ANONYMOUS),
    }
    lines = {
        "MODULE_IMPORTS": [f"import {module}" for module in sorted({module for build in spec.passes for module in build.imports} - {"tvm"})],
        "PASSES": [f"{build.expression}," for build in spec.passes],
        "LAYOUT_RESTORE": _layout_restore().splitlines(),
    }
    switches = {
        "TILELANG": "tilelang" in spec.versions,
        "FIND_PASS": any(build.expression.startswith("find_pass(") for build in spec.passes),
    }
    return fill(_template(), texts, lines, switches)


def _template() -> str:
    return resources.files("lower_trace").joinpath("integrations").joinpath("reruns").joinpath(TEMPLATE).read_text(encoding="utf-8")


def _layout_restore() -> str:
    """integrations/reruns/tilelang_layout_restore.py without its module docstring: the script's own copy (it needs no lower-trace)."""
    source = resources.files("lower_trace").joinpath("integrations").joinpath("reruns").joinpath("tilelang_layout_restore.py").read_text(encoding="utf-8")
    return source.split('"""', 2)[2].lstrip("\n")


_TOKEN = re.compile(r"FILL_([A-Z_]+)")
_LINES = re.compile(r"(\s*)# FILL_([A-Z_]+)\b.*")
_SWITCH = re.compile(r"if FILL_([A-Z_]+):")


def fill(template: str, texts: dict[str, str], lines: dict[str, list[str]], switches: dict[str, bool]) -> str:
    """The template's text as its header says (repro_template.py): its notes and stand-ins left
    out, its `if FILL_X:` blocks resolved, its `# FILL_X` lines and FILL_X tokens replaced. Each
    template line is read once: what is filled in is never searched for tokens."""
    source = template.splitlines()
    while source and source[0].startswith("#"):  # the notes on the template
        source.pop(0)
    kept: list[str] = []
    skipping = False
    for line in source:
        if line.startswith(("# <template only>", "# </template only>")):
            skipping = not line.startswith("# </")
        elif not skipping:
            kept.append(line)
    out: list[str] = []
    for line in _resolve(kept, switches):
        many = _LINES.fullmatch(line)
        if many is not None:
            out.extend(many.group(1) + item if item else "" for item in lines[many.group(2)])
        else:
            out.append(_TOKEN.sub(lambda token: texts[token.group(1)], line))
    return "\n".join(out) + "\n"


def _resolve(lines: list[str], switches: dict[str, bool]) -> list[str]:
    """`if FILL_X:` / `else:` blocks replaced by the body that X chooses, dedented; a block that
    leaves nothing takes the blank lines before it along."""
    out: list[str] = []
    at = 0
    while at < len(lines):
        switch = _SWITCH.fullmatch(lines[at])
        if switch is None:
            out.append(lines[at])
            at += 1
            continue
        body, at = _block(lines, at + 1)
        other: list[str] = []
        if at < len(lines) and lines[at] == "else:":
            other, at = _block(lines, at + 1)
        chosen = body if switches[switch.group(1)] else other
        if not chosen:
            while out and not out[-1]:
                out.pop()
        out.extend(_resolve(chosen, switches))
    return out


def _block(lines: list[str], at: int) -> tuple[list[str], int]:
    """The body starting at `at` (dedented, without blank lines at its ends) and the line after it."""
    end = at
    while end < len(lines) and (not lines[end] or lines[end].startswith("    ")):
        end += 1
    while end > at and not lines[end - 1]:
        end -= 1
    body = [line[4:] for line in lines[at:end]]
    while body and not body[0]:
        body.pop(0)
    return body, end


def spec_for(trace: Trace, kernel: KernelTrace, record: PassRecord, passes: Sequence[PassBuild], why: str = "") -> ReproSpec:
    """The reproducer of record (a pass of kernel), running `passes` from the first one's input."""
    error = record.error if record.status.value in ("failed", "incomplete") and record.error is not None else None
    return ReproSpec(record.name, tuple(passes), kernel.name, dict(kernel.context), dict(trace.run.versions), error, why)
