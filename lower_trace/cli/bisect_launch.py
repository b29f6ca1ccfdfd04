"""``lower-trace bisect --launch RUN:KERNEL[:N]``: a recorded launch as bisect's check, no script to write.

The launch is written as a repro folder in the bisect's work folder (integrations/reruns/launch_repro.py)
that compiles the recorded PrimFunc with this TileLang's own pipeline ("tir": no frontend, no recorded
source) and compares the outputs with a reference: the recorded ones, or those of the same launch built
with other pass configs (--reference-config) or by another interpreter (--reference-python, another
release), recorded once before the search (run.py --record). Each bisect run is that script; the pass
after which the results stop matching is the answer.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from lower_trace.cli.selection import UsageError
from lower_trace.model import kernel_list

REFERENCE_TIMEOUT = 900.0


def launch_check(args: argparse.Namespace, workdir: str) -> list[str]:
    """The check command for bisect --launch (its folder written, its reference recorded)."""
    from lower_trace.integrations.reruns import launch_repro
    from lower_trace.store.reader import load_trace

    run, kernel_key, number = _parts(args.launch)
    reference = _interpreter(args.reference_python) if args.reference_python else ""  # checked before anything is written
    trace = load_trace(run)
    try:
        kernels = trace.kernels_for(kernel_key)
    except LookupError as exc:
        raise UsageError(f"--launch {args.launch}: {exc}") from None
    if len(kernels) != 1:
        raise UsageError(f"--launch {args.launch}: {len(kernels)} kernels are named {kernel_key!r}; pick one by id: {kernel_list(kernels)}")
    folder = os.path.abspath(os.path.join(workdir, "launch"))  # the reference runs in it: its paths must not be relative
    try:
        launch = launch_repro.pick_launch(kernels[0], number)
        made = launch_repro.write(trace, kernels[0], launch, "tir", folder)
    except launch_repro.LaunchReproError as exc:
        raise UsageError(str(exc)) from None
    if args.reference_config or reference:
        _record_reference(args, folder, made.script, reference)
    tolerance = [*(["--atol", str(args.atol)] if args.atol is not None else []), *(["--rtol", str(args.rtol)] if args.rtol is not None else [])]
    return [sys.executable, made.script, "--any-version", *tolerance]


def _interpreter(given: str) -> str:
    """--reference-python as a path that works from any folder: a relative path made absolute, a bare name looked up on PATH."""
    import shutil

    found = os.path.abspath(given) if os.sep in given else shutil.which(given)
    if not found or not os.access(found, os.X_OK):
        raise UsageError(f"--reference-python {given}: no such interpreter (or not executable); name its path")
    return found


def _parts(text: str) -> tuple[str, str, int]:
    """RUN:KERNEL[:N] -> (run, kernel, n); a run path may hold ':' itself, so it is split from the right."""
    head, _, last = text.rpartition(":")
    number = 1
    if last.isdigit() and ":" in head:
        number, (head, _, last) = int(last), head.rpartition(":")
    if not head or not last or number < 1:
        raise UsageError(f"--launch {text}: write RUN:KERNEL[:N], e.g. --launch tmp/lower_trace_dir/prog:k1:1 (RUN: a run folder or its script's)")
    return head, last, number


def _record_reference(args: argparse.Namespace, folder: str, script: str, reference: str) -> None:
    """The same launch built as the reference says, once: its outputs become the expected ones."""
    from lower_trace.regress.sides import SideError, parse_configs

    spec_path = os.path.join(folder, "launch.json")
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    original = dict(spec["compile"].get("pass_configs") or {})
    try:
        extra = parse_configs(args.reference_config, "--reference-config")
    except SideError as exc:
        raise UsageError(str(exc)) from None
    spec["compile"]["pass_configs"] = {**original, **extra}
    with open(spec_path, "w", encoding="utf-8") as handle:
        json.dump(spec, handle, indent=1)
    python = reference or sys.executable
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    try:
        done = subprocess.run([python, script, "--record", "--any-version"], cwd=folder, env=env, capture_output=True, text=True, timeout=REFERENCE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"the reference run ({python}) did not finish: {exc}") from None
    if done.returncode != 0:
        tail = (done.stdout.strip().splitlines() or done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"the reference run ({python} {script} --record) failed (exit {done.returncode}): {tail}")
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    if not spec["expected"] or any(e.get("note") != "recorded by --record" for e in spec["expected"]):
        raise UsageError(f"the reference run ({python} {script} --record) exited 0 but recorded no outputs; name a Python that runs the script")
    spec["compile"]["pass_configs"] = original  # the search builds as the launch was built; only the outputs are the reference's
    with open(spec_path, "w", encoding="utf-8") as handle:
        json.dump(spec, handle, indent=1)
