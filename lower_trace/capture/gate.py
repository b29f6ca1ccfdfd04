"""Which passes run, in a child of ``lower-trace bisect``: the first N passes (in the order they
start, nested ones included) and every required pass; the rest are skipped. Pure: the
integration asks through TVM's ``PassInstrument.should_run``; nothing here imports TVM.

A required pass that runs past the limit runs, but the passes nested in it are counted and
skipped like any other (unless they are required themselves): a miscompiling pass inside a
Sequential the compile needs is found like any other.
"""

from __future__ import annotations

import re

from lower_trace.config import BisectPlan


class PassGate:
    def __init__(self, plan: BisectPlan) -> None:
        self.plan = plan
        self._kernel = re.compile(plan.kernel) if plan.kernel else None
        self._required = set(plan.required)
        self.count = 0  # ordinals handed out: the passes of matching kernels that asked
        self.last = 0  # the ordinal of the pass asked about last (0: not counted)

    def should_run(self, kernel: str, name: str, depth: int = 0, kernel_id: str = "") -> bool:
        if self._kernel is not None and not self._kernel.search(kernel) and not self._kernel.fullmatch(kernel_id):
            self.last = 0
            return True
        self.count += 1
        self.last = self.count
        if self.plan.limit is None or self.count <= self.plan.limit:
            return True
        return name in self._required or name.rsplit(".", 1)[-1] in self._required
