"""``lower-trace bisect --versions``: the TileLang release that turns the user's check bad.

Each release runs the check in its own venv (regress/releases.py builds and reuses them) with
tracing on, into <work>/<version>/ (regress/corpus.py, as a side of lower-trace regress runs);
the last good and the first bad release's traces are then compared kernel by kernel as regress
compares two sides (analysis/regress.py, render/regress_view.py), and written as regress writes its
result (regress/result.py): <work>/summary.html. The releases may be given in any order: they are
sorted as release numbers (PEP 440), and the output says so when that changed the order.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from lower_trace.cli.selection import UsageError

if TYPE_CHECKING:
    from lower_trace.regress.corpus import SideRun
    from lower_trace.regress.releases import Outcome, Search
    from lower_trace.regress.sides import Interpreter

# bisect's options that choose passes or configs: they mean nothing across releases.
PASS_OPTIONS = {"kernel": "--kernel", "required": "--required", "no_known_required": "--no-known-required", "configs": "--configs"}


def say(text: str) -> None:
    print(text, flush=True)


def cmd_bisect_versions(args: argparse.Namespace, command: list[str]) -> int:
    from lower_trace.regress.releases import DEFAULT_CACHE, search

    given, versions = _check_versions(args)
    cache = os.path.abspath(os.path.expanduser(args.venvs or DEFAULT_CACHE))
    work = _work_folder(args)
    say(f"bisecting TileLang releases {' '.join(versions)} (oldest first) with: {' '.join(command)}")
    if versions != given:  # the search needs them in order: said, so the order is never a surprise
        say(f"(sorted as release numbers; given as {' '.join(given)})")
    say(f"venvs: {cache}; traces: {work}")
    releases = _Releases(cache, command, work, args.timeout)
    try:
        found = search(versions, releases.outcome)
    except KeyboardInterrupt:
        say(f"stopped after {len(releases.runs)} runs; traces so far: {work}")
        return 130
    return _write_found(found, releases.runs, versions, work)


def _check_versions(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """--versions as given and oldest first; every other option fit to go with it."""
    from lower_trace.regress.releases import release_key

    passes = [name for name, flag in PASS_OPTIONS.items() if getattr(args, name, None) not in (None, False, [])]
    if passes:
        raise UsageError(f"{PASS_OPTIONS[passes[0]]} chooses passes and does not apply to --versions (which runs every pass of each release); leave it out")
    given = list(args.versions)
    if len(given) < 2:
        raise UsageError("--versions needs two releases or more: --versions 0.1.9 0.1.13 0.1.15")
    versions = _oldest_first(given)
    if len({release_key(v) for v in versions}) != len(versions):
        raise UsageError(f"--versions {' '.join(given)}: a release is named twice; name each once")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout:g}: give the seconds one run may take (more than 0)")
    return given, versions


def _oldest_first(given: list[str]) -> list[str]:
    from lower_trace.regress.releases import oldest_first

    try:
        return oldest_first(given)
    except ValueError as exc:
        raise UsageError(f"--versions {exc}: not a release number; name TileLang releases as pip does, e.g. 0.1.13") from None


def _work_folder(args: argparse.Namespace) -> str:
    """--work, which must be new or empty, or a new folder in <trace dir>/bisect."""
    from lower_trace.config import default_trace_dir
    from lower_trace.store.layout import new_run_dir

    work = os.path.abspath(args.work) if args.work else new_run_dir(os.path.join(default_trace_dir(), "bisect"))
    if os.path.isdir(work) and os.listdir(work):
        raise UsageError(f"--work {work}: not empty; name a new folder (each release's traces go in <folder>/<version>)")
    return work


class _Releases:
    """Each release's run of the check, as the search asks for it: said as it ends, kept for the comparison."""

    def __init__(self, cache: str, command: list[str], work: str, timeout: float | None) -> None:
        self.cache, self.command, self.work, self.timeout = cache, command, work, timeout
        self.runs: dict[str, tuple[Interpreter, SideRun]] = {}

    def outcome(self, version: str) -> Outcome:
        interpreter = self._interpreter(version)
        if interpreter is None:
            return "skipped"
        run = self._run(version, interpreter)
        self.runs[version] = (interpreter, run)
        verdict: Outcome = "good" if run.returncode == 0 else "bad"
        late = " (stopped: --timeout)" if run.returncode == 124 and self.timeout else ""
        say(f"{version}: {verdict} (exit {run.returncode}{late}, {run.seconds:.1f} s; log {run.log})")
        return verdict

    def _interpreter(self, version: str) -> Interpreter | None:
        """The release's venv (built once, reused) asked what it has; None when it cannot be had (said)."""
        from lower_trace.regress.releases import VenvError, ensure_venv
        from lower_trace.regress.sides import SideError, SideSpec, probe

        try:
            python = ensure_venv(self.cache, version, say)
            return probe(SideSpec(version, python), f"TileLang {version}")
        except (VenvError, SideError) as exc:
            say(f"{version}: skipped: {exc}")
            return None

    def _run(self, version: str, interpreter: Interpreter) -> SideRun:
        from lower_trace.regress.corpus import run_side
        from lower_trace.regress.sides import SideError

        try:
            return run_side(version, self.command, interpreter, os.path.join(self.work, version), os.getcwd(), timeout=self.timeout)
        except SideError as exc:
            raise UsageError(str(exc)) from None


def _write_found(found: Search, runs: dict[str, tuple[Interpreter, SideRun]], versions: list[str], work: str) -> int:
    """What the search found: the first bad release, its comparison with the last good one and the
    summary page (exit 1); or why there is none."""
    if found.kind == "too few":
        raise UsageError(f"fewer than two of the releases {' '.join(versions)} install and import; name others (pip install tilelang==VERSION must work)")
    if found.kind == "first bad":
        say(f"the oldest release, {found.bad}, is already bad: nothing to bisect; add an older release that is good (first)")
        return 1
    if found.kind == "all good":
        say(f"every release is good, the newest ({found.good}) included: no bad release to find")
        return 0
    page = _compare(runs[found.good], runs[found.bad], work)
    if page:
        say(f"summary page: file://{page}")
    say(f"first bad release: {found.bad} (last good: {found.good})")
    return 1


def _compare(good: tuple[Interpreter, SideRun], bad: tuple[Interpreter, SideRun], work: str) -> str:
    """The last good and the first bad release's kernels, compared as lower-trace regress does, and
    written as regress writes its result (regress.json, summary.html, comparison pages) into work:
    the summary page's path ("" when no kernel was traced in either)."""
    from lower_trace.analysis.regress import regress
    from lower_trace.regress.result import load_side, result_of, write_result
    from lower_trace.regress.run_sides import side_record
    from lower_trace.regress.sides import SideSpec
    from lower_trace.render.regress_view import write_summary

    base, head = load_side(good[1].folder), load_side(bad[1].folder)
    header = [_line("base (last good)", *good), _line("head (first bad)", *bad)]
    if not any(t.kernels for t in base) and not any(t.kernels for t in head):
        for line in header:
            print(line)
        print("no kernel was traced in either release: nothing to compare (does the check compile one with TileLang?)")
        return ""
    verdicts = regress(base, head)
    sides = [side_record(SideSpec(label, interpreter.python), interpreter, run) for label, (interpreter, run) in (("base", good), ("head", bad))]
    page = write_result(work, result_of(verdicts, sides[0], sides[1], work))
    try:
        write_summary(sys.stdout, verdicts, header)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return page


def _line(what: str, interpreter: Interpreter, run: SideRun) -> str:
    return f"{what}: TileLang {interpreter.tilelang} ({interpreter.python}); exit {run.returncode}, {run.seconds:.1f} s; traces {run.folder}"
