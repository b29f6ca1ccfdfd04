"""The print floor: the least a tracer that keeps every pass's IR as text must do, as a
configuration of its own for the timing benchmarks (overhead.py's "print floor" row).

A bare PassInstrument, independent of lower-trace's code: per pass it holds the input's
function map, and after the pass prints (TVMScript) each function the pass made or changed --
not the same object and not structurally equal to the input's function of that name; a pass
that changed nothing prints nothing (issue 39: per function, not the whole module, so that
the distance to lower-trace is honest). No records, no files, no spans, no report: what is left between this row
and lower-trace's is lower-trace's own work (docs/performance.md, "Issue 29").

TileLang 0.1.15+ only (``tilelang.instrumentation``); ``available()`` says whether it can run.
"""

from __future__ import annotations

from typing import Any

_TOOL = "lower-trace-benchmark-print-floor"


def available() -> bool:
    try:
        import tilelang.instrumentation  # noqa: F401
    except ImportError:
        return False
    return True


def changed_functions(before: Any, after: Any, structural_equal) -> list[Any]:
    """The functions of `after` the pass made or changed: not in `before` by name, or neither the
    same object nor structurally equal to the one there."""
    if before.same_as(after):
        return []
    by_name = {gv.name_hint: func for gv, func in before.items()}
    changed = []
    for gv, func in after.items():
        other = by_name.get(gv.name_hint)
        if other is None or not (func.same_as(other) or structural_equal(func, other)):
            changed.append(func)
    return changed


class PrintFloor:
    """start() / stop(): while started, every TileLang compile's passes are printed as above."""

    def start(self) -> None:
        from tilelang import instrumentation, tvm

        equal = tvm.ir.structural_equal

        @tvm.ir.instrument.pass_instrument
        class Printer:
            def __init__(self) -> None:
                self.inputs: list[Any] = []

            def run_before_pass(self, mod: Any, info: Any) -> None:
                self.inputs.append(mod.functions)

            def run_after_pass(self, mod: Any, info: Any) -> None:
                before = self.inputs.pop() if self.inputs else None
                changed = list(mod.functions.values()) if before is None else changed_functions(before, mod.functions, equal)
                for func in changed:
                    func.script()

        class Tool(instrumentation.PassInstrumentationTool):
            def create_pass_instrument(self) -> Any:
                return Printer()

        instrumentation.register_pass_instrumentation_tool(_TOOL, Tool)

    def stop(self) -> None:
        from tilelang import instrumentation

        instrumentation.unregister_pass_instrumentation_tool(_TOOL)
