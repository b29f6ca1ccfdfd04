"""Lowering time on TileLang's own examples: untraced vs lower-trace html (vs TileLang's built-in tracer).

    python benchmarks/examples.py EXAMPLE.py [EXAMPLE.py ...] [--rounds 3] [--cores 1] [--builtin]
    python benchmarks/examples.py --from-mirror 42 [--rounds 3] [--cores 1] [--builtin] [--timeout 60]

Each run is a fresh interpreter running one example until its first kernel is lowered, as
benchmarks/trace_size.py runs it (CUDA sm_90a source on the CPU, no nvcc); the time is that of
the outermost tilelang.lower (or JIT compile) call, taken inside the child, start-up left out.
"idle" adds the wait until lower-trace's worker thread is done with the kernel (what a user waits
for). Configurations take turns per example (untraced, traced, untraced, ... for --rounds rounds)
and the median of each is used. Printed per example: both configurations' ms and their ratios;
then the median and geomean of the ratios over examples, and the load average at start and end.
--from-mirror N: the first N examples (sorted paths, examples/**/example_*.py) of the TileLang
mirror (TILELANG_MIRROR, default /work/.mirror/tile-ai+tilelang/repo) that lower at all.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from trace_size import ONE

MIRROR = os.environ.get("TILELANG_MIRROR", "/work/.mirror/tile-ai+tilelang/repo")

# TileLang's built-in tracer has no switch lower-trace leaves to it: TL_LOWER_TRACE starts
# lower-trace, so the child enables TileLang's own programmatically (as overhead.py does).
BUILTIN = r"""
import os
if os.environ.get("LT_BENCH_BUILTIN_DIR"):
    from tilelang.tools import lower_trace as builtin_tracer
    builtin_tracer.enable(mode="html", trace_dir=os.environ["LT_BENCH_BUILTIN_DIR"])
"""

CONFIGS = ("untraced", "lower-trace html", "built-in html")


def run_once(example: str, config: str, cores: str | None, timeout: float) -> dict[str, float] | None:
    """One child: the first kernel's times (ms), or None when it lowered no kernel."""
    work = tempfile.mkdtemp(prefix="lt-examples-")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "LT_BENCH_"))}
        env.update(TILELANG_DISABLE_CACHE="1", LT_BENCH_TIMES=os.path.join(work, "times.json"))
        if config == "lower-trace html":
            env.update(TL_LOWER_TRACE="html", TL_LOWER_TRACE_DIR=os.path.join(work, "trace"))
        elif config == "built-in html":
            env.update(TL_LOWER_TRACE_BUILTIN="1", LT_BENCH_BUILTIN_DIR=os.path.join(work, "trace"))
        command = [sys.executable, "-c", BUILTIN + ONE, example]
        if cores:
            command = ["taskset", "-c", cores, *command]
        try:
            subprocess.run(command, cwd=os.path.dirname(example), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        try:
            with open(env["LT_BENCH_TIMES"]) as times:
                return json.load(times)
        except (OSError, ValueError):
            return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(example: str, configs: tuple[str, ...], rounds: int, cores: str | None, timeout: float) -> dict[str, dict[str, float]] | None:
    """Per config, the median of each time over the rounds; None when the example lowers nothing."""
    runs: dict[str, list[dict[str, float]]] = {config: [] for config in configs}
    for round_no in range(rounds):
        for config in configs:
            times = run_once(example, config, cores, timeout)
            if times is None:
                if round_no == 0 and config == configs[0]:
                    return None  # lowers nothing untraced: not an example this benchmark can use
                continue
            runs[config].append(times)
    if any(not found for found in runs.values()):
        return None
    return {config: {key: statistics.median(t[key] for t in found) for key in found[0]} for config, found in runs.items()}


def mirror_examples(folder: str) -> list[str]:
    archive = subprocess.run(["git", "-C", MIRROR, "archive", "HEAD", "examples"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    found = []
    for root, _, files in os.walk(os.path.join(folder, "examples")):
        found += [os.path.join(root, name) for name in files if name.startswith("example_") and name.endswith(".py")]
    return sorted(found)


def geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="*")
    parser.add_argument("--from-mirror", type=int, metavar="N", help="the first N examples of the TileLang mirror that lower")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cores", help="pin every child to these cores (taskset -c)")
    parser.add_argument("--builtin", action="store_true", help="add TileLang's built-in tracer (html)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds one child may take (slower examples are skipped)")
    args = parser.parse_args()
    if not args.examples and not args.from_mirror:
        print(__doc__)
        return 2
    configs = CONFIGS if args.builtin else CONFIGS[:2]
    temp = tempfile.mkdtemp(prefix="lt-examples-src-") if args.from_mirror else None
    try:
        examples = mirror_examples(temp) if temp else [os.path.abspath(e) for e in args.examples]
        missing = [e for e in examples if not os.path.isfile(e)]
        if missing:
            print(f"no such example: {missing[0]} (give paths to TileLang example scripts, or --from-mirror N)", file=sys.stderr)
            return 2
        wanted = args.from_mirror or len(examples)
        start_load = os.getloadavg()
        print(f"median of {args.rounds} rounds per configuration, configurations taking turns; CUDA sm_90a source on the CPU"
              + (f"; children pinned to cores {args.cores}" if args.cores else ""))
        print(f"load average at start: {' '.join(f'{x:.2f}' for x in start_load)}\n")
        header = f"{'example':<48} {'config':<17} {'lower ms':>9} {'x':>6} {'idle ms':>9} {'x':>6} {'idle CPU ms':>11} {'x':>6}"
        print(header)
        ratios: dict[str, dict[str, list[float]]] = {config: {"lower": [], "idle": [], "cpu": []} for config in configs[1:]}
        rows: list[tuple[float, str]] = []
        used = skipped = 0
        for example in examples:
            if used >= wanted:
                break
            name = os.path.relpath(example, temp) if temp else os.path.relpath(example)
            found = measure(example, configs, args.rounds, args.cores, args.timeout)
            if found is None:
                skipped += 1
                print(f"{name[-48:]:<48} (no kernel lowered within --timeout: skipped)", flush=True)
                continue
            used += 1
            base = found[configs[0]]
            for config in configs:
                times = found[config]
                lower, idle, cpu = times["lower_ms"] / base["lower_ms"], times["idle_ms"] / base["idle_ms"], times["idle_cpu_ms"] / base["idle_cpu_ms"]
                line = (f"{name[-48:]:<48} {config:<17} {times['lower_ms']:>9.1f} {lower:>5.2f}x {times['idle_ms']:>9.1f} {idle:>5.2f}x"
                        f" {times['idle_cpu_ms']:>11.1f} {cpu:>5.2f}x")
                print(line, flush=True)
                if config != configs[0]:
                    ratios[config]["lower"].append(lower)
                    ratios[config]["idle"].append(idle)
                    ratios[config]["cpu"].append(cpu)
                    rows.append((idle, line))
        end_load = os.getloadavg()
        load = " ".join(f"{x:.2f}" for x in end_load)
        print(f"\n{used} examples measured, {skipped} skipped (no kernel lowered within --timeout); load average at end: {load}")
        for config, found in ratios.items():
            if found["lower"]:
                print(f"{config:<17} x untraced over examples:"
                      + "".join(f"  {kind} median {statistics.median(v):.3f} geomean {geomean(v):.3f} max {max(v):.2f}" for kind, v in found.items()))
        if rows:
            print("\nlargest idle ratios:")
            for _, line in sorted(rows, reverse=True)[:10]:
                print(line)
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
