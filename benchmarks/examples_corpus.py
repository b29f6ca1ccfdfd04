"""TileLang's own examples as one corpus: every kernel each example compiles is lowered to CUDA sm_90a
on the CPU (no GPU, no nvcc, no launch), each example in a fresh interpreter, stopped where it would
need the GPU (benchmarks/corpus_harness.py does the lowering).

    python benchmarks/examples_corpus.py --extract DIR             # TileLang's examples/ from the mirror into DIR
    python benchmarks/examples_corpus.py --run DIR_OR_EXAMPLE... [--out OUT] [--timeout 60] [--jobs 1] [--python PY]
    lower-trace regress --head-config tl.disable_warp_specialized=true -- python benchmarks/examples_corpus.py --run DIR
    pytest benchmarks/test_examples_corpus.py --examples DIR -n 2   # the same, one test per example

--run takes folders (every examples/**/example_*.py under them) and example files. Each child is
started as a script named after its example (gemm__example_gemm.py), so under lower-trace (which
the children inherit through the environment) each example is traced as a run of that name.
OUT (default: a temporary folder, removed) gets, per example, RESULT.json (status, reason, seconds,
kernels: name, sha256 of the CUDA source, lowering ms) and the sources; OUT/corpus.json all of them.
Statuses: lowered, lower-failed (tilelang.lower raised), skipped (stopped before any kernel: the
reason says by what), no-kernel, timeout. Prints one line per example and a summary; exit 0 when
some example lowered, 1 when none did, 2 on bad input. The mirror is TILELANG_MIRROR, default
/work/.mirror/tile-ai+tilelang/repo.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from corpus_harness import Result, load  # noqa: E402 -- beside this file

MIRROR = os.environ.get("TILELANG_MIRROR", "/work/.mirror/tile-ai+tilelang/repo")
SHIM = "import sys\nsys.path.insert(0, {here!r})\nfrom corpus_harness import main\nraise SystemExit(main())\n"


def extract(folder: str, revision: str = "HEAD") -> str:
    """TileLang's examples/ at `revision` into folder/examples (whole folders: examples import their siblings)."""
    archive = subprocess.run(["git", "-C", MIRROR, "archive", revision, "examples"], capture_output=True, check=True).stdout
    os.makedirs(folder, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    return os.path.join(folder, "examples")


def find_examples(paths: list[str]) -> list[str]:
    found = []
    for path in paths:
        if os.path.isfile(path):
            found.append(os.path.abspath(path))
            continue
        for root, dirs, files in os.walk(path):
            dirs.sort()
            found += [os.path.abspath(os.path.join(root, name)) for name in sorted(files) if name.startswith("example_") and name.endswith(".py")]
    return found


def example_key(example: str) -> str:
    """gemm/example_gemm.py -> gemm__example_gemm: the part below the last 'examples' folder, flattened."""
    parts = os.path.abspath(example).split(os.sep)
    below = parts[len(parts) - 1 - parts[::-1].index("examples") + 1:] if "examples" in parts[:-1] else parts[-2:]
    return "__".join(below)[: -len(".py")]


def run_child(example: str, out: str, python: str, timeout: float, env: dict[str, str] | None = None) -> Result:
    """One example in a fresh interpreter; its result (timeout: what it had lowered by then)."""
    key = example_key(example)
    folder = os.path.join(out, key)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    result_file = os.path.join(folder, "result.json")
    child_env = dict(os.environ if env is None else env)
    child_env["TILELANG_DISABLE_CACHE"] = "1"
    with tempfile.TemporaryDirectory(prefix="lt-corpus-") as shim_dir:
        shim = os.path.join(shim_dir, key + ".py")
        with open(shim, "w") as code:
            code.write(SHIM.format(here=HERE))
        command = [python, shim, example, result_file, os.path.join(folder, "sources")]
        started = time.perf_counter()
        with open(os.path.join(folder, "log.txt"), "w") as log:
            try:
                proc = subprocess.run(command, cwd=os.path.dirname(example), env=child_env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
                code_ = proc.returncode
            except subprocess.TimeoutExpired:
                code_ = None
        seconds = time.perf_counter() - started
    try:
        result = load(result_file)
    except (OSError, ValueError, TypeError):
        result = Result(example, status="skipped", reason="the child wrote no result")
    if code_ is None and result.status == "running":
        result.status, result.reason = "timeout", f"no end within {timeout:g} s ({len(result.kernels)} kernels lowered by then)"
    elif code_ is None:  # the example was done: only the interpreter's exit came late
        result.reason += f" (exit killed at the {timeout:g} s timeout)"
    elif code_ != 0 and result.status == "running":
        result.status, result.reason = "skipped", f"the child died (exit {code_}): " + _log_tail(folder)
    if result.reason.startswith("SystemExit"):  # the example quit by itself: its last words say why
        result.reason += " -- " + _log_tail(folder)
    result.seconds = seconds
    return result


def _log_tail(folder: str) -> str:
    with open(os.path.join(folder, "log.txt"), errors="replace") as log:
        lines = [line.strip() for line in log if line.strip()]
    return (lines[-1] if lines else "no output")[:200]


def run_corpus(examples: list[str], out: str, python: str, timeout: float, jobs: int, report=print) -> list[Result]:
    def one(example: str) -> Result:
        result = run_child(example, out, python, timeout)
        names = ", ".join(k.name for k in result.kernels[:4]) + (", ..." if len(result.kernels) > 4 else "")
        report(f"{result.status:<12} {example_key(example):<60} {len(result.kernels):>3} kernels {result.seconds:>6.1f} s"
               + (f"  [{names}]" if names else "") + (f"  -- {result.reason}" if result.status != "lowered" else ""))
        return result

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return list(pool.map(one, examples))


def summary(results: list[Result], wall: float) -> str:
    counts: dict[str, int] = {}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    kernels = sum(1 for r in results if r.status == "lowered" for k in r.kernels if k.sha256)
    by_status = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"{len(results)} examples: {by_status}; {kernels} kernels lowered; {wall:.1f} s wall"


def interpreter(name: str) -> str:
    """The interpreter's absolute path (the children run in the examples' folders), or "" after
    one line on stderr when there is none."""
    found = shutil.which(name)
    if found is None:
        print(f"--python {name}: no such interpreter", file=sys.stderr)
        return ""
    return os.path.abspath(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--run", nargs="+", metavar="PATH", help="example folders or files")
    parser.add_argument("--extract", metavar="DIR", help="write TileLang's examples/ from the mirror into DIR and stop")
    parser.add_argument("--revision", default="HEAD", help="the mirror's revision for --extract")
    parser.add_argument("--out", help="folder for results and sources (default: temporary, removed)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds one example may take (default 60)")
    parser.add_argument("--jobs", type=int, default=1, help="examples run at once (default 1)")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the children (default: this one)")
    args = parser.parse_args(argv)
    args.python = interpreter(args.python)
    if not args.python:
        return 2
    if args.extract:
        try:
            print(extract(args.extract, args.revision))
        except (subprocess.CalledProcessError, OSError) as exc:
            print(f"cannot extract the examples from {MIRROR} at {args.revision}: {exc}", file=sys.stderr)
            return 2
        return 0
    if not args.run:
        print(__doc__)
        return 2
    missing = [p for p in args.run if not os.path.exists(p)]
    if missing:
        print(f"no such example or folder: {missing[0]}", file=sys.stderr)
        return 2
    examples = find_examples(args.run)
    if not examples:
        print(f"no examples/**/example_*.py under {' '.join(args.run)}", file=sys.stderr)
        return 2
    if args.timeout <= 0 or args.jobs < 1:
        print("--timeout must be > 0 and --jobs >= 1", file=sys.stderr)
        return 2
    out = os.path.abspath(args.out) if args.out else tempfile.mkdtemp(prefix="lt-corpus-out-")
    try:
        started = time.perf_counter()
        results = run_corpus(examples, out, args.python, args.timeout, args.jobs, report=lambda line: print(line, flush=True))
        wall = time.perf_counter() - started
        with open(os.path.join(out, "corpus.json"), "w") as data:
            json.dump({"python": args.python, "wall_s": wall, "examples": [asdict(r) for r in results]}, data, indent=1)
        print(summary(results, wall))
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)
    return 0 if any(r.status == "lowered" for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
