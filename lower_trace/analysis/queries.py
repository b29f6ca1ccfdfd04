"""What the read commands (show, diff, blame, where) compute from a loaded trace before they
render: the steps a PASS names, a step's lines with their origins, blame's history up to a pass,
where's answer for one line of the user's program, two compiles compared kernel by kernel. Pure
functions over the trace's records; what a bad request is called, and how an answer is printed,
are the CLI's and render/'s."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lower_trace.analysis.blame import Change, PatternHistory, final_text, functions, history, pattern_history
from lower_trace.analysis.compare import Comparison, Side, compare
from lower_trace.analysis.device.summary import device_differences, summarize
from lower_trace.analysis.origins import KernelOrigins, LineEvent, Origin, SourceOrigins, called_helper_lines, helper_call_sites, lines_from, source_owner
from lower_trace.model import CodegenRecord, KernelTrace, PassRecord, Trace

Step = PassRecord | CodegenRecord


def step_name(step: Step) -> str:
    return step.function if isinstance(step, CodegenRecord) else step.name


def name_pattern(key: str) -> re.Pattern[str] | None:
    try:
        return re.compile(key, re.IGNORECASE)
    except re.error:
        return None


def select_steps(kernels: list[KernelTrace], key: str) -> dict[str, list[Step]]:
    """The steps PASS names, per kernel: a sequence number; else the exact name; else the name
    without its namespace (LowerTileOp for tl.LowerTileOp); else a regex searched in the names
    (case-insensitive). The first of these that matches anything decides, in every kernel alike."""
    if key.isdigit():
        return {k.kernel_id: [s for s in k.steps if s.seq == int(key)] for k in kernels}
    pattern = name_pattern(key)
    tests = (
        lambda name: name == key,
        lambda name: name.rsplit(".", 1)[-1] == key,
        lambda name: pattern is not None and pattern.search(name) is not None,
    )
    chosen: dict[str, list[Step]] = {}
    for test in tests:
        chosen = {k.kernel_id: [s for s in k.steps if test(step_name(s))] for k in kernels}
        if any(chosen.values()):
            break
    return chosen


def selected_seqs(kernels: list[KernelTrace], key: str) -> dict[str, set[int]]:
    """show -p PASS: per kernel, the sequence numbers of the steps PASS names (empty where none)."""
    return {kernel_id: {s.seq for s in steps} for kernel_id, steps in select_steps(kernels, key).items()}


def shown_digest(step: Step) -> str:
    """The text a step is shown by: the source, for codegen; the IR after a pass (the IR it got, if it failed)."""
    return step.source if isinstance(step, CodegenRecord) else (step.after or step.before)


def step_origins(result: KernelOrigins, step: Step, text: str) -> tuple[list[Origin | None], bool]:
    """show --ir --origins: each line's origin of the text after step, and whether that text is on
    the kernel's history (the IR of a helper module an enclosing pass ran a pass on is not; its
    lines have none)."""
    if isinstance(step, CodegenRecord):
        entry = result.sources.get(step.seq)
        return (list(entry.origins) if entry is not None else []), True
    return list(result.of_text(text)), text in result.texts


@dataclass(frozen=True)
class SourceBlame:
    """blame --source, one generated source: its lines' origins and the pass that made each one's TIR line."""

    step: CodegenRecord
    entry: SourceOrigins
    owners: list[PassRecord | None]


def source_blame(result: KernelOrigins, kernel: KernelTrace) -> list[SourceBlame]:
    """Every generated source of the kernel that has origins, line by line."""
    found = []
    for step in kernel.codegen:
        entry = result.sources.get(step.seq)
        if entry is not None:
            found.append(SourceBlame(step, entry, [source_owner(result, step, i) for i in range(len(entry.origins))]))
    return found


def blame_history(trace: Trace, kernel: KernelTrace, until: PassRecord | None) -> list[Change]:
    """The kernel's IR history, up to and including until (the whole of it when None)."""
    return history(kernel, trace.snapshot, until.seq if until is not None else None)


def off_history(trace: Trace, changes: list[Change], until: PassRecord) -> bool:
    """Whether until worked on another module than the kernel's IR (so its lines have no place in the history)."""
    return bool(changes) and final_text(changes) != trace.snapshot(until.after or until.before)


def module_functions(trace: Trace, record: PassRecord) -> list[str]:
    """The functions of the module a pass received, sorted."""
    return sorted(functions(trace.snapshot(record.before)))


def pattern_answer(changes: list[Change], pattern: re.Pattern[str]) -> tuple[PatternHistory, int]:
    """blame PATTERN: what happened to the lines it matches, and how many lines of the final IR match it."""
    matches = sum(1 for line in final_text(changes).splitlines() if pattern.search(line))
    return pattern_history(changes, pattern), matches


def traced_files(result: KernelOrigins) -> list[str]:
    """The files of the user's program the kernel's lines come from, sorted."""
    return sorted({o.file for origins in result.texts.values() for o in origins if o is not None})


@dataclass(frozen=True)
class WhereAnswer:
    """where FILE:LINE: the lines that come from it, and what the passes did to them."""

    final: list[tuple[int, str, Origin]]  # lines of the final TIR
    sources: list[tuple[str, list[tuple[int, str, Origin]]]]  # per generated source (role), its lines
    events: list[LineEvent]
    helper: tuple[str, list[int]]  # the line is in a helper: its name, the lines that call it
    called: tuple[str, list[int]]  # the line calls a helper: its name, the helper's lines

    @property
    def found(self) -> bool:
        return bool(self.final) or any(lines for _, lines in self.sources)


def where_answer(result: KernelOrigins, kernel: KernelTrace, file: str, line: int, source: str | None) -> WhereAnswer:
    """The lines of the final TIR and of each generated source that come from file:line; source,
    the file's text as traced (None: not stored), explains a line with none of its own."""
    final = result.final_text()
    sources = []
    for step in kernel.codegen:
        entry = result.sources.get(step.seq)
        if entry is not None:
            sources.append((step.role, lines_from(entry.text, entry.origins, file, line)))
    answer = WhereAnswer(lines_from(final, result.of_text(final), file, line), sources, result.line_history(file, line), ("", []), ("", []))
    if answer.found or source is None:
        return answer
    # a helper's line whose code is the call's, or a call whose code is the helper's
    used = {o.line for origins in result.texts.values() for o in origins if o is not None and o.file == file}
    helper = helper_call_sites(source, line, used)
    called = called_helper_lines(source, line, used) if not helper[0] else ("", [])
    return WhereAnswer(answer.final, answer.sources, answer.events, helper, called)


@dataclass(frozen=True)
class KernelComparison:
    """diff, one pair of kernels: the pass-by-pass comparison and the device stage's differences."""

    a: KernelTrace
    b: KernelTrace
    result: Comparison
    device: list[tuple[str, str, str]]


def compare_pairs(
    trace_a: Trace, trace_b: Trace, pairs: list[tuple[KernelTrace, KernelTrace]], ignore: list[str], up_to_renaming: bool,
) -> list[KernelComparison]:
    results = [
        (ka, kb, compare(Side(ka, trace_a.snapshot), Side(kb, trace_b.snapshot), ignore=ignore, up_to_renaming=up_to_renaming))
        for ka, kb in pairs
    ]
    return [
        KernelComparison(ka, kb, result, device_differences(summarize(ka, trace_a.read_snapshot), summarize(kb, trace_b.read_snapshot)))
        for ka, kb, result in results
    ]


def any_differ(compared: list[KernelComparison]) -> bool:
    """diff's exit status: 1 when a pair differs, in its passes or its device stage."""
    return any(not c.result.equivalent for c in compared) or any(c.device for c in compared)
