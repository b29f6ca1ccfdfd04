"""What lower-trace regress says: one line per kernel, most severe first, with its evidence (the
terminal and ``--markdown``), or one object per kernel (``--json``, the summary page's data)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

from lower_trace.analysis.compare import Comparison
from lower_trace.analysis.regress import IDENTICAL, SEVERITY, Found, KernelVerdict, corpus_slower, counts
from lower_trace.model import PassRecord
from lower_trace.render.compare_view import renaming_text
from lower_trace.render.regress_cause_view import cause_json, phrases
from lower_trace.text_safety import plural, printable

_UNITS = {"spill_stores": " B", "spill_loads": " B", "shared_static": " B", "stack": " B"}


def _pass(record: PassRecord | None) -> str:
    return f"{record.seq} {record.name}" if record is not None else "?"


def evidence(verdict: KernelVerdict) -> list[str]:
    """The facts behind a verdict, each a short phrase, the most telling first."""
    out: list[str] = [verdict.stopped] if verdict.stopped else []
    out.extend(results_evidence(verdict))
    out.extend(f"equated {group.describe()}: one object under two names" for group in verdict.equated)
    out.extend(_variation(verdict))
    out.extend(_device(verdict))
    base, head, result = verdict.base, verdict.head, verdict.comparison
    if base is None or head is None:
        found = base or head
        assert found is not None
        out.append(f"{found.kernel.kernel_id} in {found.trace.path}")
        return out
    out.extend(_failures(base, head))
    if result is not None and not result.equivalent:
        out.extend(phrases(verdict.cause))  # the writers of the differing lines: the answer across releases
        out.append(_first_difference(verdict, result))
        out.extend(_changed_on_one_side(result))
    elif result is not None and result.renamed:
        out.append(f"renamed: {renaming_text(result.renamed, limit=3)}")
    return out


def results_evidence(verdict: KernelVerdict) -> list[str]:
    """regress --run: the first differing output of each launch that differs; else what was checked."""
    if not verdict.results:
        return []
    out = []
    for result in verdict.results:
        if result.differs:
            name, line = next((o for o in result.outputs if o[1].startswith(("differs", "head's call"))), ("?", "differs"))
            out.append(f"launch {result.n} ({result.how}): {name} {line.replace(' then,', ' base,').replace(' now;', ' head;')}")
    problems = [r for r in verdict.results if r.problem]
    out.extend(f"launch {r.n} not compared: {r.problem}" for r in problems[:2])
    same = [r for r in verdict.results if not r.differs and not r.problem]
    if same and not out:
        out.append(f"{'its launch gives' if len(same) == 1 else f'its {len(same)} launches give'} base's outputs ({same[0].how})")
    return out


def _failures(base: Found, head: Found) -> list[str]:
    """The side(s) whose compile failed, and what it raised."""
    out = []
    for label, found in (("base", base), ("head", head)):
        error = found.kernel.error
        if error is not None:
            out.append(f"{label} fails: {error.type}: {printable(error.message.splitlines()[0] if error.message else '')}")
    return out


def _variation(verdict: KernelVerdict) -> list[str]:
    """What regress --repeat measured of the kernel's run-to-run variation, if it did."""
    known = verdict.variation
    if known is None:
        return []
    where = f", first parting at {known.first_pass}" if known.first_pass else ""
    return [f"varies as measured by regress --repeat ({len(known.sources)} versions seen{where})"]


def _device(verdict: KernelVerdict) -> list[str]:
    """Each device figure that changed: "registers 240 → 166"."""
    out = []
    for what, a, b in verdict.device:
        unit = _UNITS.get(what, "")
        out.append(f"{what.replace('_', ' ')} {a}{unit} → {b}{unit}")
    return out


def _first_difference(verdict: KernelVerdict, result: Comparison) -> str:
    """Where the two compiles first part: the pass, or, when the inputs differ, the first pass that
    did otherwise on the two sides."""
    divergence = result.divergence
    if divergence is None:
        return "every pass alike; the generated sources differ"
    if divergence.kind == "behaves differently":
        return f"first differs at {_pass(divergence.b)} (same input, other output)"
    if divergence.kind == "one-sided":
        side = "base" if divergence.a is not None else "head"
        return f"first differs at {_pass(divergence.a or divergence.b)} (runs on {side} only and changes the IR)"
    if verdict.first_effect is not None:
        a, b = verdict.first_effect.base, verdict.first_effect.head
        where = f"{b.seq} {b.name}" if a.seq == b.seq else f"{b.name} (base {a.seq}, head {b.seq})"
        return f"inputs differ; first pass that did otherwise: {where}"
    return "inputs differ; every aligned pass changed the IR alike"


def _changed_on_one_side(result: Comparison) -> list[str]:
    """The aligned passes that changed the IR on one side only (the first three of each side)."""
    out = []
    for side, label in ((0, "base"), (1, "head")):
        changed = [row.a if side == 0 else row.b for row in result.changed_on_one_side(side)]
        if changed:
            names = ", ".join(record.name for record in changed[:3] if record is not None)
            more = f" (+{len(changed) - 3})" if len(changed) > 3 else ""
            out.append(f"changes the IR on {label} only: {names}{more}")
    return out


def slower_lines(verdicts: Sequence[KernelVerdict]) -> list[str]:
    """The passes slower on head across the corpus (analysis.regress.corpus_slower), a line each."""
    return [
        f"{s.name}: {s.head_ms / max(s.base_ms, 1e-3):.1f}x slower on head in {s.slow} of {s.ran} kernels "
        f"(median {s.base_ms:.1f} → {s.head_ms:.1f} ms; by chance: p < {max(s.chance, 1e-12):.0e})"
        for s in corpus_slower(verdicts)
    ]


def write_summary(stream: TextIO, verdicts: Sequence[KernelVerdict], header: Sequence[str], footer: Sequence[str] = ()) -> None:
    for line in header:
        stream.write(line + "\n")
    width = max((len(v.verdict) for v in verdicts), default=10)
    names = labels(verdicts)
    name_width = min(60, max((len(names[id(v)]) for v in verdicts), default=10))
    for v in verdicts:
        facts = "; ".join(evidence(v)) if v.verdict != IDENTICAL else ""
        stream.write(f"  {v.verdict:<{width}}  {printable(names[id(v)]):<{name_width}}  {facts}".rstrip() + "\n")
    stream.write(count_line(verdicts) + "\n")
    for line in slower_lines(verdicts):
        stream.write(f"compile time: {line}\n")
    for line in footer:
        stream.write(line + "\n")


def labels(verdicts: Sequence[KernelVerdict]) -> dict[int, str]:
    """Each verdict's kernel as a line names it (by id of the verdict): its key's label, and where
    kernels share one (a sweep's variants: one origin and name, other signatures), the part of the
    signature that tells them apart."""
    groups: dict[str, list[KernelVerdict]] = {}
    for v in verdicts:
        groups.setdefault(v.key.label(), []).append(v)
    out: dict[int, str] = {}
    for label, group in groups.items():
        apart = distinguishing([v.key.signature for v in group]) if len(group) > 1 else []
        for k, v in enumerate(group):
            out[id(v)] = f"{label} [{apart[k]}]" if apart and apart[k] else label
    return out


def distinguishing(signatures: Sequence[str], keep: int = 12) -> list[str]:
    """Each signature without what all of them share at the start and the end (the part that tells
    them apart, with a few characters of context), "…" where something was cut."""
    if len(set(signatures)) < 2:
        return ["" for _ in signatures]
    prefix = len(_common([*signatures]))
    suffix = len(_common([s[prefix:][::-1] for s in signatures]))
    out = []
    for s in signatures:
        start, end = max(0, prefix - keep), len(s) - max(0, suffix - keep)
        out.append(("…" if start else "") + s[start:end] + ("…" if end < len(s) else ""))
    return out


def _common(texts: list[str]) -> str:
    first, last = min(texts), max(texts)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def count_line(verdicts: Sequence[KernelVerdict]) -> str:
    if not verdicts:
        return "no kernel was compiled on either side"
    return f"{plural(len(verdicts), 'kernel')}: " + ", ".join(f"{n} {name}" for name, n in counts(verdicts).items())


def write_markdown(stream: TextIO, verdicts: Sequence[KernelVerdict], sides: Sequence[str]) -> None:
    """A pull-request comment: the counts, then a table of every kernel that is not identical."""
    stream.write("### lower-trace regress\n\n")
    for line in sides:
        stream.write(f"- {line}\n")
    stream.write(f"\n**{count_line(verdicts)}**\n\n")
    slower = slower_lines(verdicts)
    for line in slower:
        stream.write(f"- compile time: {line}\n")
    if slower:
        stream.write("\n")  # a table right after a list item is the item's text, not a table
    changed = [v for v in verdicts if v.verdict != IDENTICAL]
    if not changed:
        stream.write("Every kernel compiles to identical code.\n")
        return
    stream.write("| verdict | kernel | evidence |\n| --- | --- | --- |\n")
    names = labels(verdicts)
    for v in changed:
        cells = [v.verdict, f"`{names[id(v)].replace('`', chr(39))}`", "; ".join(evidence(v))]
        stream.write("| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |\n")


def as_json(verdict: KernelVerdict, page: str = "") -> dict[str, Any]:
    key, result = verdict.key, verdict.comparison
    out: dict[str, Any] = {
        "origin": key.origin, "kernel": key.name, "signature": key.signature, "occurrence": key.occurrence,
        "verdict": verdict.verdict, "severity": SEVERITY.index(verdict.verdict), "reasons": list(verdict.reasons),
        "evidence": evidence(verdict),
    }  # fmt: skip
    for label, found in (("base", verdict.base), ("head", verdict.head)):
        out[label] = None if found is None else {
            "trace": found.trace.path, "kernel_id": found.kernel.kernel_id, "status": found.kernel.status.value, "ms": found.kernel.ms,
            "passes": len(found.kernel.passes), "error": found.kernel.error.type if found.kernel.error else None,
        }  # fmt: skip
    if result is not None:
        divergence = result.divergence
        out["first_difference"] = None if divergence is None else {
            "kind": divergence.kind,
            "base": None if divergence.a is None else {"seq": divergence.a.seq, "pass": divergence.a.name},
            "head": None if divergence.b is None else {"seq": divergence.b.seq, "pass": divergence.b.name},
        }  # fmt: skip
        out["first_effect"] = None if verdict.first_effect is None else {
            "base": {"seq": verdict.first_effect.base.seq, "pass": verdict.first_effect.base.name},
            "head": {"seq": verdict.first_effect.head.seq, "pass": verdict.first_effect.head.name},
        }  # fmt: skip
        out["changed_on_one_side"] = {
            label: [getattr(row, attr).name for row in result.changed_on_one_side(side)] for side, label, attr in ((0, "base", "a"), (1, "head", "b"))
        }
        out["only_base"] = [record.name for record in result.only_a]
        out["only_head"] = [record.name for record in result.only_b]
        out["renamed"] = [list(pair) for pair in result.renamed]
    out["device"] = {what: [a, b] for what, a, b in verdict.device}
    out["slower"] = [{"pass": s.name, "base_ms": s.base_ms, "head_ms": s.head_ms} for s in verdict.slower]
    out["equated"] = [{"names": list(group.names), "value": group.value} for group in verdict.equated]
    if verdict.stopped:
        out["stopped"] = verdict.stopped
    if verdict.variation is not None:
        out["variation"] = {"first_pass": verdict.variation.first_pass, "versions": len(verdict.variation.sources)}
    out["cause"] = cause_json(verdict.cause, result)
    if verdict.results:
        out["results"] = [
            {"launch": r.n, "how": r.how, "differs": r.differs, "outputs": dict(r.outputs), **({"problem": r.problem} if r.problem else {})}
            for r in verdict.results
        ]
    out["compare_page"] = page
    return out


def slower_json(verdicts: Sequence[KernelVerdict]) -> list[dict[str, Any]]:
    return [{"pass": s.name, "kernels": s.slow, "ran": s.ran, "base_ms": s.base_ms, "head_ms": s.head_ms, "chance": s.chance} for s in corpus_slower(verdicts)]
