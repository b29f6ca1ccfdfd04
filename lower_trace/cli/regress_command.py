"""``lower-trace regress``: one corpus on two sides, every kernel compared (regress/ runs the sides,
analysis/regress.py pairs and judges, regress/result.py gathers the result, render/regress_view.py says it)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from lower_trace.analysis.verdicts import FAIL_ON, Verdict, default_gate, gate_fails, gate_of
from lower_trace.cli.selection import UsageError, after_dashes, regex

if TYPE_CHECKING:
    from lower_trace.regress.result import Judged


def cmd_regress(args: argparse.Namespace) -> int:
    """Run one corpus on two sides -- two interpreters (TileLang versions), or one with other pass
    configs -- and compare every kernel: which compile to other code, at which pass the two part,
    what it did to registers, spills, occupancy and compile time. Exit status 0 when every kernel
    is identical (with --up-to-renaming, also the same up to renaming), 1 when any is not (or, with
    --fail-on, any verdict it names), 2 for a usage error. With --run, the results too: each kernel's
    launches (kept with their tensors) checked on head -- "results differ" above "code differs", "code
    differs, results identical" its own verdict. A corpus that fails on a side is said
    (its exit status and log tail) and what compiled is compared all the same; only a run where no
    kernel was traced on either side is an error. With --repeat, one side is run twice (base/ and
    head/): what differs then is TileLang's own run-to-run variation, written to variation.json for
    --variation, which keeps a later two-side run from calling that variation a change. A side whose
    process died (a signal) fails the gate, and a kernel it cut short is never compared as whole."""
    from lower_trace.regress.result import judge, write_result
    from lower_trace.regress.sides import SideError

    gate = _gate(args)
    known = _known_variation(args)  # read before anything runs: a bad file is one line, nothing lost
    for pattern in args.ignore:
        regex(pattern, "--ignore")
    try:
        base_dir, head_dir, out, sides, failed = (*_stored_sides(args), []) if args.compare else _run_sides(args)
        results_python = (sides[1].get("python") or sys.executable) if args.run else ""
        judged = judge((base_dir, head_dir), sides, failed, out, ignore=args.ignore, known=known, repeat=args.repeat, results_python=results_python)
    except SideError as exc:
        raise UsageError(str(exc)) from None
    for line in failed:  # said, not fatal: what compiled is compared, and --fail-on decides
        print(f"lower-trace regress: {line}", file=sys.stderr, flush=True)
    written = write_result(out, judged.found) if out else ""
    _write_answer(args, judged, written)
    slower = bool(judged.found["slower_passes"])
    return 1 if gate_fails(gate, (v.reasons for v in judged.verdicts), bool(judged.died), slower) else 0


def _write_answer(args: argparse.Namespace, judged: Judged, written: str) -> None:
    """--json, --markdown or the summary (with where the result went) on stdout."""
    from lower_trace.render.regress_view import write_markdown, write_summary

    try:
        if args.json:
            json.dump(judged.found, sys.stdout, indent=2)
            sys.stdout.write("\n")
        elif args.markdown:
            write_markdown(sys.stdout, judged.verdicts, judged.lines)
        else:
            write_summary(sys.stdout, judged.verdicts, judged.lines, _footer(written))
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _footer(written: str) -> list[str]:
    if written.endswith(".html"):
        return [f"summary page: file://{written}"]
    return [f"result: {written}"] if written else []


def _known_variation(args: argparse.Namespace) -> list[Any]:
    from lower_trace.analysis import variation

    known = []
    for path in args.variation:
        try:
            known.extend(variation.read(path))
        except variation.VariationError as exc:
            raise UsageError(str(exc)) from None
    return known


def _gate(args: argparse.Namespace) -> set[Verdict | str]:
    """The verdicts that make the exit status 1."""
    if args.fail_on:
        return gate_of(_fail_on_words(args.fail_on))
    return set(default_gate(args.up_to_renaming))


def _fail_on_words(items: list[str]) -> list[str]:
    """--fail-on's words (each option comma-separated), every one a word it takes."""
    words = [word.strip() for item in items for word in item.split(",") if word.strip()]
    if not words:  # --fail-on '' would gate on nothing, silently
        raise UsageError(f"--fail-on {' '.join(repr(item) for item in items)}: name what fails the gate, any of {', '.join(FAIL_ON)}")
    unknown = [word for word in words if word not in FAIL_ON]
    if unknown:
        raise UsageError(f"--fail-on {unknown[0]!r}: use any of {', '.join(FAIL_ON)} (comma-separated)")
    return words


def _stored_sides(args: argparse.Namespace) -> tuple[str, str, str, list[dict[str, Any]]]:
    """--compare: the two folders' sides (a regress output folder stands for its head side, said on stderr)."""
    from lower_trace.regress.result import stored_side

    _check_compare(args)
    folders = []
    for path in args.compare:
        folder, note = stored_side(os.path.abspath(path), "--compare")
        if note:
            print(f"lower-trace regress: {note}", file=sys.stderr, flush=True)
        folders.append(folder)
    out = os.path.abspath(args.dir) if args.dir else ""
    return folders[0], folders[1], out, [{"label": "base", "folder": folders[0]}, {"label": "head", "folder": folders[1]}]


def _check_compare(args: argparse.Namespace) -> None:
    """--compare runs nothing: an option that says what to run is a mistake."""
    if args.command:
        raise UsageError("--compare reads two stored sides and runs nothing: leave out the command after --")
    if args.repeat or args.base or args.head or args.base_config or args.head_config:
        raise UsageError("--compare reads two stored sides and runs nothing: leave out --repeat, --base, --head and their configs")


def _run_sides(args: argparse.Namespace) -> tuple[str, str, str, list[dict[str, Any]], list[str]]:
    """The corpus run on both sides (regress/run_sides.py): their folders, the output folder, the
    sides as regress.json stores them, and a line for each side whose corpus failed."""
    from lower_trace.regress.run_sides import failure_line, probe_sides, run_sides, side_record, side_specs

    command = after_dashes(args.command)
    if not command:
        raise UsageError("give the corpus after --, e.g. lower-trace regress --head-config tl.disable_tma_lower=true -- pytest tests/")
    specs = side_specs(args.base, args.head, args.base_config, args.head_config, args.repeat)
    interpreters = probe_sides(specs)
    out = _output_folder(args)
    for spec, interpreter in zip(specs, interpreters, strict=True):
        print(f"{_starting_line(spec, interpreter, args.repeat)} ...", file=sys.stderr, flush=True)
    runs = run_sides(command, specs, interpreters, out, os.getcwd(), args.timeout, "data" if args.run else "")
    sides = [side_record(spec, interpreter, run, args.repeat) for spec, interpreter, run in zip(specs, interpreters, runs, strict=True)]
    return runs[0].folder, runs[1].folder, out, sides, [failure_line(run) for run in runs if run.returncode != 0]


def _output_folder(args: argparse.Namespace) -> str:
    """--dir, which must be new or empty, or a new folder in <trace dir>/regress."""
    from lower_trace.config import default_trace_dir
    from lower_trace.store.layout import new_run_dir

    out = os.path.abspath(args.dir) if args.dir else new_run_dir(os.path.join(default_trace_dir(), "regress"))
    if os.path.isdir(out) and os.listdir(out):
        raise UsageError(f"--dir {out}: not empty; name a new folder (each side's traces go in it)")
    return out


def _starting_line(spec: Any, interpreter: Any, repeat: bool) -> str:
    """A side as it starts: "head: PYTHON (TileLang 0.1.15) tl.x=true"."""
    from lower_trace.regress.result import REPEAT_NOTE

    configs = " ".join(f"{k}={json.dumps(v)}" for k, v in interpreter.configs.items())
    again = f", {REPEAT_NOTE}" if repeat and spec.label == "head" else ""
    return f"{spec.label}: {interpreter.python} (TileLang {interpreter.tilelang}){' ' + configs if configs else ''}{again}"


def add_parser(sub: Any) -> None:
    regress = sub.add_parser(
        "regress", help="run a corpus on two sides (TileLang versions, pass configs) and compare every kernel", description=cmd_regress.__doc__
    )
    regress.add_argument("--base", metavar="PYTHON", help="the base side's interpreter (default: this one)")
    regress.add_argument("--head", metavar="PYTHON", help="the head side's interpreter (default: this one)")
    regress.add_argument("--base-config", action="append", default=[], metavar="KEY=VALUE", help="a pass config forced on every base compile (repeatable)")
    regress.add_argument("--head-config", action="append", default=[], metavar="KEY=VALUE", help="a pass config forced on every head compile (repeatable)")
    regress.add_argument(
        "--compare", nargs=2, metavar=("DIR_A", "DIR_B"),
        help="compare two stored sides without running anything: folders of traces (a regress side such as OUT/head), "
        "or regress output folders, each of which stands for its head side",
    )  # fmt: skip
    regress.add_argument(
        "--repeat", action="store_true", help="run one side (--base, --base-config) twice, into base/ and head/: TileLang's run-to-run variation"
    )
    regress.add_argument(
        "--run", action="store_true",
        help="compare results too: the sides keep their launches' tensors (TL_LOWER_TRACE_LAUNCHES=data), each base launch is checked on head "
        "(head's launch on the same inputs, else base's inputs replayed on head's build): 'results differ' ranks above 'code differs'",
    )
    regress.add_argument("--dir", help="where the sides' traces and the result go (default: a new folder in <TL_LOWER_TRACE_DIR>/regress)")
    regress.add_argument("--up-to-renaming", action="store_true", help="kernels that differ only in names pass the gate")
    gates = ",".join(FAIL_ON)
    regress.add_argument("--fail-on", action="append", default=[], metavar="WHAT", help=f"exit 1 only for these (comma-separated): {gates}")
    regress.add_argument(
        "--variation", action="append", default=[], metavar="DIR",
        help="a regress --repeat folder (or its variation.json): kernels that differ as they varied there are 'varies run to run', not a change (repeatable)",
    )  # fmt: skip
    regress.add_argument("--ignore", action="append", default=[], metavar="REGEX", help="remove matches before comparing (repeatable)")
    regress.add_argument("--timeout", type=float, metavar="SECONDS", help="stop a side's corpus after this long")
    output = regress.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="one object per kernel, with its verdict and evidence")
    output.add_argument("--markdown", action="store_true", help="a summary for a pull-request comment")
    regress.add_argument("command", nargs=argparse.REMAINDER, help="the corpus, after --: pytest tests/ -k gemm, or python kernels.py")
    regress.set_defaults(func=cmd_regress)
