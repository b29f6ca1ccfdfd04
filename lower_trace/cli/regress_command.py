"""``lower-trace regress``: one corpus on two sides, every kernel compared (regress/ runs the sides,
analysis/regress.py pairs and judges, render/regress_view.py says it)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from lower_trace.cli.selection import UsageError, regex

if TYPE_CHECKING:
    from lower_trace.analysis.regress import KernelVerdict
    from lower_trace.model import Trace

# --fail-on's words, and the verdicts each stands for.
GATES = {
    "broken": ("compile broken",),
    "missing": ("missing on head",),
    "spills": ("spills up",),
    "occupancy": ("occupancy down",),
    "registers": ("registers up",),
    "code": ("code differs", "host code differs", "fixed on head", "fails on both"),
    "renamed": ("only renamed",),
    "ir": ("same code, other IR",),
    "new": ("new on head",),
}
SLOWER = "slower"  # --fail-on's word for passes slower across the corpus (never in the default gate: time is noisy)
RESULT = "regress.json"


def cmd_regress(args: argparse.Namespace) -> int:
    """Run one corpus on two sides -- two interpreters (TileLang versions), or one with other pass
    configs -- and compare every kernel: which compile to other code, at which pass the two part,
    what it did to registers, spills, occupancy and compile time. Exit status 0 when every kernel
    is identical (with --up-to-renaming, also the same up to renaming), 1 when any is not (or, with
    --fail-on, any verdict it names), 2 for a usage error."""
    from lower_trace.analysis.regress import regress
    from lower_trace.render.regress_view import as_json, slower_json, write_markdown, write_summary

    gate = _gate(args)
    for pattern in args.ignore:
        regex(pattern, "--ignore")
    if args.compare:
        base_dir, head_dir = (os.path.abspath(path) for path in args.compare)
        if args.command:
            raise UsageError("--compare reads two stored sides and runs nothing: leave out the command after --")
        out = os.path.abspath(args.dir) if args.dir else ""
        sides = [{"label": "base", "folder": base_dir}, {"label": "head", "folder": head_dir}]
    else:
        base_dir, head_dir, out, sides = _run_sides(args)
    lines = [side_line(side) for side in sides]
    base, head = _load(base_dir, "base"), _load(head_dir, "head")
    if not any(t.kernels for t in base) and not any(t.kernels for t in head):
        raise UsageError(f"no kernel was traced on either side ({base_dir}, {head_dir}); does the corpus compile any with TileLang?")
    verdicts = regress(base, head, ignore=args.ignore)
    pages = _compare_pages(verdicts, out, args.ignore) if out else {}
    found = {"base": sides[0], "head": sides[1], "kernels": [as_json(v, pages.get(id(v), "")) for v in verdicts], "slower_passes": slower_json(verdicts)}
    written = _write_result(out, found) if out else ""
    try:
        if args.json:
            json.dump(found, sys.stdout, indent=2)
            sys.stdout.write("\n")
        elif args.markdown:
            write_markdown(sys.stdout, verdicts, lines)
        else:
            footer = [f"summary page: file://{written}"] if written.endswith(".html") else [f"result: {written}"] if written else []
            write_summary(sys.stdout, verdicts, lines, footer)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    failing = [v for v in verdicts if any(reason in gate for reason in v.reasons)]
    return 1 if failing or (SLOWER in gate and found["slower_passes"]) else 0


def _gate(args: argparse.Namespace) -> set[str]:
    """The verdicts that make the exit status 1."""
    if args.fail_on:
        words = [word.strip() for item in args.fail_on for word in item.split(",") if word.strip()]
        unknown = [word for word in words if word not in GATES and word != SLOWER]
        if unknown:
            raise UsageError(f"--fail-on {unknown[0]!r}: use any of {', '.join([*GATES, SLOWER])} (comma-separated)")
        return {verdict for word in words for verdict in GATES.get(word, (SLOWER,))}
    # The default gate: any generated code that is not identical (names aside with --up-to-renaming).
    allowed = {"identical", "same code, other IR", *(("only renamed",) if args.up_to_renaming else ())}
    return {verdict for verdicts in GATES.values() for verdict in verdicts} - allowed


def side_line(side: dict[str, Any]) -> str:
    """"base: PYTHON (TileLang 0.1.15), tl.x=true; exit 0, 4.7 s", or the folder of a stored side."""
    if "python" not in side:
        return f"{side['label']}: {side['folder']}"
    configs = " ".join(f"{k}={json.dumps(v)}" for k, v in side["configs"].items())
    forced = f", {configs}" if configs else ""
    return f"{side['label']}: {side['python']} (TileLang {side['tilelang']}){forced}; exit {side['exit']}, {side['seconds']:.1f} s"


def _run_sides(args: argparse.Namespace) -> tuple[str, str, str, list[dict[str, Any]]]:
    from lower_trace.config import default_trace_dir
    from lower_trace.regress.corpus import log_tail, run_side
    from lower_trace.regress.sides import SideError, SideSpec, parse_configs
    from lower_trace.store.layout import new_run_dir

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("give the corpus after --, e.g. lower-trace regress --head-config tl.disable_tma_lower=true -- pytest tests/")
    try:
        specs = [
            SideSpec("base", args.base or sys.executable, parse_configs(args.base_config, "--base-config")),
            SideSpec("head", args.head or sys.executable, parse_configs(args.head_config, "--head-config")),
        ]
        if os.path.abspath(specs[0].python) == os.path.abspath(specs[1].python) and specs[0].configs == specs[1].configs:
            raise SideError("the two sides are the same; give --head PYTHON (another TileLang) or --head-config KEY=VALUE (another pass config)")
        interpreters = probe_sides(specs)
    except SideError as exc:
        raise UsageError(str(exc)) from None
    out = os.path.abspath(args.dir) if args.dir else new_run_dir(os.path.join(default_trace_dir(), "regress"))
    if os.path.isdir(out) and os.listdir(out):
        raise UsageError(f"--dir {out}: not empty; name a new folder (each side's traces go in it)")
    for spec, interpreter in zip(specs, interpreters, strict=True):
        configs = " ".join(f"{k}={json.dumps(v)}" for k, v in interpreter.configs.items())
        print(f"{spec.label}: {interpreter.python} (TileLang {interpreter.tilelang}){' ' + configs if configs else ''} ...", file=sys.stderr, flush=True)
    jobs = [lambda spec=spec, interpreter=interpreter: run_side(spec.label, command, interpreter, os.path.join(out, spec.label), os.getcwd(), args.timeout)
            for spec, interpreter in zip(specs, interpreters, strict=True)]  # fmt: skip
    try:
        # A corpus that spreads itself over the cores (pytest -n) runs one side after the other;
        # any other runs both sides at once, one core each.
        runs = [job() for job in jobs] if uses_workers(command) else both(jobs)
    except SideError as exc:
        raise UsageError(str(exc)) from None
    sides = []
    for spec, interpreter, run in zip(specs, interpreters, runs, strict=True):
        folder = run.folder
        sides.append({
            "label": spec.label, "folder": folder, "python": interpreter.python, "tilelang": interpreter.tilelang, "configs": interpreter.configs,
            "exit": run.returncode, "seconds": round(run.seconds, 3), "log": run.log,
        })  # fmt: skip
    if all(run.returncode != 0 for run in runs):
        raise UsageError(
            f"the corpus failed on both sides (exit {runs[0].returncode}, {runs[1].returncode}): fix it first; "
            f"{runs[0].log}: {log_tail(runs[0].log)}"
        )
    return runs[0].folder, runs[1].folder, out, sides


def probe_sides(specs: list[Any]) -> list[Any]:
    """Each side's interpreter asked what it has, both at once; one interpreter, asked once."""
    from lower_trace.regress.sides import SideSpec, probe

    if os.path.abspath(specs[0].python) == os.path.abspath(specs[1].python):
        both_configs = SideSpec("head", specs[1].python, {**specs[0].configs, **specs[1].configs})
        owners = {key: spec.label for spec in specs for key in spec.configs}  # whose option names an unknown config
        found = probe(both_configs, "--head", owners)
        return [dataclasses.replace(found, configs=dict(spec.configs)) for spec in specs]
    return both([lambda spec=spec: probe(spec, f"--{spec.label}") for spec in specs])


def both(jobs: list[Any]) -> list[Any]:
    """Two jobs run at once (each starts a process and waits for it); their results in order, or
    the first one's exception."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = [pool.submit(job) for job in jobs]
        return [future.result() for future in futures]


def uses_workers(command: list[str]) -> bool:
    """pytest -n N / --numprocesses (xdist): the corpus spreads itself over the cores."""
    return any(
        word in ("-n", "--numprocesses") or word.startswith(("-n=", "--numprocesses=")) or (word.startswith("-n") and word[2:].isdigit()) for word in command
    )


def _load(folder: str, label: str) -> list[Trace]:
    import warnings

    from lower_trace.store.layout import list_runs
    from lower_trace.store.reader import TraceDamaged, load_trace

    if not os.path.isdir(folder):
        raise UsageError(f"{folder}: no such folder for the {label} side; name a folder of traces (a regress side, or TL_LOWER_TRACE_DIR of a run)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceDamaged)
        return [load_trace(run) for run in list_runs(folder)]


def _compare_pages(verdicts: list[KernelVerdict], out: str, ignore: list[str]) -> dict[int, str]:
    """A comparison page for each pair that is not identical: the summary links to it."""
    from lower_trace.render.report.compare_page import write_compare_page

    pages: dict[int, str] = {}
    folder = os.path.join(out, "compare")
    for number, verdict in enumerate(verdicts, start=1):
        if verdict.verdict == "identical" or verdict.comparison is None or verdict.base is None or verdict.head is None:
            continue
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{number}-{_file_part(verdict.key.name)}.html")
        pages[id(verdict)] = write_compare_page(path, verdict.comparison, (verdict.base.trace, verdict.base.kernel), (verdict.head.trace, verdict.head.kernel))
    return pages


def _file_part(name: str) -> str:
    from lower_trace.store.paths import safe_component

    return safe_component(name, "kernel")


def _write_result(out: str, found: dict[str, Any]) -> str:
    """regress.json and summary.html (the page to show) in out; the page's path."""
    from lower_trace.render.report.regress_page import write_summary_page
    from lower_trace.store.files import write_atomically

    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, RESULT)
    write_atomically(path, json.dumps(found, indent=1))
    return write_summary_page(os.path.join(out, "summary.html"), found)


def add_parser(sub: Any) -> None:
    regress = sub.add_parser(
        "regress", help="run a corpus on two sides (TileLang versions, pass configs) and compare every kernel", description=cmd_regress.__doc__
    )
    regress.add_argument("--base", metavar="PYTHON", help="the base side's interpreter (default: this one)")
    regress.add_argument("--head", metavar="PYTHON", help="the head side's interpreter (default: this one)")
    regress.add_argument("--base-config", action="append", default=[], metavar="KEY=VALUE", help="a pass config forced on every base compile (repeatable)")
    regress.add_argument("--head-config", action="append", default=[], metavar="KEY=VALUE", help="a pass config forced on every head compile (repeatable)")
    regress.add_argument("--compare", nargs=2, metavar=("DIR_A", "DIR_B"), help="compare two stored sides (folders of traces) without running anything")
    regress.add_argument("--dir", help="where the sides' traces and the result go (default: a new folder in <TL_LOWER_TRACE_DIR>/regress)")
    regress.add_argument("--up-to-renaming", action="store_true", help="kernels that differ only in names pass the gate")
    gates = ",".join([*GATES, SLOWER])
    regress.add_argument("--fail-on", action="append", default=[], metavar="WHAT", help=f"exit 1 only for these (comma-separated): {gates}")
    regress.add_argument("--ignore", action="append", default=[], metavar="REGEX", help="remove matches before comparing (repeatable)")
    regress.add_argument("--timeout", type=float, metavar="SECONDS", help="stop a side's corpus after this long")
    output = regress.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="one object per kernel, with its verdict and evidence")
    output.add_argument("--markdown", action="store_true", help="a summary for a pull-request comment")
    regress.add_argument("command", nargs=argparse.REMAINDER, help="the corpus, after --: pytest tests/ -k gemm, or python kernels.py")
    regress.set_defaults(func=cmd_regress)
