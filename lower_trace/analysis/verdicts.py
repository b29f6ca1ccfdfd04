"""The verdicts of lower-trace regress: one enum, read by the comparison, the gate (--fail-on),
every view and the summary page (which gets their labels from the result, never a copy)."""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Verdict(str, enum.Enum):
    """What became of one kernel from base to head. Declared most severe first: the views sort by
    this order and the gate reads it."""

    RESULTS_DIFFER = "results differ"  # regress --run: a launch's outputs on head are not base's (the same inputs)
    BROKEN = "compile broken"  # compiles on base, fails on head
    DIED_HEAD = "died on head"  # head's process stopped during this compile: nothing to compare
    DIED_BASE = "died on base"
    MISSING = "missing on head"  # compiled on base only
    SPILLS_UP = "spills up"
    OCCUPANCY_DOWN = "occupancy down"
    REGISTERS_UP = "registers up"
    DIFFERS = "code differs"  # the device code (or, without one, the only code) differs
    HOST_DIFFERS = "host code differs"  # the device code is the same, the host side's is not
    RESULTS_SAME = "code differs, results identical"  # regress --run: the code differs, every launch compared gives base's outputs
    FIXED = "fixed on head"  # fails on base, compiles on head
    BOTH_FAIL = "fails on both"
    VARIES = "varies run to run"  # differs as it differs between two runs of one side (TileLang's own variation)
    EQUIVALENT = "equivalent code"  # the same code once names bound to one object are equated (analysis/aliases.py)
    RENAMED = "only renamed"
    SAME_CODE = "same code, other IR"  # every generated source is the same; passes on the way did otherwise
    NEW = "new on head"  # compiled on head only
    IDENTICAL = "identical"

    def __str__(self) -> str:  # the label a user reads, in f-strings too
        return self.value

    @property
    def severity(self) -> int:
        return _ORDER[self]


_ORDER = {verdict: index for index, verdict in enumerate(Verdict)}
SEVERITY = tuple(Verdict)
DEVICE_VERDICTS = (Verdict.SPILLS_UP, Verdict.OCCUPANCY_DOWN, Verdict.REGISTERS_UP)

# --fail-on's words, and the verdicts each stands for.
GATES: dict[str, tuple[Verdict, ...]] = {
    "results": (Verdict.RESULTS_DIFFER,),
    "broken": (Verdict.BROKEN,),
    "died": (Verdict.DIED_HEAD, Verdict.DIED_BASE),
    "missing": (Verdict.MISSING,),
    "spills": (Verdict.SPILLS_UP,),
    "occupancy": (Verdict.OCCUPANCY_DOWN,),
    "registers": (Verdict.REGISTERS_UP,),
    "code": (Verdict.DIFFERS, Verdict.HOST_DIFFERS, Verdict.RESULTS_SAME, Verdict.FIXED, Verdict.BOTH_FAIL),
    "varies": (Verdict.VARIES,),
    "equivalent": (Verdict.EQUIVALENT,),
    "renamed": (Verdict.RENAMED,),
    "ir": (Verdict.SAME_CODE,),
    "new": (Verdict.NEW,),
}
# Never in the default gate: what differs only as TileLang's own run-to-run variation (measured,
# or one object under two names), or only in the IR on the way; names alone with --up-to-renaming.
_NOT_GATED = (Verdict.IDENTICAL, Verdict.SAME_CODE, Verdict.VARIES, Verdict.EQUIVALENT)


SLOWER = "slower"  # --fail-on's word for passes slower across the corpus (never in the default gate: time is noisy)
FAIL_ON = [*GATES, SLOWER]  # every word --fail-on takes


def gate_of(words: list[str]) -> set[Verdict | str]:
    """The verdicts (and SLOWER) that --fail-on's words name; every word is one of FAIL_ON."""
    return {verdict for word in words for verdict in GATES.get(word, (SLOWER,))}


def gate_fails(gate: set[Verdict | str], reasons: Iterable[tuple[Verdict, ...]], died: bool, slower: bool) -> bool:
    """Whether the gate fails: a kernel's verdict (any of its reasons) it names, a side's process that
    died when it names "died", passes slower across the corpus when it names SLOWER."""
    failing = any(reason in gate for kernel in reasons for reason in kernel)
    return failing or (died and bool(gate & set(GATES["died"]))) or (SLOWER in gate and slower)


def default_gate(up_to_renaming: bool) -> set[Verdict]:
    """The verdicts that fail the gate when --fail-on is not given: any generated code that is not
    the same (names aside with --up-to-renaming), beyond what varies from run to run."""
    allowed = {*_NOT_GATED, *((Verdict.RENAMED,) if up_to_renaming else ())}
    return {verdict for verdicts in GATES.values() for verdict in verdicts} - allowed
