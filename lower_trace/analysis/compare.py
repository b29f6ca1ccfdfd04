"""Compare two compiles pass by pass: align the pipelines, find where they part.

Pure over stored traces (no TVM): two kernels, each with the trace that holds its
snapshots. The pass sequences are aligned as sequences (insertions and deletions
allowed, as between TileLang versions or pass configs that remove passes), each
aligned pair says whether its input and its output are the same on both sides,
and the first divergence names the pass that makes the compiles differ:

- a pass that received the same IR on both sides and produced different IR (it
  behaves differently: another pass config, another TileLang) -- the innermost such,
  when it is so because a pass nested in it is, or
- when the inputs come apart without such a pass, the one-sided pass that changed
  the IR just before (a pass one pipeline has and the other does not), or
- the start, when the kernels were different already (another kernel, another
  variant).

Texts are compared after normalisation: the second kernel's name is written as the
first's when they differ (two variants, two kernels), and every match of the
``ignore`` patterns is removed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..diff import myers
from ..model import CodegenRecord, KernelTrace, PassRecord, PassStatus

TextOf = Callable[[str], str]


@dataclass(frozen=True)
class Side:
    """One compile to compare: the kernel and how to read its snapshots."""

    kernel: KernelTrace
    text_of: TextOf


@dataclass(frozen=True)
class AlignedPass:
    """One row of the alignment: a pass on both sides, or on one only (the other None).
    same_input / same_output are None where a side is missing."""

    a: PassRecord | None
    b: PassRecord | None
    same_input: bool | None = None
    same_output: bool | None = None

    @property
    def one_sided(self) -> bool:
        return self.a is None or self.b is None


@dataclass(frozen=True)
class Divergence:
    """Where the two compiles part. kind: "behaves differently" (a pass got the same IR
    and made different IR), "one-sided" (a pass only one pipeline has changed the IR),
    or "input" (the kernels differed before any pass)."""

    kind: str
    row: int  # index into Comparison.rows (-1 for "input")
    a: PassRecord | None
    b: PassRecord | None


@dataclass(frozen=True)
class Comparison:
    rows: tuple[AlignedPass, ...]
    divergence: Divergence | None
    same_source: bool  # the final generated sources (device, then host) are the same
    # text(side, digest): a snapshot as it was compared (side 0 = first, 1 = second), for diffs.
    text: Callable[[int, str], str] = field(default=lambda side, digest: "", repr=False, compare=False)
    sources: tuple[str, str] = ("", "")  # the final device (else host) source of each side, as compared

    @property
    def identical(self) -> bool:
        return self.divergence is None and self.same_source

    @property
    def only_a(self) -> list[PassRecord]:
        return [row.a for row in self.rows if row.a is not None and row.b is None]

    @property
    def only_b(self) -> list[PassRecord]:
        return [row.b for row in self.rows if row.b is not None and row.a is None]


class Normaliser:
    """The text of a snapshot as compared: names made alike, ignored matches removed."""

    def __init__(self, renames: Sequence[tuple[str, str]] = (), ignore: Sequence[str] = ()) -> None:
        # Every occurrence: what TileLang derives from the name (name_kernel, __tvm_ffi_name) too.
        self._renames = [(re.compile(re.escape(old)), new) for old, new in renames if old and old != new]
        self._ignore = [re.compile(pattern) for pattern in ignore]
        self._cache: dict[tuple[int, str], str] = {}

    def __call__(self, side: int, text: str) -> str:
        key = (side, text)
        found = self._cache.get(key)
        if found is None:
            found = text
            if side == 1:
                for pattern, new in self._renames:
                    found = pattern.sub(new, found)
            for pattern in self._ignore:
                found = pattern.sub("", found)
            self._cache[key] = found
        return found


def configs_of(kernel: KernelTrace) -> dict[str, object]:
    """The pass configs a kernel was compiled under (typed where the trace has them)."""
    typed = kernel.context.get("configs") if isinstance(kernel.context, dict) else None
    return dict(typed) if isinstance(typed, dict) else dict(kernel.pass_configs)


def config_difference(a: KernelTrace, b: KernelTrace) -> dict[str, tuple[object, object]]:
    """{config: (A's value, B's value)} where the two compiles' pass configs differ (None: not set)."""
    ca, cb = configs_of(a), configs_of(b)
    return {key: (ca.get(key), cb.get(key)) for key in sorted({*ca, *cb}) if ca.get(key) != cb.get(key)}


def short_name(name: str) -> str:
    """A pass's name without its namespace: versions move passes between them (tir. -> tirx.,
    AddWrapperForSingleBufStore -> tl.AddWrapperForSingleBufStore)."""
    return name.rsplit(".", 1)[-1]


def _key(record: PassRecord) -> tuple[str, int]:
    return (short_name(record.name), record.depth)


def align(a: Sequence[PassRecord], b: Sequence[PassRecord]) -> list[tuple[PassRecord | None, PassRecord | None]]:
    """The two pass sequences aligned by name (without namespace) and nesting depth, order kept; passes
    without a counterpart stand alone. A minimal alignment (Myers), the same the page computes."""
    rows: list[tuple[PassRecord | None, PassRecord | None]] = []
    i = j = 0
    for pa, pb in [*myers([_key(p) for p in a], [_key(p) for p in b]), (len(a), len(b))]:
        rows.extend((a[k], None) for k in range(i, pa))
        rows.extend((None, b[k]) for k in range(j, pb))
        if pa < len(a):
            rows.append((a[pa], b[pb]))
        i, j = pa + 1, pb + 1
    return rows


def compare(first: Side, second: Side, ignore: Sequence[str] = ()) -> Comparison:
    """Align the two kernels' passes and find their first divergence (see the module doc)."""
    renames = [(second.kernel.name, first.kernel.name)] if first.kernel.name != second.kernel.name else []
    norm = Normaliser(renames, ignore)

    def text(side: int, digest: str) -> str:
        reader = first.text_of if side == 0 else second.text_of
        return norm(side, reader(digest)) if digest else ""

    rows: list[AlignedPass] = []
    divergence: Divergence | None = None
    last_one_sided: tuple[int, PassRecord | None, PassRecord | None] | None = None
    for a, b in align(first.kernel.passes, second.kernel.passes):
        if a is None or b is None:
            rows.append(AlignedPass(a, b))
            record = a or b
            if record is not None and record.status is not PassStatus.UNCHANGED:
                last_one_sided = (len(rows) - 1, a, b)
            continue
        same_input = text(0, a.before) == text(1, b.before)
        same_output = same_input if (a.status, b.status) == (PassStatus.UNCHANGED,) * 2 else _same_output(a, b, text)
        rows.append(AlignedPass(a, b, same_input, same_output))
        if divergence is not None:
            continue
        if same_input and not same_output:
            divergence = Divergence("behaves differently", len(rows) - 1, a, b)
        elif not same_input:
            if last_one_sided is not None:
                divergence = Divergence("one-sided", *last_one_sided)
            else:
                divergence = Divergence("input", -1, None, None)
    if divergence is not None and divergence.kind == "behaves differently":
        divergence = _innermost(rows, divergence.row)
    sources_a, sources_b = _sources(first, 0, text), _sources(second, 1, text)
    same_source = sources_a == sources_b
    if divergence is None and not same_source and last_one_sided is not None:
        divergence = Divergence("one-sided", *last_one_sided)
    shown = (sources_a[0][1] if sources_a else "", sources_b[0][1] if sources_b else "")
    return Comparison(tuple(rows), divergence, same_source, text, shown)


def _innermost(rows: list[AlignedPass], at: int) -> Divergence:
    """A pass that behaves differently because a pass nested in it does: name the nested one."""
    while True:
        outer = rows[at]
        assert outer.a is not None and outer.b is not None
        inner = next((i for i in range(at + 1, len(rows)) if _nested_differs(rows[i], outer.a.seq, outer.b.seq)), None)
        if inner is None:
            return Divergence("behaves differently", at, outer.a, outer.b)
        at = inner


def _nested_differs(row: AlignedPass, parent_a: int, parent_b: int) -> bool:
    a, b = row.a, row.b
    return a is not None and b is not None and a.parent == parent_a and b.parent == parent_b and bool(row.same_input) and not row.same_output


def _same_output(a: PassRecord, b: PassRecord, text: Callable[[int, str], str]) -> bool:
    if a.status is not b.status and PassStatus.FAILED in (a.status, b.status):
        return False  # one failed, the other did not
    return text(0, a.after) == text(1, b.after)


def _sources(side: Side, index: int, text: Callable[[int, str], str]) -> list[tuple[str, str]]:
    """The generated sources of a kernel, device first: what the comparison ends with."""
    steps = sorted(side.kernel.codegen, key=lambda step: (step.role != "device", step.seq))
    return [(step.role, text(index, compiled(step))) for step in steps]


def compiled(step: CodegenRecord) -> str:
    """What codegen made (not a user's edit compiled in its place)."""
    return step.generated or step.source
