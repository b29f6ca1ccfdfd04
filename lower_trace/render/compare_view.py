"""The terminal view of a comparison of two compiles (analysis/compare.py), and its JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

from lower_trace.analysis.compare import Comparison, config_difference
from lower_trace.analysis.configs import config_changes, config_value_text
from lower_trace.model import KernelTrace, PassRecord, PassStatus
from lower_trace.model_json import to_json
from lower_trace.render.json_view import pass_ref
from lower_trace.render.terminal import TerminalRenderer, printable
from lower_trace.text_safety import headline, plural


def _pass(record: PassRecord | None) -> str:
    if record is None:
        return "-"
    return f"{record.seq} {printable(record.name)} ({printable(record.phase)})"


def _kernel(label: str, where: str, kernel: KernelTrace) -> str:
    passes = plural(len(kernel.passes), "pass", "passes")
    return f"{label}: {printable(where)} {kernel.kernel_id} {printable(kernel.name)}  [{printable(kernel.target or '?')}]  {passes}"


def config_text(a: KernelTrace, b: KernelTrace) -> str:
    """'tl.disable_shuffle_elect: A unset, B True' for each config the two compiles differ in."""
    shown = config_value_text
    return "; ".join(f"{key}: A {shown(va)}, B {shown(vb)}" for key, (va, vb) in config_difference(a, b).items())


def write_pairs(stream: TextIO, pairs: Sequence[tuple[KernelTrace, KernelTrace]]) -> None:
    """Several kernels on each side: which is compared with which."""
    stream.write(f"{len(pairs)} pairs, compared in order: " + ", ".join(f"{a.kernel_id}~{b.kernel_id}" for a, b in pairs) + "\n")


def render(stream: TextIO, result: Comparison, a: tuple[str, KernelTrace], b: tuple[str, KernelTrace], color: bool | None = None, context: int = 3) -> None:
    """First divergence first, then the passes only one side ran, then the final sources."""
    view = TerminalRenderer(stream, color=color, context=context)
    stream.write(_kernel("A", *a) + "\n" + _kernel("B", *b) + "\n")
    configs = config_text(a[1], b[1])
    if configs:
        stream.write(f"pass configs differ: {printable(configs)}\n")
    if _wrote_sameness(stream, view, result):
        return
    _write_divergence(stream, view, result)
    _write_one_sided(stream, result)
    _write_sources(stream, view, result)
    stream.flush()


def _wrote_sameness(stream: TextIO, view: TerminalRenderer, result: Comparison) -> bool:
    """Identical, or the same up to renaming: say so (True: nothing else to say)."""
    if result.identical:
        stream.write(view.c("green", "identical: every aligned pass got and made the same IR, and the generated source is the same") + "\n")
        return True
    if result.equivalent:
        stream.write(view.c("green", "the same up to renaming: every aligned pass got and made the same IR, and the generated source is the same, "
                                      "once B's names are written as A's: " + renaming_text(result.renamed)) + "\n")
        return True
    return False


def _write_divergence(stream: TextIO, view: TerminalRenderer, result: Comparison) -> None:
    """Where the two compiles part, and the diff that shows it."""
    divergence = result.divergence
    if divergence is None:
        stream.write("every aligned pass got and made the same IR\n")
    elif divergence.kind == "input":
        _write_input_divergence(stream, view, result)
    elif divergence.kind == "behaves differently" and divergence.a is not None and divergence.b is not None:
        _write_behaves_differently(stream, view, result, divergence.a, divergence.b)
    else:
        _write_one_sided_divergence(stream, view, result, divergence.a, divergence.b)


def _write_input_divergence(stream: TextIO, view: TerminalRenderer, result: Comparison) -> None:
    stream.write(view.c("bold", "first divergence: the kernels differ before the first pass (other kernels, or other variants)") + "\n")
    if result.inputs_differ_in_names_only:
        stream.write("  they differ only in the names of identifiers: --up-to-renaming compares them up to a consistent renaming\n")
    first = next((row for row in result.rows if row.a is not None and row.b is not None), None)
    if first is not None and first.a is not None and first.b is not None:
        view.render_diff(result.text(0, first.a.before), result.text(1, first.b.before))


def _write_behaves_differently(stream: TextIO, view: TerminalRenderer, result: Comparison, a: PassRecord, b: PassRecord) -> None:
    """The same input, another output: the diff of the outputs, or, where one side raised, what it raised
    (rather than diff IR against nothing)."""
    failed = [(label, p) for label, p in (("A", a), ("B", b)) if p.status is PassStatus.FAILED]
    if failed:
        label, record = failed[0]
        other = "B" if label == "A" else "A"
        error = f" ({printable(record.error.type)}: {printable(headline(record.error.message))})" if record.error else ""
        both = f"A {_pass(a)} / B {_pass(b)}"
        stream.write(view.c("bold", f"first divergence: {both} got the same IR; it failed in {label}{error}, not in {other}") + "\n")
        return
    stream.write(view.c("bold", f"first divergence: A {_pass(a)} / B {_pass(b)} got the same IR and made different IR") + "\n")
    view.render_diff(result.text(0, a.after), result.text(1, b.after))


def _write_one_sided_divergence(stream: TextIO, view: TerminalRenderer, result: Comparison, a: PassRecord | None, b: PassRecord | None) -> None:
    side, record = ("A", a) if a is not None else ("B", b)
    stream.write(view.c("bold", f"first divergence: {_pass(record)} runs in {side} only and changes the IR") + "\n")
    if record is not None:
        reader = 0 if side == "A" else 1
        view.render_diff(result.text(reader, record.before), result.text(reader, record.after))


def _write_one_sided(stream: TextIO, result: Comparison) -> None:
    """The passes only one side ran, and the aligned passes that changed the IR on one side only."""
    for label, passes in (("A", result.only_a), ("B", result.only_b)):
        if passes:
            stream.write(f"only in {label} ({len(passes)}): " + ", ".join(_pass(p) for p in passes) + "\n")
    for side, (label, other) in enumerate((("A", "B"), ("B", "A"))):
        rows = result.changed_on_one_side(side)
        if rows:
            shown = ", ".join(_pass(row.a if side == 0 else row.b) for row in rows)
            stream.write(f"changed the IR in {label}, did nothing in {other} ({len(rows)}): {shown}\n")


def _write_sources(stream: TextIO, view: TerminalRenderer, result: Comparison) -> None:
    if result.same_source:
        stream.write("generated source: the same\n")
        return
    stream.write(view.c("bold", "generated source: differs (A -> B)") + "\n")
    view.render_diff(*result.sources)


def renaming_text(renamed: tuple[tuple[str, str], ...], limit: int = 8) -> str:
    """"A_s -> A_shared, k_1 -> k" (B's name -> A's), the first few."""
    shown = ", ".join(f"{printable(b)} -> {printable(a)}" for b, a in renamed[:limit])
    return shown + (f", ... ({len(renamed)} in all)" if len(renamed) > limit else "")


def as_json(result: Comparison, a: tuple[str, KernelTrace], b: tuple[str, KernelTrace]) -> dict[str, Any]:
    """The comparison for tools (the schema is in docs/usage.md, "Comparing two compiles")."""
    ref = pass_ref
    divergence = result.divergence
    return {
        "a": {"run": a[0], "kernel": a[1].kernel_id, "name": a[1].name},
        "b": {"run": b[0], "kernel": b[1].kernel_id, "name": b[1].name},
        "identical": result.identical,
        "verdict": result.verdict,
        "renamed": dict(result.renamed),
        "divergence": None if divergence is None else {"kind": divergence.kind, "a": ref(divergence.a), "b": ref(divergence.b)},
        "only_a": [ref(p) for p in result.only_a],
        "only_b": [ref(p) for p in result.only_b],
        "changed_only_in_a": [ref(row.a) for row in result.changed_on_one_side(0)],
        "changed_only_in_b": [ref(row.b) for row in result.changed_on_one_side(1)],
        "same_source": result.same_source,
        "configs": config_changes(a[1], b[1]),
        "rows": [
            {"a": ref(row.a), "b": ref(row.b), "same_input": row.same_input, "same_output": row.same_output,
             "status": [None if p is None else to_json(p)["status"] for p in (row.a, row.b)]}
            for row in result.rows
        ],
    }
