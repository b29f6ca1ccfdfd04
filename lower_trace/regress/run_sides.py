"""The two sides of lower-trace regress, from the options to two finished runs: which interpreter
and configs each side is (sides.py asks the interpreters), then the corpus run on both
(corpus.py runs one). With repeat, one side is run twice -- into base/ and head/ -- so that what
differs between them is TileLang's own run-to-run variation. Errors are SideError (one line)."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from lower_trace.regress.corpus import SideRun, crashed_tests, log_tail, run_side
from lower_trace.regress.sides import Interpreter, SideError, SideSpec, parse_configs, probe

T = TypeVar("T")


def side_specs(base: str | None, head: str | None, base_config: Sequence[str], head_config: Sequence[str], repeat: bool = False) -> list[SideSpec]:
    """[base, head] as the options name them (an interpreter left out is this one)."""
    if repeat:
        if head or head_config:
            given = "--head" if head else "--head-config"
            raise SideError(f"{given} with --repeat: --repeat runs one side twice; name that side with --base PYTHON and --base-config KEY=VALUE")
        configs = parse_configs(base_config, "--base-config")
        python = base or sys.executable
        return [SideSpec("base", python, configs), SideSpec("head", python, dict(configs))]
    specs = [
        SideSpec("base", base or sys.executable, parse_configs(base_config, "--base-config")),
        SideSpec("head", head or sys.executable, parse_configs(head_config, "--head-config")),
    ]
    if os.path.abspath(specs[0].python) == os.path.abspath(specs[1].python) and specs[0].configs == specs[1].configs:
        raise SideError(
            "the two sides are the same; give --head PYTHON (another TileLang) or --head-config KEY=VALUE (another pass config), "
            "or --repeat to run one side twice"
        )
    return specs


def probe_sides(specs: list[SideSpec]) -> list[Interpreter]:
    """Each side's interpreter asked what it has, both at once; one interpreter, asked once (both
    sides' configs checked in that call)."""
    if os.path.abspath(specs[0].python) == os.path.abspath(specs[1].python):
        found = probe(specs[1], f"--{specs[1].label}", also=specs[:1])
        return [dataclasses.replace(found, configs=dict(spec.configs)) for spec in specs]
    return both([lambda spec=spec: probe(spec, f"--{spec.label}") for spec in specs])


def run_sides(
    command: list[str], specs: list[SideSpec], interpreters: list[Interpreter], out: str, workdir: str, timeout: float | None, launches: str = "",
) -> list[SideRun]:
    """The corpus run on each side into out/<label>. A corpus that spreads itself over the cores
    (pytest -n) runs one side after the other; any other runs both sides at once, one core each."""
    jobs = [lambda spec=spec, interpreter=interpreter: run_side(spec.label, command, interpreter, os.path.join(out, spec.label), workdir, timeout, launches)
            for spec, interpreter in zip(specs, interpreters, strict=True)]  # fmt: skip
    return [job() for job in jobs] if uses_workers(command) else both(jobs)


def side_record(spec: SideSpec, interpreter: Interpreter, run: SideRun, repeat: bool = False) -> dict[str, Any]:
    """A run side as regress.json stores it (the summary page and side_line read it)."""
    record = {
        "label": spec.label, "folder": run.folder, "python": interpreter.python, "tilelang": interpreter.tilelang, "configs": interpreter.configs,
        "exit": run.returncode, "seconds": round(run.seconds, 3), "log": run.log,
    }  # fmt: skip
    if run.returncode != 0:
        record["log_tail"] = log_tail(run.log)
        crashed = crashed_tests(run.log)
        if crashed:
            record["crashed"] = crashed
    if repeat:
        record["repeat"] = True
    return record


def failure_line(run: SideRun) -> str:
    """What a side's failing corpus said: its exit status and the last lines of its log (a process
    killed by a signal: that, and where it died, the log's first line of the crash report)."""
    from lower_trace.analysis.regress import side_end

    ended = side_end(run.returncode)
    if ended:
        return f"the {run.label} side's process {ended} (log {run.log}){_crash_line(run.log)}"
    return f"the corpus failed on the {run.label} side (exit {run.returncode}; log {run.log}): {log_tail(run.log)}"


def _crash_line(log: str) -> str:
    """": Fatal Python error: Segmentation fault" and the innermost Python frame, from the log."""
    try:
        with open(log, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return ""
    # Python's faulthandler, or TVM's own handler (which prints the C++ and Python stack).
    start = next((i for i, line in enumerate(lines) if line.startswith("Fatal Python error") or "Segfault encountered" in line), None)
    if start is None:
        return ""
    frame = next((line.strip() for line in lines[start + 1 :] if re.search(r'File "[^"]+\.py", line \d+', line)), "")
    return f": {lines[start].strip(' !')}" + (f", {frame}" if frame else "")


def both(jobs: Sequence[Callable[[], T]]) -> list[T]:
    """Two jobs run at once (each starts a process and waits for it); their results in order, or
    the first one's exception."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = [pool.submit(job) for job in jobs]
        return [future.result() for future in futures]


def uses_workers(command: Sequence[str]) -> bool:
    """pytest -n N / -nauto / --numprocesses / --tx (xdist's workers or gateways): the corpus spreads
    itself over the cores, so the sides run one after the other."""
    flags = ("-n", "--numprocesses", "--tx", "-d", "--dist")

    def spreads(word: str) -> bool:
        if word in flags or word.startswith(("-n=", "--numprocesses=", "--tx=", "--dist=")):
            return True
        return word.startswith("-n") and (word[2:].isdigit() or word[2:] in ("auto", "logical"))

    return any(spreads(word) for word in command)
