"""What the --json of `list` (and `list --runs`), `show` (and `show --ir`, `show --timing`) and
`blame` print: plain data for tools (the schema is in docs/trace-format.md, "JSON output").
Records keep the field names of trace.jsonl."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from lower_trace.analysis import text_diff
from lower_trace.analysis.blame import BlamedLine, PatternHistory
from lower_trace.analysis.configs import typed_configs
from lower_trace.analysis.timing import ir_lines, kernel_timing, run_timing
from lower_trace.model import CodegenRecord, KernelTrace, PassRecord, PassStatus, Trace
from lower_trace.model_json import to_json
from lower_trace.render.listing import state_counts
from lower_trace.render.terminal import kernel_state

SCHEMA = 1


def run_json(trace: Trace) -> dict[str, Any]:
    return {"path": trace.path, **to_json(trace.run)}


def kernel_json(kernel: KernelTrace) -> dict[str, Any]:
    return {
        "id": kernel.kernel_id,
        "name": kernel.name,
        "target": kernel.target,
        "status": kernel.status.value,
        "state": kernel_state(kernel).value,  # ok, failed, compile failed, did not finish: as the terminal says
        "entry": kernel.entry,
        "ms": kernel.ms,
        "passes": len(kernel.passes),
        "changed": kernel.changed_count,
        "failed": kernel.failed_count,
        "working_copy": kernel.working_copy,
        "pass_configs": typed_configs(kernel),  # JSON values (true, 32), not TVM's printed "T.bool(True)"
    }


def step_json(step: PassRecord | CodegenRecord, text_of: Callable[[str], str], texts: bool = False) -> dict[str, Any]:
    """A pass or codegen record; a changed pass with its +/- line counts; with texts, the IR too."""
    data: dict[str, Any] = {"kind": "codegen" if isinstance(step, CodegenRecord) else "pass", **to_json(step)}
    if isinstance(step, PassRecord):
        if step.status is PassStatus.CHANGED:
            stats = text_diff.stats(text_of(step.before), text_of(step.after))
            data.update(added=stats.added, removed=stats.removed)
        if texts:
            data.update(before_text=text_of(step.before), after_text=text_of(step.after) if step.after else None)
    elif texts:
        data.update(tir_text=text_of(step.tir), source_text=text_of(step.source))
    return data


def ir_text_json(trace: Trace, kernel: KernelTrace, step: PassRecord | CodegenRecord, text: str) -> dict[str, Any]:
    """`show --ir --json`: one step's IR (or generated source) with its kernel and record."""
    return {"kernel": kernel_json(kernel), "step": step_json(step, trace.snapshot), "text": text}


def listing(trace: Trace, with_steps: bool) -> dict[str, Any]:
    kernels = []
    for kernel in trace.kernels:
        item = kernel_json(kernel)
        if with_steps:
            item["steps"] = [step_json(step, trace.snapshot) for step in kernel.steps]
        kernels.append(item)
    return {"schema": SCHEMA, "run": run_json(trace), "kernels": kernels}


def showing(trace: Trace, kernels: Iterable[KernelTrace], only: dict[str, set[int]] | None, changed_only: bool) -> dict[str, Any]:
    """The kernels with their steps; the steps -p picked with their IR texts."""
    shown = []
    for kernel in kernels:
        wanted = None if only is None else only.get(kernel.kernel_id, set())
        if wanted is not None and not wanted:
            continue
        steps = [
            step_json(step, trace.snapshot, texts=wanted is not None)
            for step in kernel.steps
            if (wanted is None or step.seq in wanted) and not (changed_only and isinstance(step, PassRecord) and step.status is PassStatus.UNCHANGED)
        ]
        shown.append({**kernel_json(kernel), "error": to_json(kernel.error) if kernel.error else None, "steps": steps})
    return {"schema": SCHEMA, "run": run_json(trace), "kernels": shown}


def runs(entries: Iterable[tuple[str, Trace | Exception]]) -> dict[str, Any]:
    """`list --runs --json`: each run folder with its counts, or why it could not be read."""
    return {"schema": SCHEMA, "runs": [run_entry(run_dir, trace) for run_dir, trace in entries]}


def run_entry(run_dir: str, trace: Trace | Exception) -> dict[str, Any]:
    if not isinstance(trace, Trace):
        return {"path": run_dir, "error": str(trace)}
    failed, unfinished = state_counts(trace.kernels)
    entry: dict[str, Any] = {
        "path": run_dir, "run_id": trace.run.run_id, "started": trace.run.started, "kernels": len(trace.kernels),
        "failed": failed, "unfinished": unfinished,
    }
    if trace.run.title:
        entry["title"] = trace.run.title
    return entry


def pass_ref(record: PassRecord | None) -> dict[str, Any] | None:
    return None if record is None else {"seq": record.seq, "name": record.name, "phase": record.phase, "depth": record.depth}


def blamed_lines(kernel: KernelTrace, until: int | None, lines: Iterable[BlamedLine]) -> dict[str, Any]:
    """`blame --json`: each line of the IR with the pass that made it (None: the input's)."""
    blamed = [{"text": line.text, "pass": pass_ref(line.by)} for line in lines]
    return {"kernel": kernel.kernel_id, "name": kernel.name, "after": until, "lines": blamed}


def pattern_history(kernel: KernelTrace, pattern: str, found: PatternHistory, matches: int) -> dict[str, Any]:
    """`blame --json PATTERN`: the passes that introduced, changed and removed the lines it matches."""
    return {
        "kernel": kernel.kernel_id, "name": kernel.name, "pattern": pattern, "introduced": pass_ref(found.introduced),
        "changed": [pass_ref(p) for p in found.changed], "removed": pass_ref(found.removed),
        "present_at_end": found.present_at_end, "matches_at_end": matches,
    }


def timing_json(trace: Trace, kernels: Sequence[KernelTrace]) -> dict[str, Any]:
    """`show --timing --json`: each kernel's steps with their times, and the step names' totals over them."""
    entries = [{**kernel_json(k), "timing": kernel_timing_json(k, trace.snapshot)} for k in kernels]
    return {"schema": SCHEMA, "run": run_json(trace), "totals": run_timing_json(kernels), "kernels": entries}


def kernel_timing_json(kernel: KernelTrace, text_of: Callable[[str], str]) -> list[dict[str, Any]]:
    return [
        {
            "seq": t.seq,
            "name": t.name,
            "kind": "pass" if isinstance(t.step, PassRecord) else "codegen",
            "depth": t.depth,
            "parent": getattr(t.step, "parent", None),
            "ms": t.ms,
            "self_ms": t.self_ms,
            "at": t.at,
            "ir_lines": ir_lines(t.step, text_of),
        }
        for t in kernel_timing(kernel)
    ]


def run_timing_json(kernels: Sequence[KernelTrace]) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "self_ms": t.self_ms,
            "calls": t.calls,
            "kernels": t.kernels,
            "max_self_ms": t.max_self_ms,
            "max_kernel": t.max_kernel,
            "max_seq": t.max_seq,
        }
        for t in run_timing(kernels)
    ]
