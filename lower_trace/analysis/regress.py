"""lower-trace regress, the comparison: one corpus traced on two sides, kernel by kernel.

Pure over stored traces (no TVM). Each side is the runs a corpus command left in one folder
(a script's run, or one run per pytest test, from any number of xdist workers). Kernels are
paired by what names them to a user -- where they were compiled (the test's node id, else the
script), the kernel's name, its signature (the parameters as its first snapshot prints them)
and which occurrence of those it is -- never by the order they finished in. Each pair gets a
verdict with its evidence (compare.py's alignment and first divergence, the passes that
changed the IR on one side only, the device stage's numbers, compile times); when the inputs
differ already (another TileLang's frontend), each aligned pass says whether it did the same
thing on both sides, and the first that did not is the answer. Where the code differs, why
(regress_cause.py: the pass that wrote each differing line on each side). Never compared as if
whole: a kernel a dead process cut short (`died on head/base`). Not a change: one object under
two names (aliases.py, `equivalent code`) and variation measured before (variation.py, `varies
run to run`).
"""

from __future__ import annotations

import collections
import dataclasses
import math
import re
import signal
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from lower_trace.analysis import aliases
from lower_trace.analysis.aliases import AliasGroup
from lower_trace.analysis.compare import Comparison, Normaliser, Side, compare, compiled, renames_between
from lower_trace.analysis.device.summary import summarize
from lower_trace.analysis.regress_cause import RegressCause, explain
from lower_trace.analysis.renaming import correspondence
from lower_trace.analysis.text_diff import split_lines, unkept
from lower_trace.analysis.variation import KnownVariation, explained, merge
from lower_trace.analysis.verdicts import DEVICE_VERDICTS, SEVERITY, Verdict
from lower_trace.device_model import DeviceSummary
from lower_trace.model import KernelStatus, KernelTrace, PassRecord, PassStatus, Trace

# The verdicts (analysis/verdicts.py), by the names this module has always used.
BROKEN, DIED_HEAD, DIED_BASE, MISSING = Verdict.BROKEN, Verdict.DIED_HEAD, Verdict.DIED_BASE, Verdict.MISSING
SPILLS_UP, OCCUPANCY_DOWN, REGISTERS_UP = Verdict.SPILLS_UP, Verdict.OCCUPANCY_DOWN, Verdict.REGISTERS_UP
DIFFERS, HOST_DIFFERS, FIXED, BOTH_FAIL = Verdict.DIFFERS, Verdict.HOST_DIFFERS, Verdict.FIXED, Verdict.BOTH_FAIL
VARIES, RENAMED, SAME_CODE, NEW, IDENTICAL = Verdict.VARIES, Verdict.RENAMED, Verdict.SAME_CODE, Verdict.NEW, Verdict.IDENTICAL
EQUIVALENT = Verdict.EQUIVALENT

# A pass is slower on head in one kernel when it takes SLOWER_RATIO times base's time -- after
# dividing out how much slower the whole compile ran on head (a loaded machine slows every pass) --
# and SLOWER_MS more. The corpus calls it slower when that holds in SLOWER_KERNELS kernels or more,
# in at least half of those that ran it on both sides, and chance cannot explain it: how often
# any pass was slow in any kernel of this run, as a binomial tail, under SLOWER_CHANCE. One compile's
# time is noise (a process's first compile pays for what later ones reuse); the same pass slow
# across a corpus, beyond the run's own noise, is not.
SLOWER_RATIO = 3.0
SLOWER_MS = 1.0
SLOWER_KERNELS = 5  # a scheduler stall under load can hit one pass in 3 or 4 kernels (a new user saw it)
SLOWER_CHANCE = 0.001


@dataclass(frozen=True)
class KernelKey:
    """What names a kernel to a user across two runs of a corpus."""

    origin: str  # the pytest node id, or the script
    name: str
    signature: str
    occurrence: int  # 1 for the first compile of this origin, name and signature

    def label(self) -> str:
        again = f" #{self.occurrence}" if self.occurrence > 1 else ""
        return f"{self.origin} {self.name}{again}"


@dataclass(frozen=True)
class Found:
    """One kernel of one side, and the trace that holds it."""

    key: KernelKey
    trace: Trace
    kernel: KernelTrace


@dataclass(frozen=True)
class PassEffect:
    """The first aligned pass that changed the IR otherwise on the two sides (their inputs differing)."""

    base: PassRecord
    head: PassRecord


@dataclass(frozen=True)
class SlowerPass:
    name: str
    base_ms: float
    head_ms: float


@dataclass(frozen=True)
class LaunchResult:
    """regress --run: one base launch's outputs against head's for the same inputs (regress/results.py)."""

    n: int  # the base launch
    how: str  # "head's launch 1, the same inputs" or "base's inputs on head's build"
    outputs: tuple[tuple[str, str], ...] = ()  # (output, what was found: "identical (bitwise)", "differs at [3]: ...")
    differs: bool = False
    problem: str = ""  # it could not be compared: why


@dataclass(frozen=True)
class KernelVerdict:
    key: KernelKey
    verdict: Verdict
    base: Found | None
    head: Found | None
    comparison: Comparison | None = None
    first_effect: PassEffect | None = None  # the inputs differ: the first pass that did something else
    device: tuple[tuple[str, object, object], ...] = ()  # (what, base's, head's) where they differ
    slower: tuple[SlowerPass, ...] = ()
    reasons: tuple[Verdict, ...] = field(default=())  # every verdict that applies, the shown one first
    stopped: str = ""  # a side died: where its trace of this kernel ends, and how the process ended
    variation: KnownVariation | None = None  # VARIES: the run-to-run variation measured before that explains it
    equated: tuple[AliasGroup, ...] = ()  # EQUIVALENT: the names equated, each group one object
    cause: RegressCause | None = None  # the code differs: which passes wrote the differing lines (regress_cause.py)
    results: tuple[LaunchResult, ...] = ()  # regress --run: each base launch's outputs on head

    @property
    def severity(self) -> int:
        return self.verdict.severity


# --- the kernels of a side ------------------------------------------------------------------

_DEF = re.compile(r"^\s*def (\w+)\((.*?)\)(?:\s*->[^:]*)?:", re.S | re.M)


# TVMScript leaves out a buffer's dtype when it is float32 (its default): no dtype means float32.
_MATCH_BUFFER = re.compile(r"^\s*(\w+) = T\.match_buffer\(\w+, (\([^)]*\)|\[[^\]]*\])(?:, \"(\w+)\")?", re.M)


def signature(kernel: KernelTrace, text_of: Callable[[str], str]) -> str:
    """The kernel's parameters as its first snapshot prints them (whitespace collapsed), with the
    shape and dtype of each buffer it matches to a handle: tells a sweep's variants apart when
    their names are the same."""
    first = next((p.before for p in kernel.passes if p.before), "")
    text = text_of(first) if first else ""
    match = next((m for m in _DEF.finditer(text) if m.group(1) == kernel.name), None) or _DEF.search(text)
    if match is None:
        return ""
    params = " ".join(match.group(2).split())
    buffers = [f"{name}{' '.join(shape.split())} {dtype or 'float32'}" for name, shape, dtype in _MATCH_BUFFER.findall(text[match.end() :])]
    return "; ".join([params, *buffers]) if buffers else params


def side_kernels(traces: Iterable[Trace]) -> list[Found]:
    """Every kernel of a side's runs with its key, in the order the runs started."""
    found: list[Found] = []
    seen: collections.Counter[tuple[str, str, str]] = collections.Counter()
    for trace in sorted(traces, key=lambda t: (t.run.started, t.path)):
        origin = trace.run.title or trace.run.script
        for kernel in trace.kernels:
            sig = signature(kernel, trace.snapshot)
            seen[(origin, kernel.name, sig)] += 1
            found.append(Found(KernelKey(origin, kernel.name, sig, seen[(origin, kernel.name, sig)]), trace, kernel))
    return found


def pair(base: Sequence[Found], head: Sequence[Found]) -> list[tuple[KernelKey, Found | None, Found | None]]:
    """The two sides' kernels paired by key; one side's alone where the other has none. Base's
    order first, then head's own kernels."""
    by_key = {found.key: found for found in head}
    rows: list[tuple[KernelKey, Found | None, Found | None]] = [(f.key, f, by_key.pop(f.key, None)) for f in base]
    rows.extend((f.key, None, f) for f in head if f.key in by_key)
    return _unsigned_paired(rows)


def _unsigned_paired(rows: list[tuple[KernelKey, Found | None, Found | None]]) -> list[tuple[KernelKey, Found | None, Found | None]]:
    """A compile cut short before its first snapshot has no signature: it is the kernel of the
    same origin and name that the other side has alone, in order (a dead side's last compile)."""
    alone = {id(row): row for row in rows if (row[1] is None) != (row[2] is None)}
    for row in [r for r in rows if id(r) in alone]:
        key, mine = row[0], row[1] or row[2]
        if id(row) not in alone or key.signature or mine is None or mine.kernel.status is not KernelStatus.RUNNING:
            continue
        other_side = [r for r in rows if id(r) in alone and (r[1] is None) != (row[1] is None)]
        mate = next((r for r in other_side if (r[0].origin, r[0].name) == (key.origin, key.name)), None)
        if mate is None:
            continue
        del alone[id(row)], alone[id(mate)]
        base, head = (row[1], mate[2]) if row[1] is not None else (mate[1], row[2])
        at = rows.index(mate)
        rows[at] = (mate[0], base, head)
        rows.remove(row)
    return rows


# --- one pair -------------------------------------------------------------------------------


def verdict(key: KernelKey, base: Found | None, head: Found | None, ignore: Sequence[str] = (), ends: tuple[str, str] = ("", "")) -> KernelVerdict:
    """ends: how each side's process ended when it died ("killed by SIGSEGV"), else ""."""
    died = stopped_early(base, head, ends)
    if died is not None:
        return died
    if base is None or head is None:
        return KernelVerdict(key, MISSING if head is None else NEW, base, head, reasons=(MISSING if head is None else NEW,))
    failed = (base.kernel.status is KernelStatus.FAILED, head.kernel.status is KernelStatus.FAILED)
    result = compare(Side(base.kernel, base.trace.snapshot), Side(head.kernel, head.trace.snapshot), ignore, up_to_renaming=True)
    device = tuple(device_changes(summarize(base.kernel, base.trace.snapshot), summarize(head.kernel, head.trace.snapshot)))
    reasons: list[Verdict] = []
    if failed == (False, True):
        reasons.append(BROKEN)
    reasons.extend(name for name in DEVICE_VERDICTS if any(_worse(name, what, a, b) for what, a, b in device))
    equated: list[AliasGroup] = []
    code = code_difference(base, head, result, equated)
    if failed == (True, False):
        reasons.append(FIXED)
    elif failed == (True, True):
        reasons.append(BOTH_FAIL)
    elif code:
        reasons.append(code)
    elif equated:
        reasons.append(EQUIVALENT)
    elif result.divergence is not None:
        reasons.append(SAME_CODE)
    elif result.renamed:
        reasons.append(RENAMED)
    slower = tuple(slower_passes(result))
    reasons.sort(key=SEVERITY.index)
    shown = reasons[0] if reasons else IDENTICAL
    effect = first_effect(base, head, result) if result.divergence is not None and result.divergence.kind == "input" else None
    cause = explain((base.trace, base.kernel), (head.trace, head.kernel), result) if {DIFFERS, HOST_DIFFERS, SAME_CODE} & set(reasons) else None
    groups = tuple(equated) if EQUIVALENT in reasons else ()
    return KernelVerdict(key, shown, base, head, result, effect, device, slower, tuple(reasons) or (IDENTICAL,), cause=cause, equated=groups)


def stopped_early(base: Found | None, head: Found | None, ends: tuple[str, str]) -> KernelVerdict | None:
    """A kernel whose trace a dead process cut short is never compared as if it were whole: its
    verdict is that the side died, with where its trace ends. A kernel missing from a side whose
    process died is one it never got to, not one the change removed."""
    key = (base or head).key  # type: ignore[union-attr]
    for label, mine, other, end, verdict_name in (("head", head, base, ends[1], DIED_HEAD), ("base", base, head, ends[0], DIED_BASE)):
        how = f"its process {end}" if end else "its process stopped"
        if mine is None and other is not None and end:
            return KernelVerdict(key, verdict_name, base, head, reasons=(verdict_name,), stopped=f"never compiled on {label}: {how} before this compile")
        if mine is not None and mine.kernel.status is KernelStatus.RUNNING:
            stopped = f"{label}'s trace ends {where_it_ends(mine.kernel, other)}: {how} during this compile"
            return KernelVerdict(key, verdict_name, base, head, reasons=(verdict_name,), stopped=stopped)
    return None


def where_it_ends(kernel: KernelTrace, other: Found | None) -> str:
    """"after pass 45 tl.Simplify (of the other side's 82)", or "before its first pass"."""
    done = [p for p in kernel.passes if p.status is not PassStatus.INCOMPLETE]
    last = max(done, key=lambda p: p.seq, default=None)
    whole = f" (of the other side's {len(other.kernel.passes)})" if other is not None and other.kernel.status is not KernelStatus.RUNNING else ""
    return f"after pass {last.seq} {last.name}{whole}" if last is not None else "before its first pass"


def code_difference(base: Found, head: Found, result: Comparison, equated: list[AliasGroup] | None = None) -> Verdict | None:
    """Which generated code differs (DIFFERS: the device's, or the only one; HOST_DIFFERS: the host's
    alone), compared as the comparison does (up to renaming) and with equivalent objects equated
    (analysis/aliases.py: names bound to one address), whose groups go to `equated`; None when
    all of it is the same."""

    def sources(found: Found, side: int, role: str) -> list[str]:
        steps = sorted((s for s in found.kernel.codegen if s.role == role), key=lambda s: s.seq)
        return [result.text(side, compiled(step)) for step in steps]

    def alike(a: list[str], b: list[str]) -> bool:
        return len(a) == len(b) and all(x == y or correspondence(x, y) is not None or _equated(x, y) for x, y in zip(a, b, strict=True))

    def _equated(a: str, b: str) -> bool:
        groups = aliases.equated(a, b)
        if groups and equated is not None:
            equated.extend(group for group in groups if group not in equated)
        return groups is not None

    roles = [role for role in ("device", "host") if sources(base, 0, role) or sources(head, 1, role)]
    differing = [role for role in roles if not alike(sources(base, 0, role), sources(head, 1, role))]
    if not differing:
        return None
    return HOST_DIFFERS if differing == ["host"] and "device" in roles else DIFFERS


def device_changes(a: DeviceSummary | None, b: DeviceSummary | None) -> list[tuple[str, object, object]]:
    """(what, base's, head's) for the numbers the gate reads, where both sides have them and they differ."""
    if a is None or b is None or a.resources is None or b.resources is None:
        return []
    out: list[tuple[str, object, object]] = []
    for name in ("registers", "spill_stores", "spill_loads", "shared_static", "stack"):
        left, right = getattr(a.resources, name), getattr(b.resources, name)
        if left != right:
            out.append((name, left, right))
    warps = (a.occupancy.warps_per_sm if a.occupancy else None, b.occupancy.warps_per_sm if b.occupancy else None)
    if warps[0] != warps[1]:
        out.append(("warps_per_sm", *warps))
    counts_a, counts_b = dict(a.counts), dict(b.counts)
    if counts_a and counts_b:
        for kind in dict.fromkeys([*counts_a, *counts_b]):
            if counts_a.get(kind, 0) != counts_b.get(kind, 0):
                out.append((f"instructions {kind}", counts_a.get(kind, 0), counts_b.get(kind, 0)))
    return out


def _worse(verdict_name: str, what: str, base: object, head: object) -> bool:
    if not isinstance(base, int) or not isinstance(head, int):
        return False
    if verdict_name == SPILLS_UP:
        return what in ("spill_stores", "spill_loads") and head > base
    if verdict_name == OCCUPANCY_DOWN:
        return what == "warps_per_sm" and head < base
    return what == "registers" and head > base


def slower_passes(result: Comparison) -> list[SlowerPass]:
    """Aligned passes that took at least SLOWER_RATIO times as long on head as the compile's own
    slowdown explains, and SLOWER_MS more."""
    # How much slower head's compile ran as a whole: the median pass's ratio (a pass that takes
    # most of the time does not hide itself in it, as it would in the total's).
    ratios = [row.b.ms / row.a.ms for row in result.rows if row.a is not None and row.b is not None and row.a.ms >= 0.1]
    load = max(1.0, statistics.median(ratios)) if ratios else 1.0
    out = []
    for row in result.rows:
        # Top-level passes only: a pass that runs others inside it would count a stall in them twice.
        if row.a is None or row.b is None or row.a.depth or row.b.depth:
            continue
        if row.b.ms >= SLOWER_RATIO * load * row.a.ms and row.b.ms - row.a.ms * load >= SLOWER_MS:
            out.append(SlowerPass(row.b.name, row.a.ms, row.b.ms))
    return out


def binomial_tail(successes: int, trials: int, chance: float) -> float:
    """P(X >= successes) for X ~ Binomial(trials, chance)."""
    if successes <= 0:
        return 1.0
    chance = min(max(chance, 1e-9), 1.0)
    return min(1.0, sum(math.comb(trials, k) * chance**k * (1 - chance) ** (trials - k) for k in range(successes, trials + 1)))


@dataclass(frozen=True)
class CorpusSlower:
    """A pass slower on head across the corpus: in `slow` of the `ran` kernels that ran it on both sides."""

    name: str
    slow: int
    ran: int
    base_ms: float  # medians over the kernels it was slow in
    head_ms: float
    chance: float = 1.0  # how likely so many slow kernels are by chance, at this run's own rate of slow passes


def corpus_slower(verdicts: Iterable[KernelVerdict]) -> list[CorpusSlower]:
    """Passes slower on head in SLOWER_KERNELS kernels or more, and in half of those that ran them."""
    ran: collections.Counter[str] = collections.Counter()
    slow: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for v in verdicts:
        if v.comparison is None:
            continue
        for name in {row.b.name for row in v.comparison.rows if row.a is not None and row.b is not None}:
            ran[name] += 1
        per_kernel: dict[str, tuple[float, float]] = {}  # a pass that runs several times: its times summed, once per kernel
        for found in v.slower:
            base_ms, head_ms = per_kernel.get(found.name, (0.0, 0.0))
            per_kernel[found.name] = (base_ms + found.base_ms, head_ms + found.head_ms)
        for name, times in per_kernel.items():
            slow[name].append(times)
    # The run's own noise: how often a pass was "slow" in a kernel at all, over every pass that ran.
    rate = sum(len(times) for times in slow.values()) / max(1, sum(ran.values()))
    out = []
    for name, times in slow.items():
        if len(times) < SLOWER_KERNELS or 2 * len(times) < ran[name]:
            continue
        chance = binomial_tail(len(times), ran[name], rate)
        if chance < SLOWER_CHANCE:
            base_ms, head_ms = statistics.median(a for a, _ in times), statistics.median(b for _, b in times)
            out.append(CorpusSlower(name, len(times), ran[name], base_ms, head_ms, chance))
    return sorted(out, key=lambda s: -(s.head_ms - s.base_ms) * s.slow)


def first_effect(base: Found, head: Found, result: Comparison) -> PassEffect | None:
    """The inputs differ already (another frontend): the first aligned pass, both sides having run
    it, that changed the IR otherwise than the other side's -- lines removed and added, compared as
    text after the comparison's normalisation (names derived from the kernel's), so that what each
    side was given apart from the pass's own edit does not count. A pass whose edit differs because
    a pass nested in it does names the nested one (the innermost)."""
    norm = Normaliser(renames_between(Side(base.kernel, base.trace.snapshot), Side(head.kernel, head.trace.snapshot)))

    def differs(a: PassRecord, b: PassRecord) -> bool:
        if (a.status, b.status) == (PassStatus.UNCHANGED, PassStatus.UNCHANGED):
            return False
        mine = edit_of(norm(0, base.trace.snapshot(a.before)), norm(0, base.trace.snapshot(a.after)))
        theirs = edit_of(norm(1, head.trace.snapshot(b.before)), norm(1, head.trace.snapshot(b.after)))
        return mine != theirs

    rows = [(row.a, row.b) for row in result.rows if row.a is not None and row.b is not None]
    found = next(((a, b) for a, b in rows if differs(a, b)), None)
    while found is not None:
        outer_a, outer_b = found
        inner = next(((a, b) for a, b in rows if a.parent == outer_a.seq and b.parent == outer_b.seq and differs(a, b)), None)
        if inner is None:
            return PassEffect(outer_a, outer_b)
        found = inner
    return None


def edit_of(before: str, after: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a pass did to a text: the lines it removed and the lines it added (each sorted, indent
    kept), from a minimal diff."""
    old, new = split_lines(before), split_lines(after)
    removed, added = unkept(old, new)
    return tuple(sorted(old[i] for i in removed)), tuple(sorted(new[j] for j in added))


def regress(
    base: Iterable[Trace], head: Iterable[Trace], ignore: Sequence[str] = (), ends: tuple[str, str] = ("", ""), known: Iterable[KnownVariation] = ()
) -> list[KernelVerdict]:
    """Every kernel of the two sides with its verdict, most severe first (then in base's order).
    ends: how each side's process ended when it died (see side_end), else "". known: run-to-run
    variation measured before (analysis/variation.py); a kernel that differs only as it is known to
    vary is VARIES, not a change."""
    rows = pair(side_kernels(base), side_kernels(head))
    verdicts = [verdict(key, a, b, ignore, ends) for key, a, b in rows]
    return with_variation(verdicts, known)


def with_variation(verdicts: Sequence[KernelVerdict], known: Iterable[KnownVariation] = ()) -> list[KernelVerdict]:
    """The verdicts with the known variation applied, most severe first (ties keep their order):
    regress --repeat applies what its own two runs measured without comparing them again."""
    by_kernel = merge(known)
    applied = [as_variation(v, by_kernel) for v in verdicts] if by_kernel else list(verdicts)
    return sorted(applied, key=lambda v: v.severity)  # stable: base's order within a verdict


def as_variation(v: KernelVerdict, known: dict[tuple[str, str, str, int], KnownVariation]) -> KernelVerdict:
    item = explained(v, known)
    if item is None:
        return v
    # Every reason was one variation explains (analysis/variation.py: explained): they are all it is.
    return dataclasses.replace(v, verdict=VARIES, reasons=(VARIES,), variation=item, cause=None)


def side_end(returncode: int | None) -> str:
    """How a side's process ended when that was a death rather than an exit ("" for an exit, whatever
    its status: a failing test is no crash). subprocess gives a signal as -N; a shell as 128+N."""
    if returncode is None:
        return ""
    number = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 160 else 0
    if returncode == 124:
        return "was stopped (--timeout)"
    if not number:
        return ""
    try:
        return f"was killed by {signal.Signals(number).name}"
    except ValueError:
        return f"was killed by signal {number}"


def counts(verdicts: Iterable[KernelVerdict]) -> dict[str, int]:
    found = collections.Counter(v.verdict for v in verdicts)
    return {name: found[name] for name in SEVERITY if found[name]}
