"""lower-trace regress on a corpus of small compiles: its wall time against running the corpus twice untraced.

    python benchmarks/regress.py [--rounds 2] [--corpus pytest|script|both] [--count 48]
    python benchmarks/regress.py --corpus pytest --count 96 --rounds 3
    python benchmarks/regress.py --corpus script --count 16 --rounds 1   # a quick look (about 2 minutes)
    python benchmarks/regress.py --corpus script --base .venvs/tilelang-0.1.13/bin/python   # two releases

The corpus (written to a temp folder) lowers --count small kernels from testing/kernels.py to
CUDA sm_90a source on the CPU: a few gemm tiles, elementwise_add, row_sum, and scaled_add
variants for the rest. As pytest it is one parametrized test per compile, run with
``pytest -n 2`` (pytest-xdist); as a script, one process lowering them all in turn.

Per corpus, taking turns for --rounds rounds (medians printed):
  (a) untraced x2: the corpus run twice, no TL_LOWER_TRACE variables, TILELANG_DISABLE_CACHE=1;
      and base+head: once as is, once with the head's config in a PassContext (the compiles regress asks for);
      with --base PYTHON (another TileLang: every kernel differs, the comparison's heaviest case) both
      are the corpus run once by that interpreter and once by this one, and regress gets --base, not the config;
  (b) regress: ``lower-trace regress --dir TMP --head-config tl.disable_warp_specialized=true -- CORPUS``
      (each side traced: the trace only), with its sides' own corpus times (regress.json's
      base/head "seconds") and the rest (probing the sides, loading, comparing, writing pages);
  (c) compare: ``lower-trace regress --compare BASE HEAD`` on the sides (b) left, per kernel (wall
      and CPU), without --dir (terminal summary only) and with --dir (regress.json, summary and
      compare pages); also less the command's own start (``lower-trace regress --help``, timed alike).
The targets (issue 37): (b)/(a) <= 1.3 on 2 cores, and the comparison with its pages <= 20 ms per
kernel. Load averages are printed at start and end: the host is shared, so CPU seconds are printed
beside the wall's.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTING = os.path.abspath(os.path.join(HERE, "..", "testing"))
BIN = os.path.dirname(sys.executable)
HEAD_CONFIG = "tl.disable_warp_specialized=true"
# The command's own start: the interpreter and the modules --compare --dir imports, before any kernel.
START_MODULES = ("cli.main", "analysis.regress", "regress.result", "render.regress_view", "render.report.compare_page", "render.report.regress_page")
START = "; ".join(f"import lower_trace.{name}" for name in START_MODULES)
RATIO_TARGET = 1.3  # regress's wall against running the corpus twice untraced
COMPARE_MS_TARGET = 20.0  # --compare with its pages, per kernel

CASES = r'''
"""The corpus: (id, builder in testing/kernels.py, keyword arguments)."""
import sys

sys.path.insert(0, {testing!r})
import kernels

GEMM_TILES = [(128, 128, 32), (64, 64, 32), (128, 64, 32), (64, 128, 64)]


def cases(count):
    out = [(f"gemm-{{m}}x{{n}}x{{k}}", "gemm", dict(block_M=m, block_N=n, block_K=k)) for m, n, k in GEMM_TILES]
    out += [("elementwise-32", "elementwise_add", dict()), ("elementwise-64", "elementwise_add", dict(block_M=64, block_N=64))]
    out += [("row_sum-64", "row_sum", dict()), ("row_sum-32", "row_sum", dict(block_M=32))]
    out += [(f"scaled_add-{{i}}", "scaled_add", v) for i, v in enumerate(kernels.sweep_variants(max(count - len(out), 0)))]
    return out[:count]


def lower(builder, kwargs):
    import json, os

    import tilelang
    from tilelang import tvm

    # BENCH_PASS_CONFIGS: the head side's configs, untraced (the benchmark's fair baseline)
    with tvm.transform.PassContext(config=json.loads(os.environ.get("BENCH_PASS_CONFIGS", "{{}}"))):
        with tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}}) as target:
            return tilelang.lower(getattr(kernels, builder)(**kwargs), target=target)
'''

TEST_FILE = """
import pytest

from corpus_cases import cases, lower


@pytest.mark.parametrize("builder,kwargs", [pytest.param(b, k, id=i) for i, b, k in cases({count})])
def test_compile(builder, kwargs):
    lower(builder, kwargs)
"""

SCRIPT_FILE = """
from corpus_cases import cases, lower

for _, builder, kwargs in cases({count}):
    lower(builder, kwargs)
"""


def write_corpus(folder: str, count: int) -> None:
    for name, text in (("corpus_cases.py", CASES), ("test_corpus.py", TEST_FILE), ("corpus_script.py", SCRIPT_FILE)):
        with open(os.path.join(folder, name), "w") as handle:
            handle.write(text.format(testing=TESTING, count=count))


def corpus_command(kind: str, python: str | None) -> list[str]:
    """The corpus as regress is given it (python: None) or as run untraced (by that interpreter)."""
    if kind == "pytest":
        runner = os.path.join(os.path.dirname(python), "pytest") if python else "pytest"
        return [runner, "test_corpus.py", "-n", "2", "-p", "no:cacheprovider", "-q"]
    return [python or "python", "corpus_script.py"]


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE") and k != "PYTEST_ADDOPTS"}
    env["TILELANG_DISABLE_CACHE"] = "1"
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    return env


def timed(argv: list[str], cwd: str, ok: tuple[int, ...] = (0,), extra: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (the command and every process it waited for)."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env={**clean_env(), **(extra or {})}, capture_output=True, text=True)
    after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter() - started
    if proc.returncode not in ok:
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def one_round(kind: str, folder: str, scratch: str, base: str | None = None) -> dict:
    lower_trace = os.path.join(BIN, "lower-trace")
    if base:  # two releases: each side's interpreter once
        untraced = [timed(corpus_command(kind, python), folder) for python in (base, sys.executable)]
        head_untraced = untraced[1]
        sides_given = ["--base", base]
    else:
        untraced = [timed(corpus_command(kind, sys.executable), folder) for _ in range(2)]
        key, _, value = HEAD_CONFIG.partition("=")
        head_untraced = timed(corpus_command(kind, sys.executable), folder, extra={"BENCH_PASS_CONFIGS": json.dumps({key: json.loads(value)})})
        sides_given = ["--head-config", HEAD_CONFIG]
    out = tempfile.mkdtemp(prefix=f"regress-{kind}-", dir=scratch)
    os.rmdir(out)  # regress wants a new (or empty) folder
    regress_s, regress_cpu = timed([lower_trace, "regress", "--dir", out, *sides_given, "--", *corpus_command(kind, None)], folder, ok=(0, 1))
    with open(os.path.join(out, "regress.json")) as handle:
        found = json.load(handle)
    sides = [os.path.join(out, "base"), os.path.join(out, "head")]
    compare_s, compare_cpu = timed([lower_trace, "regress", "--compare", *sides], folder, ok=(0, 1))
    pages_s, pages_cpu = timed([lower_trace, "regress", "--compare", *sides, "--dir", os.path.join(out, "again")], folder, ok=(0, 1))
    start_s, start_cpu = timed([sys.executable, "-c", START], folder)
    shutil.rmtree(out, ignore_errors=True)
    return {
        "untraced": untraced[0][0] + untraced[1][0],
        "untraced_cpu": untraced[0][1] + untraced[1][1],
        "fair": untraced[0][0] + head_untraced[0],
        "fair_cpu": untraced[0][1] + head_untraced[1],
        "regress": regress_s,
        "regress_cpu": regress_cpu,
        "base": found["base"]["seconds"],
        "head": found["head"]["seconds"],
        "kernels": len(found["kernels"]),
        "verdicts": collections.Counter(k["verdict"] for k in found["kernels"]),
        "compare": compare_s,
        "compare_cpu": compare_cpu,
        "pages": pages_s,
        "pages_cpu": pages_cpu,
        "start": start_s,
        "start_cpu": start_cpu,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds of taking turns; the median is printed")
    parser.add_argument("--corpus", default="both", choices=("pytest", "script", "both"))
    parser.add_argument("--count", type=int, default=48, help="compiles in the corpus")
    parser.add_argument("--base", metavar="PYTHON", help="the base side's interpreter (another TileLang) instead of the head's config")
    args = parser.parse_args()
    if args.base:
        args.base = os.path.abspath(args.base)  # the corpus runs in its own folder

    kinds = ["pytest", "script"] if args.corpus == "both" else [args.corpus]
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    sides = f"base side: --base {args.base}" if args.base else f"head side: --head-config {HEAD_CONFIG}"
    print(f"corpus: {args.count} compiles (CUDA sm_90a source on the CPU); {sides}; {args.rounds} rounds, medians\n")
    scratch = tempfile.mkdtemp(prefix="lt-regress-bench-")
    try:
        folder = os.path.join(scratch, "corpus")
        os.makedirs(folder)
        write_corpus(folder, args.count)
        results: dict[str, list[dict]] = {kind: [] for kind in kinds}
        for _ in range(args.rounds):
            for kind in kinds:
                results[kind].append(one_round(kind, folder, scratch, args.base))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    keys = ("untraced", "untraced_cpu", "fair", "fair_cpu", "regress", "regress_cpu", "base", "head", "compare", "pages")
    keys += ("compare_cpu", "pages_cpu", "start", "start_cpu")
    print(
        f"{'corpus':<8} {'kernels':>7} {'untraced x2 s':>13} {'regress s':>9} {'ratio':>6} {'base+head s':>11} {'ratio':>6}"
        f" {'base s':>7} {'head s':>7} {'rest s':>7} {'compare s':>9} {'ms/kernel':>9} {'+pages s':>8} {'ms/kernel':>9}"
    )
    medians = {}
    for kind in kinds:
        m = medians[kind] = {key: statistics.median(r[key] for r in results[kind]) for key in keys}
        kernels = results[kind][0]["kernels"]
        rest = m["regress"] - m["base"] - m["head"]
        print(
            f"{kind:<8} {kernels:>7} {m['untraced']:>13.1f} {m['regress']:>9.1f} {m['regress'] / m['untraced']:>5.2f}x"
            f" {m['fair']:>11.1f} {m['regress'] / m['fair']:>5.2f}x {m['base']:>7.1f} {m['head']:>7.1f} {rest:>7.1f}"
            f" {m['compare']:>9.2f} {1000 * m['compare'] / kernels:>9.1f} {m['pages']:>8.2f} {1000 * m['pages'] / kernels:>9.1f}"
        )
    print("\nCPU seconds (all processes):")
    for kind in kinds:
        m = medians[kind]
        print(
            f"{kind:<8} untraced x2 {m['untraced_cpu']:.1f}, base+head untraced {m['fair_cpu']:.1f}, regress {m['regress_cpu']:.1f}"
            f" ({m['regress_cpu'] / m['untraced_cpu']:.2f}x, {m['regress_cpu'] / m['fair_cpu']:.2f}x)"
        )
    print(f"\nthe comparison (--compare), ms per kernel, wall / CPU; target <= {COMPARE_MS_TARGET:.0f} ms with its pages:")
    for kind in kinds:
        m, kernels = medians[kind], results[kind][0]["kernels"]

        def per(key: str, m: dict = m, kernels: int = kernels) -> str:
            return f"{1000 * m[key] / kernels:.1f} / {1000 * m[key + '_cpu'] / kernels:.1f}"

        def net(key: str, m: dict = m, kernels: int = kernels) -> str:
            return f"{1000 * (m[key] - m['start']) / kernels:.1f} / {1000 * (m[key + '_cpu'] - m['start_cpu']) / kernels:.1f}"

        met = "met" if 1000 * m["pages"] / kernels <= COMPARE_MS_TARGET else "missed"
        print(
            f"{kind:<8} {kernels} kernels: terminal only {per('compare')}; with pages {per('pages')} ({met});"
            f" less the command's start ({m['start']:.2f} s / {m['start_cpu']:.2f} s CPU): {net('compare')}, with pages {net('pages')}"
        )
    print(f"\nwhole regress against the corpus run twice untraced (wall), target <= {RATIO_TARGET}x:")
    for kind in kinds:
        m = medians[kind]
        ratio = m["regress"] / m["untraced"]
        print(f"{kind:<8} {ratio:.2f}x ({'met' if ratio <= RATIO_TARGET else 'missed'}); CPU {m['regress_cpu'] / m['untraced_cpu']:.2f}x")
    for kind in kinds:
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(results[kind][0]["verdicts"].items()))
        print(f"{kind} verdicts: {verdicts}")
    fair = "by each side's interpreter" if args.base else "once as is and once with the head's config (a PassContext)"
    print(f"\nbase+head: the corpus untraced {fair}: the same compiles regress runs;")
    print("rest: regress's wall less its two sides' corpus runs (probing the interpreters, loading, comparing, pages);")
    print("compare: --compare without --dir (terminal summary); +pages: with --dir (regress.json, summary.html, compare pages).")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
