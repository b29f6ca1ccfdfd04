"""lower_trace.run_passes: a chain of passes run on one module, traced as one compile of its own.

The passes run under a PassContext like the current one (same opt level, configs and
instruments) with lower-trace's tracker added, so nested passes are recorded as in any
compile, and each step's TVMScript before and after is kept for the result TileLang's
one-shot lower_trace() returns.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import tvm

from lower_trace.capture.session import CompileSession
from lower_trace.capture.sink import GetRun
from lower_trace.integrations.adapters.tvm_driver import instrument_for
from lower_trace.integrations.ir_reading.tvm_ir import TVMIR

PHASE = "run_passes"


def module_of(func_or_mod: Any) -> Any:
    """An IRModule as given, a PrimFunc wrapped as one (named main, as TileLang's one-shot does)."""
    if isinstance(func_or_mod, tvm.IRModule):
        return func_or_mod
    return tvm.IRModule({"main": func_or_mod})


def pass_name(one_pass: Any) -> str:
    """The name a step is shown by, as TileLang's one-shot names it: the pass's, without namespace."""
    try:
        return str(one_pass.info.name).rsplit(".", 1)[-1]
    except Exception:
        return type(one_pass).__name__


Step = tuple[str, str, str, str]  # (name, TVMScript before, after ("" if it raised), error ("" if none))


def run_chain(get_run: GetRun, func_or_mod: Any, passes: Sequence[tuple[str, Any]], steps: list[Step]) -> None:
    """Run the passes in order, appending a Step to `steps` for each; the exception of a failing pass
    propagates, after its Step."""
    mod = module_of(func_or_mod)
    run = get_run()
    session = CompileSession(run, TVMIR(lambda: PHASE, layouts="tilelang" in sys.modules), entry=PHASE, edits=False) if run is not None else None
    current = tvm.transform.PassContext.current()
    instruments = list(current.instruments) + ([instrument_for(session)] if session is not None else [])
    error: BaseException | None = None
    try:
        with tvm.transform.PassContext(
            opt_level=current.opt_level, required_pass=list(current.required_pass), disabled_pass=list(current.disabled_pass),
            instruments=instruments, config=dict(current.config.items()),
        ):
            for name, one_pass in passes:
                before = mod.script()
                try:
                    mod = one_pass(mod)
                except Exception as exc:
                    steps.append((name, before, "", str(exc)))
                    raise
                steps.append((name, before, mod.script(), ""))
    except BaseException as exc:
        error = exc
        raise
    finally:
        if session is not None:
            try:
                session.finish(error)
            except Exception as exc:
                session.tracer_fault(exc)
