"""``lower-trace regress``: one corpus on two sides, every kernel compared (regress/ runs the sides,
analysis/regress.py pairs and judges, render/regress_view.py says it)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from lower_trace.analysis.verdicts import GATES, Verdict, default_gate
from lower_trace.cli.selection import UsageError, regex

SLOWER = "slower"  # --fail-on's word for passes slower across the corpus (never in the default gate: time is noisy)
REPEAT_NOTE = "the same side again (--repeat)"


def cmd_regress(args: argparse.Namespace) -> int:
    """Run one corpus on two sides -- two interpreters (TileLang versions), or one with other pass
    configs -- and compare every kernel: which compile to other code, at which pass the two part,
    what it did to registers, spills, occupancy and compile time. Exit status 0 when every kernel
    is identical (with --up-to-renaming, also the same up to renaming), 1 when any is not (or, with
    --fail-on, any verdict it names), 2 for a usage error. A corpus that fails on a side is said
    (its exit status and log tail) and what compiled is compared all the same; only a run where no
    kernel was traced on either side is an error. With --repeat, one side is run twice (base/ and
    head/): what differs then is TileLang's own run-to-run variation, written to variation.json for
    --variation, which keeps a later two-side run from calling that variation a change. A side whose
    process died (a signal) fails the gate, and a kernel it cut short is never compared as whole."""
    from lower_trace.analysis import variation
    from lower_trace.analysis.regress import regress, side_end, with_variation
    from lower_trace.regress.result import load_side, result_of, write_result
    from lower_trace.regress.sides import SideError
    from lower_trace.render.regress_view import write_markdown, write_summary

    gate = _gate(args)
    known = _known_variation(args)  # read before anything runs: a bad file is one line, nothing lost
    for pattern in args.ignore:
        regex(pattern, "--ignore")
    try:
        if args.compare:
            base_dir, head_dir, out, sides, failed = *_stored_sides(args), []
        else:
            base_dir, head_dir, out, sides, failed = _run_sides(args)
    except SideError as exc:
        raise UsageError(str(exc)) from None
    lines = [side_line(side) for side in sides]
    base, head = load_side(base_dir), load_side(head_dir)
    if not any(t.kernels for t in base) and not any(t.kernels for t in head):
        why = f"; {failed[0]}" if failed else ""
        raise UsageError(f"no kernel was traced on either side ({base_dir}, {head_dir}); does the corpus compile any with TileLang?{why}")
    for line in failed:  # said, not fatal: what compiled is compared, and --fail-on decides
        print(f"lower-trace regress: {line}", file=sys.stderr, flush=True)
    ends = (side_end(sides[0].get("exit")), side_end(sides[1].get("exit")))
    verdicts = regress(base, head, ignore=args.ignore, ends=ends, known=known)
    if args.repeat:  # one side twice: whatever differs varies on its own
        known = variation.measured(verdicts)
        verdicts = with_variation(verdicts, known)
    if args.repeat and out:
        variation.write(os.path.join(out, variation.FILE), known)
        lines.append(f"variation: {len(known)} of {len(verdicts)} kernels differ between the two runs; give --variation {out} to a later regress")
    died = [f"{side['label']}'s process {end}" for side, end in zip(sides, ends, strict=True) if end]
    # Under pytest-xdist a process that dies under a test is a worker: the side goes on, and says so.
    died.extend(f"{side['label']}'s worker died under {test}" for side in sides for test in side.get("crashed", ()))
    lines.extend(f"{what}: the side died, which fails the gate" for what in died)
    for side, line in zip(sides, lines, strict=False):  # the summary page says of the sides what the terminal says
        side["summary"] = line.split(": ", 1)[1]
    found = result_of(verdicts, sides[0], sides[1], out, args.ignore)
    found["notes"] = lines[len(sides) :]
    written = write_result(out, found) if out else ""
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
    dead = bool(died) and bool(gate & set(GATES["died"]))
    return 1 if failing or dead or (SLOWER in gate and found["slower_passes"]) else 0


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
        words = [word.strip() for item in args.fail_on for word in item.split(",") if word.strip()]
        if not words:  # --fail-on '' would gate on nothing, silently
            raise UsageError(f"--fail-on {' '.join(repr(item) for item in args.fail_on)}: name what fails the gate, any of {', '.join([*GATES, SLOWER])}")
        unknown = [word for word in words if word not in GATES and word != SLOWER]
        if unknown:
            raise UsageError(f"--fail-on {unknown[0]!r}: use any of {', '.join([*GATES, SLOWER])} (comma-separated)")
        return {verdict for word in words for verdict in GATES.get(word, (SLOWER,))}
    return set(default_gate(args.up_to_renaming))


def side_line(side: dict[str, Any]) -> str:
    """"base: PYTHON (TileLang 0.1.15), tl.x=true; exit 0, 4.7 s", or the folder of a stored side."""
    if "python" not in side:
        return f"{side['label']}: {side['folder']}"
    configs = " ".join(f"{k}={json.dumps(v)}" for k, v in side["configs"].items())
    forced = f", {configs}" if configs else ""
    again = f", {REPEAT_NOTE}" if side.get("repeat") and side["label"] == "head" else ""
    from lower_trace.analysis.regress import side_end

    ended = side_end(side["exit"])
    status = f"its process {ended}" if ended else f"exit {side['exit']}"
    return f"{side['label']}: {side['python']} (TileLang {side['tilelang']}){forced}{again}; {status}, {side['seconds']:.1f} s"


def _stored_sides(args: argparse.Namespace) -> tuple[str, str, str, list[dict[str, Any]]]:
    """--compare: the two folders' sides (a regress output folder stands for its head side, said on stderr)."""
    from lower_trace.regress.result import stored_side

    if args.command:
        raise UsageError("--compare reads two stored sides and runs nothing: leave out the command after --")
    if args.repeat or args.base or args.head or args.base_config or args.head_config:
        raise UsageError("--compare reads two stored sides and runs nothing: leave out --repeat, --base, --head and their configs")
    folders = []
    for path in args.compare:
        folder, note = stored_side(os.path.abspath(path), "--compare")
        if note:
            print(f"lower-trace regress: {note}", file=sys.stderr, flush=True)
        folders.append(folder)
    out = os.path.abspath(args.dir) if args.dir else ""
    return folders[0], folders[1], out, [{"label": "base", "folder": folders[0]}, {"label": "head", "folder": folders[1]}]


def _run_sides(args: argparse.Namespace) -> tuple[str, str, str, list[dict[str, Any]], list[str]]:
    """The corpus run on both sides (regress/run_sides.py): their folders, the output folder, the
    sides as regress.json stores them, and a line for each side whose corpus failed."""
    from lower_trace.config import default_trace_dir
    from lower_trace.regress.run_sides import failure_line, probe_sides, run_sides, side_record, side_specs
    from lower_trace.store.layout import new_run_dir

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("give the corpus after --, e.g. lower-trace regress --head-config tl.disable_tma_lower=true -- pytest tests/")
    specs = side_specs(args.base, args.head, args.base_config, args.head_config, args.repeat)
    interpreters = probe_sides(specs)
    out = os.path.abspath(args.dir) if args.dir else new_run_dir(os.path.join(default_trace_dir(), "regress"))
    if os.path.isdir(out) and os.listdir(out):
        raise UsageError(f"--dir {out}: not empty; name a new folder (each side's traces go in it)")
    for spec, interpreter in zip(specs, interpreters, strict=True):
        configs = " ".join(f"{k}={json.dumps(v)}" for k, v in interpreter.configs.items())
        again = f", {REPEAT_NOTE}" if args.repeat and spec.label == "head" else ""
        print(f"{spec.label}: {interpreter.python} (TileLang {interpreter.tilelang}){' ' + configs if configs else ''}{again} ...", file=sys.stderr, flush=True)
    runs = run_sides(command, specs, interpreters, out, os.getcwd(), args.timeout)
    sides = [side_record(spec, interpreter, run, args.repeat) for spec, interpreter, run in zip(specs, interpreters, runs, strict=True)]
    return runs[0].folder, runs[1].folder, out, sides, [failure_line(run) for run in runs if run.returncode != 0]


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
    regress.add_argument("--dir", help="where the sides' traces and the result go (default: a new folder in <TL_LOWER_TRACE_DIR>/regress)")
    regress.add_argument("--up-to-renaming", action="store_true", help="kernels that differ only in names pass the gate")
    gates = ",".join([*GATES, SLOWER])
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
