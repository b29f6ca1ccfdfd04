"""Where a pass and a compile were called from, read off the Python stack: a pass's phase,
calling function, a better name for an anonymous pass and the arguments it was built with
(``PassOrigins.pass_origin``), and the frames of the user's program (``user_stack``).

Each integration gives a *phase provider*: where the compiler itself names the phase
(TileLang 0.1.15's pipeline scopes, the legacy adapter's patched phase functions); passes
outside any named phase are placed by the Python function that ran them (``phase_rules``).
TVMIR (tvm_ir.py) inherits this, so the stack walks see no extra frame of ours.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Callable, Sequence

import tvm

from lower_trace.capture.ir_adapter import PassOrigin
from lower_trace.integrations.adapters.tvm_driver import SKIP_DIRS
from lower_trace.integrations.ir_reading import pass_calls
from lower_trace.integrations.ir_reading.stack_walk import CallSite, call_shape, call_sites, factory_name
from lower_trace.model import PassCall

_PASS_CALL = tvm.ir.transform.Pass.__call__.__code__
PhaseRules = Sequence[tuple[str, str]]
# Names TVM gives passes built from plain functions or lists.
ANONYMOUS_PASSES = ("sequential", "_pipeline")
# Python's own modules and installed packages (pytest, runpy, ...) are no frames of the user's program.
_STDLIB = tuple(os.path.join(sysconfig.get_paths()[name], "") for name in ("stdlib", "purelib", "platlib"))
_STACK_DEPTH = 24  # frames of the user's program kept per compile, innermost first


class PassOrigins:
    """The IRAdapter's stack readers: pass_origin and user_stack."""

    def __init__(
        self,
        phase_provider: Callable[[], str | None] = lambda: None,
        phase_rules: PhaseRules = (),
        skip_dirs: Sequence[str] = SKIP_DIRS,
        phase_of_sites: Callable[[list[CallSite]], str] | None = None,
        library_dirs: Sequence[str] = (),
    ) -> None:
        # The compiler's own Python (TileLang's pipelines): its calls' arguments are evaluated again whatever they hold.
        self.library_dirs = tuple(os.path.join(d, "") for d in library_dirs)
        self.phase_provider = phase_provider
        self.phase_rules = phase_rules
        self.skip_dirs = tuple(skip_dirs)
        self.phase_of_sites = phase_of_sites or (lambda sites: infer_phase(sites, self.phase_rules))

    def user_stack(self) -> tuple[tuple[str, int, str], ...]:
        """The frames of the user's program now (not TileLang's, TVM's, ours or Python's own), outermost first."""
        skip = (*self.library_dirs, *(os.path.join(d, "") for d in self.skip_dirs), *_STDLIB)
        frames: list[tuple[str, int, str]] = []
        frame = sys._getframe(1)
        while frame is not None and len(frames) < _STACK_DEPTH:
            name = frame.f_code.co_filename
            if not name.startswith(skip) and not name.startswith("<"):
                frames.append((name, frame.f_lineno, frame.f_code.co_name))
            frame = frame.f_back
        return tuple(reversed(frames))

    def pass_origin(self, name: str, depth: int, parent_phase: str) -> PassOrigin:
        """(phase, caller function, better name for an anonymous pass, the arguments Python built
        it with when its factory takes some)."""
        phase = self.phase_provider() or ""
        if phase and name != "pass_fn":
            sites, _ = call_sites(self.skip_dirs, limit=1)  # just the caller: a short walk
            return PassOrigin(phase, sites[0].function if sites else "", "", self._call(sites, name, depth))
        sites, pass_calls = call_sites(self.skip_dirs, marker=_PASS_CALL)
        caller = sites[0].function if sites else ""
        if not phase:
            phase = self.phase_of_sites(sites) or parent_phase or (f"python:{caller}" if caller else "python")
        better = ""
        # Name `pass_fn` after the factory on the calling line, but only when Python called this
        # pass itself (one Pass.__call__ frame per nesting level).
        if (name == "pass_fn" or name in ANONYMOUS_PASSES) and sites and pass_calls == depth + 1:
            better = factory_name(sites[0]) or ""
        return PassOrigin(phase, caller, better, self._call(sites, name, depth))

    def _call(self, sites: list[CallSite], name: str, depth: int) -> PassCall | None:
        """A top-level pass built on the caller's line with arguments: those arguments, written down."""
        site = sites[0] if sites else None
        if depth or site is None or site.frame is None:
            return None
        shape = call_shape(site, name.rsplit(".", 1)[-1])
        if shape is None:
            return None
        return pass_calls.recorded_call(shape, site.frame, site.filename.startswith(self.library_dirs) if self.library_dirs else False)


def infer_phase(sites: list[CallSite], rules: PhaseRules) -> str:
    """The phase of the first site whose function a rule names; "" when none does."""
    for site in sites:
        short = site.function.rsplit(".", 1)[-1]
        for function, phase in rules:
            if short == function:
                return phase
    return ""
