"""regress --run: each kernel's base launches checked on the head side -- "results differ" ranked above
"code differs", "code differs, results identical" its own verdict.

A base launch is compared with head's launch of the same number when head's was given the same inputs
(every tensor's digest and every scalar equal: a seeded corpus): their outputs side by side, bitwise.
Otherwise base's inputs are replayed on head's build: a launch repro folder of head's kernel (its exact
generated source) with base's tensors (integrations/reruns/launch_repro.py), run by head's interpreter. An output
whose data was not kept on either side is compared by digest, and says so. The comparison of two
tensors is the repro script's own (integrations/reruns/launch_script.py: compare), "then" being base.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from collections.abc import Sequence

from lower_trace.analysis.regress import Found, KernelVerdict, LaunchResult
from lower_trace.analysis.verdicts import Verdict
from lower_trace.model import LaunchRecord, LaunchValue
from lower_trace.store.paths import safe_component

REPLAY_TIMEOUT = 600.0
_CODE = (Verdict.DIFFERS, Verdict.HOST_DIFFERS)


def with_results(verdicts: Sequence[KernelVerdict], head_python: str, out: str) -> tuple[list[KernelVerdict], list[str]]:
    """The verdicts with every base launch checked on head (most severe first again), and the line said of it."""
    checked: list[KernelVerdict] = []
    compared = replayed = differ = skipped = 0
    for number, verdict in enumerate(verdicts, start=1):
        base, head = verdict.base, verdict.head
        if base is None or head is None or not base.kernel.launches or head.kernel.error is not None or verdict.stopped:
            checked.append(verdict)
            continue
        # Identical code is not rebuilt to replay other inputs (a compile a kernel, nvcc's for CUDA): compared where the inputs agree.
        identical = verdict.verdict is Verdict.IDENTICAL
        folder = os.path.join(out, "results", f"{number}-{safe_component(verdict.key.name, 'kernel')}") if out and not identical else ""
        results = tuple(check_launch(base, head, launch, head_python, folder) for launch in base.kernel.launches)
        if identical:
            results = tuple(r for r in results if not r.problem)
            if not results:
                skipped += 1
                checked.append(verdict)
                continue
        compared += 1
        replayed += any(r.how.startswith("base's inputs") for r in results)
        differ += any(r.differs for r in results)
        checked.append(_judged(verdict, results))
    if not compared and not skipped:
        return sorted(checked, key=lambda v: v.severity), ["results: no kernel had launches recorded on base (does the corpus call its kernels?)"]
    line = f"results: {compared} kernels' launches checked on head ({replayed} replayed with base's inputs), {differ} give other results"
    if skipped:
        line += f"; {skipped} with identical code and other inputs on head not replayed"
    return sorted(checked, key=lambda v: v.severity), [line]


def _judged(verdict: KernelVerdict, results: tuple[LaunchResult, ...]) -> KernelVerdict:
    reasons = list(verdict.reasons)
    if any(r.differs for r in results):
        reasons = [Verdict.RESULTS_DIFFER, *(r for r in reasons if r is not Verdict.IDENTICAL)]
    elif results and all(not r.problem for r in results) and any(r in _CODE for r in reasons):
        reasons = [Verdict.RESULTS_SAME if r in _CODE else r for r in reasons]
        reasons = list(dict.fromkeys(reasons))
    reasons.sort(key=lambda r: r.severity)
    return dataclasses.replace(verdict, verdict=reasons[0], reasons=tuple(reasons), results=results)


def check_launch(base: Found, head: Found, launch: LaunchRecord, head_python: str, folder: str) -> LaunchResult:
    if launch.error is not None:
        return LaunchResult(launch.n, "not compared", problem=f"base's call raised {launch.error.type}")
    twin = next((h for h in head.kernel.launches if h.n == launch.n), None)
    if twin is not None and twin.error is None and _same_inputs(launch.args, twin.args):
        return _side_by_side(base, head, launch, twin)
    if not folder:
        return LaunchResult(launch.n, "not compared", problem="head's launch had other inputs, and no folder to replay base's in (--dir)")
    return _replayed(base, head, launch, head_python, os.path.join(folder, f"launch-{launch.n}"))


def _same_inputs(a: Sequence[LaunchValue], b: Sequence[LaunchValue]) -> bool:
    def key(v: LaunchValue) -> tuple[object, ...]:
        return (v.name, v.kind, v.shape, v.dtype, v.digest) if v.kind == "tensor" else (v.name, v.kind, v.value)

    return len(a) == len(b) and all(v.kind != "tensor" or v.digest for v in a) and [key(v) for v in a] == [key(v) for v in b]


def _side_by_side(base: Found, head: Found, launch: LaunchRecord, twin: LaunchRecord) -> LaunchResult:
    theirs = {v.name: v for v in twin.after}
    outputs: list[tuple[str, str]] = []
    for value in launch.after:
        other = theirs.get(value.name)
        if other is None:
            outputs.append((value.name, "head's call gave no such output"))
        elif value.digest and value.digest == other.digest:
            outputs.append((value.name, "identical (bitwise)"))
        elif value.data and other.data:
            outputs.append((value.name, _compare_files(os.path.join(base.trace.path, value.data), os.path.join(head.trace.path, other.data), value)))
        elif value.digest and other.digest:
            outputs.append((value.name, "differs (by digest only: the data was not kept)"))
        else:
            outputs.append((value.name, "not compared (too large for a digest, and not kept)"))
    differs = any(line.startswith(("differs", "head's call gave no")) for _, line in outputs)
    return LaunchResult(launch.n, f"head's launch {twin.n}, the same inputs", tuple(outputs), differs)


def _compare_files(base_file: str, head_file: str, value: LaunchValue) -> str:
    import torch

    from lower_trace.integrations.reruns import launch_script

    entry = {"shape": list(value.shape), "dtype": value.dtype, "device": "cpu"}
    then = launch_script.load(dict(entry, file=base_file), torch)
    now = launch_script.load(dict(entry, file=head_file), torch)
    return launch_script.compare(value.name, then, now, torch, None, None)


def _replayed(base: Found, head: Found, launch: LaunchRecord, head_python: str, folder: str) -> LaunchResult:
    from lower_trace.integrations.reruns import launch_repro

    how = "base's inputs on head's build"
    try:
        made = launch_repro.write(head.trace, head.kernel, launch, "generated", folder, data_from=base.trace)
    except launch_repro.LaunchReproError as exc:
        return LaunchResult(launch.n, how, problem=str(exc))
    found = os.path.join(folder, "result.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    try:
        subprocess.run([head_python, made.script, "--any-version", "--json", found], cwd=folder, env=env, capture_output=True, timeout=REPLAY_TIMEOUT)
        with open(found, encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        return LaunchResult(launch.n, how, problem=f"the replay did not finish ({type(exc).__name__}); run it: {head_python} {made.script}")
    outputs = tuple((str(k), str(v)) for k, v in report.get("outputs", {}).items())
    if report.get("exit") == 2:
        return LaunchResult(launch.n, how, outputs, problem=str(report.get("said", "")))
    return LaunchResult(launch.n, how, outputs, differs=report.get("exit") == 1)
