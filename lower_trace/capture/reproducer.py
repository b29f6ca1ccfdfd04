"""What a failed pass leaves to be run again: its input kept as TVM JSON in the trace, and the
reproducer written by the run's ``Reproducers`` port (rerun/repro.py, wired by api.py).

The failing pass is run alone on its input, or, when Python cannot build it (it exists only
inside a C++ Sequential, or its arguments could not be written down), the innermost enclosing
pass that Python can build, on that pass's input.
"""

from __future__ import annotations

from typing import Any

from lower_trace.capture.ir_adapter import IRAdapter
from lower_trace.capture.passes import OpenPass
from lower_trace.capture.sink import TraceSink
from lower_trace.model import ErrorInfo, PassBuild, ReproSpec
from lower_trace.store.layout import digest_of


def write_reproducer(
    run: TraceSink, ir: IRAdapter, kernel_id: str, kernel_name: str, context: dict[str, Any], ordered: list[OpenPass], failure: ErrorInfo,
) -> str:  # fmt: skip
    """The reproducer of the last of `ordered` (the passes that never returned, outermost first),
    which failed with `failure`; returns its folder ("" when none could be written)."""
    failing = ordered[-1]
    problem = ir.json_problem()
    if problem:
        run.note(f"{problem}: failed passes get no reproducer in this run", once="json")
        return ""
    by_seq = {p.seq: p for p in ordered}
    chain = [failing]  # the failing pass and the passes it is nested in, innermost first
    while chain[-1].parent in by_seq and len(chain) <= len(ordered):
        chain.append(by_seq[chain[-1].parent])  # type: ignore[index]
    builds = [(p, ir.pass_build(p.name, p.call, by_seq[p.parent].name if p.parent in by_seq else "")) for p in chain]  # type: ignore[index]
    runs, build = next(((p, b) for p, b in builds if isinstance(b, PassBuild)), builds[0])
    why = ""
    if not isinstance(build, PassBuild):
        why = build  # nothing can be built: the script looks the failing pass up by name, and says why
        build = PassBuild(failing.name, f"find_pass({failing.name!r})")
    elif runs is not failing:
        why = f"{builds[0][1]}, so this runs the pass it is nested in, {runs.name}."
    _keep_json(run, ir, failing)
    text = _keep_json(run, ir, runs)
    spec = ReproSpec(failing.name, (build,), kernel_name, dict(context), dict(run.info.versions), failure, why)
    return run.write_reproducer(kernel_id, failing.seq, failing.name, spec, text)


def _keep_json(run: TraceSink, ir: IRAdapter, open_pass: OpenPass) -> str:
    """The TVM JSON of a pass's input, stored in the trace (its `input`)."""
    text = ir.module_json(open_pass.identity)
    open_pass.input = open_pass.input or digest_of(text)
    run.store_ir(open_pass.input, text)
    return text
