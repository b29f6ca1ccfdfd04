"""TileLang's own run-to-run variation, measured and recognised.

TileLang is not deterministic across processes (reduction workspaces numbered in hash order,
shared-memory allocations merged in another order, a layout map reordered). `regress --repeat`
runs one side twice: every kernel that differs there varies on its own, and what it varies in is
kept (variation.json beside regress.json): the pass where the two runs first part, every
generated source it was seen with, and the lines that differed. A later two-side run given that
file (--variation) calls a kernel "varies run to run" only when it differs in the known way:

- both sides' generated sources are ones the kernel was seen with, or
- its two sides first part at the pass the known variation parts at, and every line that
  differs in the generated source is one that differed between the known runs.

Anything else is a change, even in a kernel known to vary. Pure: stored traces and verdicts in,
records out.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from lower_trace.analysis.compare import compiled
from lower_trace.analysis.text_diff import split_lines, unkept
from lower_trace.analysis.verdicts import Verdict

if TYPE_CHECKING:
    from lower_trace.analysis.compare import Comparison
    from lower_trace.model import KernelTrace, Trace


# What this module reads of regress's pairs and verdicts (analysis/regress.py imports this module).
class Found(Protocol):
    @property
    def kernel(self) -> KernelTrace: ...
    @property
    def trace(self) -> Trace: ...


class _Key(Protocol):
    @property
    def origin(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def signature(self) -> str: ...
    @property
    def occurrence(self) -> int: ...
    def label(self) -> str: ...


class KernelVerdict(Protocol):
    @property
    def key(self) -> _Key: ...
    @property
    def verdict(self) -> Verdict: ...
    @property
    def reasons(self) -> tuple[Verdict, ...]: ...
    @property
    def base(self) -> Found | None: ...
    @property
    def head(self) -> Found | None: ...
    @property
    def comparison(self) -> Comparison | None: ...

FILE = "variation.json"
FORMAT = 1
# A pair of runs of one side that differs in these has varied on its own.
_VARIED = (Verdict.DIFFERS, Verdict.HOST_DIFFERS, Verdict.RENAMED, Verdict.SAME_CODE, Verdict.VARIES, Verdict.EQUIVALENT)
# A two-side verdict that known variation may explain.
_EXPLAINABLE = (Verdict.DIFFERS, Verdict.HOST_DIFFERS, Verdict.RENAMED, Verdict.SAME_CODE)


@dataclass(frozen=True)
class KnownVariation:
    """How one kernel varied between two runs of one side."""

    kernel: tuple[str, str, str, int]  # its KernelKey's fields: origin, name, signature, occurrence
    label: str
    first_pass: str  # the pass where the two runs first parted ("" when only the sources differ)
    sources: tuple[str, ...]  # digests of every generated code the kernel was seen with (sorted)
    lines: tuple[str, ...]  # the generated code's lines that differed between the runs (sorted, stripped)


class VariationError(Exception):
    """A variation file that cannot be read (one line, what to do)."""


def code_digest(found: Found) -> str:
    """One digest of everything a kernel generated (device, then host): of the snapshots' own
    digests (a snapshot is named by its content's hash), so no text is read or hashed again."""
    steps = sorted(found.kernel.codegen, key=lambda s: s.seq)
    return hashlib.sha256("\0".join(compiled(step) for step in steps).encode()).hexdigest()[:24]


def code_lines(found: Found) -> list[str]:
    kernel, trace = found.kernel, found.trace
    out: list[str] = []
    for step in sorted(kernel.codegen, key=lambda s: s.seq):
        out.extend(split_lines(trace.snapshot(compiled(step)) or ""))
    return out


def differing_lines(base: Sequence[str], head: Sequence[str]) -> set[str]:
    """The lines (stripped) on either side that a minimal diff does not keep."""
    removed, added = unkept(base, head)
    out = {base[i].strip() for i in removed} | {head[j].strip() for j in added}
    out.discard("")
    return out


def _first_pass(verdict: KernelVerdict) -> str:
    """The pass that got the same IR on both sides and made other IR: where variation starts (a
    pass on one side only, or inputs that differ already, name no such place)."""
    comparison = verdict.comparison
    divergence = comparison.divergence if comparison is not None else None
    if divergence is None or divergence.kind != "behaves differently" or divergence.b is None:
        return ""
    return divergence.b.name


def measured(verdicts: Iterable[KernelVerdict]) -> list[KnownVariation]:
    """What a run of one side twice (--repeat) found varying: a record per kernel that differed."""
    out = []
    for v in verdicts:
        if v.verdict not in _VARIED or v.base is None or v.head is None:
            continue
        key = v.key
        lines = differing_lines(code_lines(v.base), code_lines(v.head))
        sources = tuple(sorted({code_digest(v.base), code_digest(v.head)}))
        out.append(KnownVariation((key.origin, key.name, key.signature, key.occurrence), key.label(), _first_pass(v), sources, tuple(sorted(lines))))
    return out


def merge(known: Iterable[KnownVariation]) -> dict[tuple[str, str, str, int], KnownVariation]:
    """Several measurements of the same kernels as one: the sources and lines of all of them."""
    merged: dict[tuple[str, str, str, int], KnownVariation] = {}
    for item in known:
        had = merged.get(item.kernel)
        if had is None:
            merged[item.kernel] = item
            continue
        sources, lines = tuple(sorted({*had.sources, *item.sources})), tuple(sorted({*had.lines, *item.lines}))
        merged[item.kernel] = dataclasses.replace(had, sources=sources, lines=lines, first_pass=had.first_pass or item.first_pass)
    return merged


def explained(v: KernelVerdict, known: dict[tuple[str, str, str, int], KnownVariation]) -> KnownVariation | None:
    """The known variation that explains this two-side verdict, or None (then it is a change)."""
    if v.verdict not in _EXPLAINABLE or v.base is None or v.head is None:
        return None
    if any(reason not in (*_EXPLAINABLE, Verdict.IDENTICAL) for reason in v.reasons):
        return None  # registers, spills, a broken compile: never variation
    key = v.key
    item = known.get((key.origin, key.name, key.signature, key.occurrence))
    if item is None:
        return None
    if code_digest(v.base) in item.sources and code_digest(v.head) in item.sources:
        return item
    same_place = bool(item.first_pass) and _first_pass(v) == item.first_pass
    lines = differing_lines(code_lines(v.base), code_lines(v.head))
    return item if same_place and lines and lines <= set(item.lines) else None


# --- the file ------------------------------------------------------------------------------


def write(path: str, known: Sequence[KnownVariation], runs: int = 2) -> None:
    from lower_trace.store.files import write_atomically

    body = {"format": FORMAT, "runs": runs, "kernels": [dataclasses.asdict(item) for item in known]}
    write_atomically(path, json.dumps(body, indent=1))


def read(path: str) -> list[KnownVariation]:
    """A variation.json, or the folder of a `regress --repeat` run that holds one."""
    file = os.path.join(path, FILE) if os.path.isdir(path) else path
    try:
        with open(file, encoding="utf-8") as handle:
            body = json.load(handle)
        if body.get("format") != FORMAT:
            raise VariationError(f"--variation {path}: format {body.get('format')!r}, this lower-trace reads {FORMAT}; measure again with regress --repeat")
        return [
            KnownVariation(tuple(item["kernel"]), item["label"], item["first_pass"], tuple(item["sources"]), tuple(item["lines"]))  # type: ignore[arg-type]
            for item in body["kernels"]
        ]
    except FileNotFoundError:
        raise VariationError(f"--variation {path}: no {FILE} there; make one with lower-trace regress --repeat --dir DIR -- CORPUS") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise VariationError(f"--variation {path}: not a variation file ({exc}); give the --dir of a regress --repeat run") from None
