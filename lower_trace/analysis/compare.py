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

Texts are compared after normalisation: the names the second kernel derives from its
name are written as the first's when the names differ (two variants, two kernels; whole
identifiers only, see renaming.py), and every match of the ``ignore`` patterns is
removed. With ``up_to_renaming``, two texts are also the same when one is the other with
identifiers renamed one to one (``A_shared`` / ``A_s``); the comparison says which
renamings it needed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lower_trace.analysis.configs import config_changes
from lower_trace.analysis.renaming import correspondence, identifiers, kernel_renames, rename, sorted_functions
from lower_trace.analysis.text_diff import myers
from lower_trace.model import CodegenRecord, KernelTrace, PassRecord, PassStatus

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

    def changed_only_on(self) -> int | None:
        """0 or 1: the side on which this aligned pass changed the IR while the other's was a no-op."""
        if self.a is None or self.b is None:
            return None
        statuses = (self.a.status, self.b.status)
        if statuses == (PassStatus.CHANGED, PassStatus.UNCHANGED):
            return 0
        if statuses == (PassStatus.UNCHANGED, PassStatus.CHANGED):
            return 1
        return None


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
    # With up_to_renaming: {B's identifier: A's} that made texts the same (empty: none was needed).
    renamed: tuple[tuple[str, str], ...] = ()
    # Without it: the inputs differ, but only in names (so --up-to-renaming is worth a try).
    inputs_differ_in_names_only: bool = False

    @property
    def equivalent(self) -> bool:
        """No divergence and the same generated source (up to the renamings in `renamed`)."""
        return self.divergence is None and self.same_source

    @property
    def identical(self) -> bool:
        """Equivalent without any renaming beyond the kernel's name."""
        return self.equivalent and not self.renamed

    @property
    def verdict(self) -> str:
        return "identical" if self.identical else "same up to renaming" if self.equivalent else "differ"

    @property
    def only_a(self) -> list[PassRecord]:
        return [row.a for row in self.rows if row.a is not None and row.b is None]

    @property
    def only_b(self) -> list[PassRecord]:
        return [row.b for row in self.rows if row.b is not None and row.a is None]

    def changed_on_one_side(self, side: int) -> list[AlignedPass]:
        """Aligned passes that changed the IR on this side (0: A, 1: B) and did nothing on the other."""
        return [row for row in self.rows if row.changed_only_on() == side]


class Normaliser:
    """The text of a snapshot as compared: the second side's kernel-derived names written as the
    first's (whole identifiers, renaming.kernel_renames), functions in name order when the kernels'
    names differ, ignored matches removed."""

    def __init__(self, renames: dict[str, str] | None = None, ignore: Sequence[str] = (), reorder: bool = False) -> None:
        self._renames = dict(renames or {})
        self._reorder = reorder  # the names differ: so does the order TVM prints functions in
        self._ignore = [re.compile(pattern) for pattern in ignore]
        self._cache: dict[tuple[int, str], str] = {}

    def __call__(self, side: int, text: str) -> str:
        key = (side, text)
        found = self._cache.get(key)
        if found is None:
            found = rename(text, self._renames) if side == 1 else text
            if self._reorder:
                found = sorted_functions(found)
            for pattern in self._ignore:
                found = pattern.sub("", found)
            self._cache[key] = found
        return found


def config_difference(a: KernelTrace, b: KernelTrace) -> dict[str, tuple[object, object]]:
    """{config: (A's value, B's value)} where the two compiles' pass configs differ (None: not set),
    as JSON values (configs.py: typed where the trace has them, else read back from TVM's text)."""
    return {key: (values["a"], values["b"]) for key, values in config_changes(a, b).items()}


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


def digests(kernel: KernelTrace) -> list[str]:
    """Every text a kernel's comparison reads: pass inputs and outputs, codegen's TIR and sources."""
    found = [d for p in kernel.passes for d in (p.before, p.after)]
    found += [d for step in kernel.codegen for d in (step.tir, compiled(step))]
    return list(dict.fromkeys(d for d in found if d))


def renames_between(first: Side, second: Side) -> dict[str, str]:
    """The second kernel's names derived from its name, written as the first's (renaming.py)."""
    if first.kernel.name == second.kernel.name:
        return {}
    vocabulary = [identifiers(side.text_of(d) for d in digests(side.kernel)) for side in (first, second)]
    return kernel_renames(first.kernel.name, second.kernel.name, *vocabulary)


class _Texts:
    """The two sides' snapshots as compared (normalised), and whether two of them are the same --
    with up_to_renaming, up to a renaming, each renaming it needed kept (first come, first kept)."""

    def __init__(self, first: Side, second: Side, norm: Normaliser, up_to_renaming: bool) -> None:
        self.readers = (first.text_of, second.text_of)
        self.norm = norm
        self.up_to_renaming = up_to_renaming
        self.renamed: dict[str, str] = {}
        self.answers: dict[tuple[str, str], dict[str, str] | None] = {}  # a pass's output is the next one's input

    def text(self, side: int, digest: str) -> str:
        return self.norm(side, self.readers[side](digest)) if digest else ""

    def same(self, a: str, b: str) -> bool:
        if a == b:
            return True
        if not self.up_to_renaming:
            return False
        if (a, b) not in self.answers:
            self.answers[(a, b)] = correspondence(a, b)
        found = self.answers[(a, b)]
        if found is None:
            return False
        for old, new in found.items():
            self.renamed.setdefault(old, new)
        return True


_OneSided = tuple[int, PassRecord | None, PassRecord | None]  # (row, a, b) of a pass only one side ran


def compare(first: Side, second: Side, ignore: Sequence[str] = (), up_to_renaming: bool = False) -> Comparison:
    """Align the two kernels' passes and find their first divergence (see the module doc)."""
    norm = Normaliser(renames_between(first, second), ignore, reorder=first.kernel.name != second.kernel.name)
    texts = _Texts(first, second, norm, up_to_renaming)
    rows, divergence, last_one_sided = _aligned(first, second, texts)
    if divergence is not None and divergence.kind == "behaves differently":
        divergence = _innermost(rows, divergence.row)
    same_source, shown = _final_sources(first, second, texts)
    if divergence is None and not same_source and last_one_sided is not None:
        divergence = Divergence("one-sided", *last_one_sided)
    names_only = not up_to_renaming and _inputs_differ_in_names_only(rows, divergence, texts)
    return Comparison(tuple(rows), divergence, same_source, texts.text, shown, tuple(sorted(texts.renamed.items())), names_only)


def _final_sources(first: Side, second: Side, texts: _Texts) -> tuple[bool, tuple[str, str]]:
    """Whether the generated sources are the same (every role's, in order); the first of each side."""
    sources_a, sources_b = _sources(first, 0, texts.text), _sources(second, 1, texts.text)
    same_source = len(sources_a) == len(sources_b) and all(
        ra == rb and texts.same(sa, sb) for (ra, sa), (rb, sb) in zip(sources_a, sources_b, strict=False)
    )
    return same_source, (sources_a[0][1] if sources_a else "", sources_b[0][1] if sources_b else "")


def _aligned(first: Side, second: Side, texts: _Texts) -> tuple[list[AlignedPass], Divergence | None, _OneSided | None]:
    """The aligned passes, each with whether its input and output are the same on both sides; the
    first divergence among them (outermost); the last one-sided pass that changed the IR."""
    rows: list[AlignedPass] = []
    divergence: Divergence | None = None
    last_one_sided: _OneSided | None = None
    for a, b in align(first.kernel.passes, second.kernel.passes):
        if a is None or b is None:
            rows.append(AlignedPass(a, b))
            record = a or b
            if record is not None and record.status is not PassStatus.UNCHANGED:
                last_one_sided = (len(rows) - 1, a, b)
            continue
        rows.append(_aligned_pair(a, b, texts))
        if divergence is None:
            divergence = _divergence_at(rows, last_one_sided)
    return rows, divergence, last_one_sided


def _aligned_pair(a: PassRecord, b: PassRecord, texts: _Texts) -> AlignedPass:
    same_input = texts.same(texts.text(0, a.before), texts.text(1, b.before))
    same_output = same_input if (a.status, b.status) == (PassStatus.UNCHANGED,) * 2 else _same_output(a, b, texts.text, texts.same)
    return AlignedPass(a, b, same_input, same_output)


def _divergence_at(rows: list[AlignedPass], last_one_sided: _OneSided | None) -> Divergence | None:
    """The divergence the last row shows, if any: it behaves differently, or its input differs
    (because of the last one-sided pass, else from the start)."""
    row = rows[-1]
    if row.same_input and not row.same_output:
        return Divergence("behaves differently", len(rows) - 1, row.a, row.b)
    if row.same_input:
        return None
    if last_one_sided is not None:
        return Divergence("one-sided", *last_one_sided)
    return Divergence("input", -1, None, None)


def _inputs_differ_in_names_only(rows: list[AlignedPass], divergence: Divergence | None, texts: _Texts) -> bool:
    """The kernels differ from the start, but only in names: --up-to-renaming is worth a try."""
    if divergence is None or divergence.kind != "input":
        return False
    start = next((row for row in rows if row.a is not None and row.b is not None), None)
    if start is None or start.a is None or start.b is None:
        return False
    return correspondence(texts.text(0, start.a.before), texts.text(1, start.b.before)) is not None


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


def _same_output(a: PassRecord, b: PassRecord, text: Callable[[int, str], str], same: Callable[[str, str], bool]) -> bool:
    if a.status is not b.status and PassStatus.FAILED in (a.status, b.status):
        return False  # one failed, the other did not
    return same(text(0, a.after), text(1, b.after))


def _sources(side: Side, index: int, text: Callable[[int, str], str]) -> list[tuple[str, str]]:
    """The generated sources of a kernel, device first: what the comparison ends with."""
    steps = sorted(side.kernel.codegen, key=lambda step: (step.role != "device", step.seq))
    return [(step.role, text(index, compiled(step))) for step in steps]


def compiled(step: CodegenRecord) -> str:
    """What codegen made (not a user's edit compiled in its place)."""
    return step.generated or step.source
