"""The print floor: the least a tracer that keeps every pass's IR as text must do, as a
configuration of its own for the timing benchmarks (overhead.py's "print floor" row).

A bare PassInstrument, independent of lower-trace's code: per pass it holds the input's
function map, and after the pass prints the module (TVMScript, as lower-trace stores it) only
when its functions changed -- the same map, or every function the same object or structurally
equal, prints nothing. No records, no files, no spans, no report: what is left between this row
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


def _unchanged(before: Any, after: Any, structural_equal) -> bool:
    if before.same_as(after):
        return True
    by_name = {gv.name_hint: func for gv, func in before.items()}
    if len(by_name) != len(after):
        return False
    for gv, func in after.items():
        other = by_name.get(gv.name_hint)
        if other is None or not (func.same_as(other) or structural_equal(func, other)):
            return False
    return True


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
                if before is not None and _unchanged(before, mod.functions, equal):
                    return
                mod.script()

        class Tool(instrumentation.PassInstrumentationTool):
            def create_pass_instrument(self) -> Any:
                return Printer()

        instrumentation.register_pass_instrumentation_tool(_TOOL, Tool)

    def stop(self) -> None:
        from tilelang import instrumentation

        instrumentation.unregister_pass_instrumentation_tool(_TOOL)
