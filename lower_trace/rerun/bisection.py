"""lower-trace bisect: which pass turns the user's check from good to bad.

The check is the user's command (exit 0 good, else bad). It is run again and again,
traced, with a pass limit N in TL_LOWER_TRACE_BISECT: in the child, the first N passes
(in the order they start, nested ones included) run, and so do the required ones; the
rest are skipped (capture/gate.py, through TVM's should_run). Bisecting N finds the
first pass whose execution makes the check fail.

A run whose compile fails because passes were skipped is not bad but *broken*: some
skipped pass is required. Then the smallest limit above N that compiles again is
found (another bisection) and the pass at that limit joins the required ones. TileLang's
pipelines come with a built-in list (KNOWN_REQUIRED, checked by a test), so this is
rarely needed. Nothing here imports TVM: the children do the compiling.
"""

from __future__ import annotations

import collections
import json
import math
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from lower_trace.config import ENV_BISECT, ENV_DIR, ENV_MODE, ENV_REPLAY
from lower_trace.model import BisectAnswer, BisectRun, KernelStatus, KernelTrace, PassRecord, PassStatus, Trace
from lower_trace.rerun.check_runs import CheckRuns
from lower_trace.store.layout import TraceNotFound
from lower_trace.store.reader import load_trace

if TYPE_CHECKING:
    from lower_trace.analysis.compare import Comparison

# Passes TileLang's pipelines cannot do without: learned (Bisector._learn) on TileLang 0.1.15's
# C pipeline (a kernel compiled and run) and CUDA pipeline (a pipelined GEMM lowered), plus the
# two that lower tile operators (T.copy, T.gemm); testing/integration/test_bisect.py checks it suffices for both.
KNOWN_REQUIRED = (
    "tirx.BindTarget", "tl.MaterializeKernelLaunch", "tl.LayoutInference", "tl.LowerTileOp", "tl.LowerOpaqueBlock",
    "tl.AnnotateDeviceRegions", "tl.SplitHostDevice", "tl.MakePackedAPI", "tl.MergeSharedMemoryAllocations", "tl.LowerDeviceKernelLaunch",
    "tl.FlattenBuffer", "tirx.Filter", "tl.LowerIntrin",
)


class CannotRun(Exception):
    """The check's command cannot be started (no such program, not executable)."""


class Bisector:
    def __init__(
        self, command: Sequence[str], workdir: str, kernel: str = "", required: Sequence[str] = KNOWN_REQUIRED,
        say: Callable[[str], None] = print, timeout: float | None = None, learn_limit: int = 12,
    ) -> None:
        self.command = list(command)
        self.runs = CheckRuns(self.command)
        self.workdir = os.path.abspath(workdir)
        self.kernel = kernel
        self.required = list(dict.fromkeys(required))
        self.say = say
        self.timeout = timeout
        self.learn_limit = learn_limit
        self.steps: list[BisectRun] = []
        self.total = 0
        self.expected = 0  # runs a bisection takes when nothing has to be learned

    # --- one run ---------------------------------------------------------------------

    def plan(self, limit: int | None, configs: dict[str, object] | None = None) -> str:
        return json.dumps({"limit": limit, "kernel": self.kernel, "required": self.required, **({"configs": configs} if configs else {})})

    def env(self, limit: int | None, folder: str, configs: dict[str, object] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != ENV_REPLAY}
        env.update({ENV_MODE: "html", ENV_DIR: folder, ENV_BISECT: self.plan(limit, configs), "TILELANG_DISABLE_CACHE": "1"})
        return env

    def run(self, limit: int | None, label: str, configs: dict[str, object] | None = None) -> BisectRun:
        number = len(self.steps) + 1
        folder = os.path.join(self.workdir, f"run-{number:02d}-{'all' if limit is None else limit}")
        os.makedirs(folder, exist_ok=True)
        started = time.monotonic()
        timed_out = False
        try:
            code = self.runs.run(self.env(limit, folder, configs), os.path.join(folder, "output.txt"), self.timeout)
        except subprocess.TimeoutExpired:
            code, timed_out = -1, True
        except OSError as exc:  # the command itself cannot be started
            raise CannotRun(f"cannot run {shlex.join(self.command)}: {exc.strerror or exc}") from None
        seconds = time.monotonic() - started
        try:
            trace: Trace | None = load_trace(folder)
        except TraceNotFound:
            trace = None
        counted = max((p.ordinal for k in trace.kernels for p in k.passes), default=0) if trace else 0
        if timed_out:
            verdict = "timeout"
        elif configs and (trace is None or not trace.kernels or self._failed(trace)):
            verdict = "broken"  # the config stopped the compile (unknown here, wrong type, ...): not a wrong result
        else:
            verdict = "broken" if self._broken(trace) else "good" if code == 0 else "bad"
        step = BisectRun(limit, verdict, code, trace, counted, seconds)
        self.steps.append(step)
        about = f" of about {self.expected}" if self.expected else ""
        self.say(f"run {number}{about}: {label}: {verdict} (exit {code}, {seconds:.1f} s)")
        return step

    @staticmethod
    def _failed(trace: Trace) -> bool:
        return any(k.status is not KernelStatus.OK for k in trace.kernels)

    def _broken(self, trace: Trace | None) -> bool:
        """A compile the gate took part in failed or never finished: skipping broke it."""
        return trace is not None and any(k.status is not KernelStatus.OK and any(p.ordinal for p in k.passes) for k in trace.kernels)

    # --- the search ------------------------------------------------------------------

    def bisect(self) -> BisectAnswer:
        with self.runs.kept_warm():
            return self._bisect()

    def _bisect(self) -> BisectAnswer:
        full = self.run(None, "every pass")
        if full.verdict == "timeout":
            return BisectAnswer("timeout", bad=full, runs=len(self.steps), steps=self.steps)
        if full.trace is None or full.counted == 0:
            return BisectAnswer("untraced", runs=len(self.steps), steps=self.steps)
        self.total = full.counted
        self.expected = 3 + math.ceil(math.log2(max(self.total, 2)))
        if any(k.status is not KernelStatus.OK for k in full.trace.kernels):
            return BisectAnswer("broken", bad=full, runs=len(self.steps), steps=self.steps)
        if full.verdict == "good":
            return BisectAnswer("always-good", good=full, runs=len(self.steps), steps=self.steps, required=tuple(self.required))
        low = self._settle(0)
        if low.verdict == "bad":
            return BisectAnswer("always-bad", bad=low, runs=len(self.steps), steps=self.steps, required=tuple(self.required), untested=self._untested(full))
        good, bad = low, full
        lo, hi = 0, self.total
        while hi - lo > 1:
            mid = (lo + hi) // 2
            step = self._settle(mid)
            if step.verdict == "good":
                lo, good = mid, step
            else:
                hi, bad = mid, step
        if bad.limit is None or bad.limit != hi:  # the bad end is the full run: run at hi for its trace
            bad = self._settle(hi)
        culprit, kernel = _at_ordinal(bad.trace, hi)
        return BisectAnswer(
            "found", culprit, kernel, good, bad, len(self.steps), tuple(self.required), self._untested(full), self.steps,
        )

    def label(self, limit: int) -> str:
        return f"passes 1-{limit} of {self.total}" if limit else f"none of the {self.total} passes but the required ones"

    def _settle(self, limit: int, label: str = "") -> BisectRun:
        """Run at limit; while the compile breaks, learn a required pass and run again."""
        label = label or self.label(limit)
        step = self.run(limit, label)
        learned = 0
        while step.verdict == "broken" and learned < self.learn_limit:
            self.expected += math.ceil(math.log2(max(self.total - limit, 2))) + 1  # what learning one costs
            name = self._learn(limit)
            if name is None:
                break
            learned += 1
            self.say(f"  {name} is required (skipping it breaks the compile): it always runs from now on")
            step = self.run(limit, label + f" (+{name})")
        return step

    def _learn(self, limit: int) -> str | None:
        """The smallest limit above `limit` that compiles again: the pass there is required."""
        lo, hi, at_hi = limit, self.total, None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            step = self.run(mid, f"learning: passes 1-{mid}")
            if step.verdict == "broken":
                lo = mid
            else:
                hi, at_hi = mid, step
        if at_hi is None:
            at_hi = self.run(hi, f"learning: passes 1-{hi}")
        record, _ = _at_ordinal(at_hi.trace, hi)
        if record is None or record.name in self.required:
            return None
        self.required.append(record.name)
        return record.name

    def _untested(self, full: BisectRun) -> tuple[str, ...]:
        """The passes of the full run that ran, as often as there, in every run: never skipped
        (required ones, and what else always ran), so never tested. A pass missing from a run
        (skipped, or nested in a skipped pass) was tested by it."""
        def ran(step: BisectRun) -> collections.Counter[str]:
            kernels = step.trace.kernels if step.trace else ()
            return collections.Counter(p.name for k in kernels for p in k.passes if p.ordinal and p.status is not PassStatus.SKIPPED)

        always = ran(full)
        for step in self.steps:
            if step is full or step.trace is None or step.verdict in ("broken", "timeout"):
                continue
            counts = ran(step)
            always = collections.Counter({name: n for name, n in always.items() if counts[name] >= n})
        return tuple(always)

    def try_configs(self, keys: Sequence[str]) -> tuple[BisectRun, list[tuple[str, BisectRun]]]:
        """The check with every pass, then with each config switched on alone: which flip it."""
        with self.runs.kept_warm():
            base = self.run(None, "as it is")
            tried = [(key, self.run(None, f"{key}=True", {key: True})) for key in keys]
        return base, tried

    def reproduce(self, limit: int | None, configs: dict[str, object] | None = None, folder: str = "") -> str:
        """The command line that makes one of the runs again, into a folder of its own (so that
        edited working copies elsewhere are not compiled instead)."""
        folder = folder or os.path.join(self.workdir, "again")
        settings = f"{ENV_MODE}=html {ENV_DIR}={shlex.quote(folder)} {ENV_BISECT}={shlex.quote(self.plan(limit, configs))}"
        return f"{settings} {shlex.join(self.command)}"


def required_passes(known: bool, named: Sequence[str]) -> list[str]:
    """The passes no run skips: the built-in list (unless known is False) and those named (--required, comma-separated)."""
    required = list(KNOWN_REQUIRED) if known else []
    return required + [name for item in named for name in item.split(",") if name]


def again(bisector: Bisector, answer: BisectAnswer, workdir: str) -> tuple[str, str, str, str]:
    """The commands that make a found answer's bad and good run again, the bad one keeping every
    pass's input (for reduce), and that one's folder: each into a folder of its own in workdir."""
    assert answer.good is not None and answer.bad is not None
    inputs = os.path.join(workdir, "again-bad-inputs")
    return (
        bisector.reproduce(answer.bad.limit, folder=os.path.join(workdir, "again-bad")),
        bisector.reproduce(answer.good.limit, folder=os.path.join(workdir, "again-good")),
        f"{ENV_REPLAY}=1 {bisector.reproduce(answer.bad.limit, folder=inputs)}",
        inputs,
    )


def parted(answer: BisectAnswer) -> Comparison | None:
    """A found answer's good and bad run's kernel compared, as lower-trace diff does (None: the good run has no such kernel)."""
    from lower_trace.analysis.compare import Side, compare

    good, bad, kernel = answer.good, answer.bad, answer.kernel
    if good is None or bad is None or kernel is None or good.trace is None or bad.trace is None:
        return None
    before = next((k for k in good.trace.kernels if k.kernel_id == kernel.kernel_id), None)
    return None if before is None else compare(Side(before, good.trace.snapshot), Side(kernel, bad.trace.snapshot))


def configs_to_try(wanted: str, known: Collection[str], switches: Callable[[], Sequence[str]]) -> tuple[list[str], list[str]]:
    """--configs's keys (all: every on/off switch the installed TileLang has, asked only then), and
    those named that it does not know (known empty: it cannot say, every name is tried)."""
    if wanted == "all":
        return [key for key in switches() if not known or key in known], []
    keys = [key for key in wanted.split(",") if key]
    return keys, [key for key in keys if known and key not in known]


def _at_ordinal(trace: Trace | None, ordinal: int) -> tuple[PassRecord | None, KernelTrace | None]:
    for kernel in trace.kernels if trace else ():
        for record in kernel.passes:
            if record.ordinal == ordinal:
                return record, kernel
    return None, None


def python_command(argv: Sequence[str]) -> list[str]:
    """The user's command; a script path alone runs with this interpreter."""
    if len(argv) == 1 and argv[0].endswith(".py"):
        return [sys.executable, argv[0]]
    return list(argv)
