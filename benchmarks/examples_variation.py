"""Which of TileLang's examples lower differently from one process to the next (TileLang's own variation).

    python benchmarks/examples_variation.py --corpus OUT1 [OUT2 ...] [--runs 2] [--more 4] [--save NOTES_DIR] [--passes]

OUT1 is an `examples_corpus.py --run ... --out OUT1` result (it counts as the first run, OUT2... as
the next ones, made by the same interpreter); every example that lowered in OUT1 is run again in fresh processes (TILELANG_DISABLE_CACHE=1) until there
are --runs runs (--jobs at a time), and --more runs on top for the ones that differed. Kernels are
matched by their order of compile; two runs differ when the bytes of the CUDA or of the final device
TIR (mod.script()) do: a difference in the TIR only (a reordered layout map) counts too. Printed per varying kernel: how
many distinct sources in how many runs. --save DIR: per varying example, DIR/<example>/ gets the
first two differing sources (CUDA and TIR) of each kernel and their unified diffs, and DIR/variation.json the counts.
--passes: for each varying example, pairs of processes write every pass's output (TVM's own
PassInstrument, in corpus_harness.py) until a pair differs in the final CUDA or TIR; the first pass whose
output differs is printed (and saved as first_pass.txt with that pass's diff).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from concurrent.futures import ThreadPoolExecutor

from corpus_harness import Result, load
from examples_corpus import example_key, interpreter, run_child

Variants = dict[str, list[str]]  # kernel "number name" -> "CUDA sha256:TIR sha256" of each run (in run order)


def read_source(out: str, result: Result, number: int, suffix: str = "") -> str:
    """The kernel's CUDA (suffix "") or its final device TIR (suffix ".tir.py"); "" when not written."""
    name = result.kernels[number].source
    path = os.path.join(out, example_key(result.example), "sources", name[:-3] + suffix if suffix else name)
    if not os.path.isfile(path):
        return ""
    with open(path) as src:
        return src.read()


def variants_of(results: list[Result]) -> Variants:
    found: Variants = {}
    for result in results:
        for number, kernel in enumerate(result.kernels):
            found.setdefault(f"{number:03d} {kernel.name}", []).append(f"{kernel.sha256}:{kernel.tir_sha256}")
    return found


def varies(results: list[Result]) -> bool:
    shapes = {tuple((k.name, k.sha256, k.tir_sha256) for k in r.kernels) for r in results}
    return len(shapes) > 1


def unified(a: str, b: str, a_name: str, b_name: str) -> str:
    return "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), a_name, b_name, n=2))


def save_pairs(folder: str, runs: list[tuple[str, Result]]) -> list[str]:
    """Per varying kernel, the first two distinct sources and their diff; returns the kernels' labels."""
    labels = []
    for label, shas in variants_of([r for _, r in runs]).items():
        if len(set(shas)) < 2 or len(shas) < len(runs):
            continue
        number = int(label.split()[0])
        first = next(i for i, sha in enumerate(shas) if sha != shas[0])
        (out_a, ra), (out_b, rb) = runs[0], runs[first]
        stem = label.replace(" ", "_")
        os.makedirs(folder, exist_ok=True)
        for suffix, diff in (("", ".diff"), (".tir.py", ".tir.diff")):
            a, b = read_source(out_a, ra, number, suffix), read_source(out_b, rb, number, suffix)
            for name, text in ((f"{stem}.run1{suffix or '.cu'}", a), (f"{stem}.run{first + 1}{suffix or '.cu'}", b),
                               (f"{stem}{diff}", unified(a, b, "run1", f"run{first + 1}"))):
                with open(os.path.join(folder, name), "w") as out:
                    out.write(text)
        labels.append(label)
    return labels


def first_pass_difference(example: str, python: str, timeout: float, tries: int, folder: str | None) -> str:
    """Pairs of processes with every pass written, until one pair's CUDA differs: the first pass that differs."""
    work = tempfile.mkdtemp(prefix="lt-variation-passes-")
    try:
        for attempt in range(tries):
            def side(name: str, attempt: int = attempt) -> tuple[str, Result]:
                passes = os.path.join(work, f"{attempt}{name}", "passes")
                env = {**os.environ, "LT_CORPUS_PASSES": passes}
                return passes, run_child(example, os.path.join(work, f"{attempt}{name}"), python, timeout, env)

            with ThreadPoolExecutor(2) as pool:  # the pair at once: two processes, as the brief allows
                runs = list(pool.map(side, ("a", "b")))
            if not varies([r for _, r in runs]):
                continue
            (pa, _), (pb, _) = runs
            for kernel in sorted(os.listdir(pa)):
                names_a, names_b = sorted(os.listdir(os.path.join(pa, kernel))), sorted(os.listdir(os.path.join(pb, kernel)))
                for name_a, name_b in zip(names_a, names_b, strict=False):
                    with open(os.path.join(pa, kernel, name_a)) as fa, open(os.path.join(pb, kernel, name_b)) as fb:
                        text_a, text_b = fa.read(), fb.read()
                    if name_a != name_b or text_a != text_b:
                        where = f"kernel {kernel}: first differs after pass {name_a[:-3]} (try {attempt + 1})"
                        if folder:
                            os.makedirs(folder, exist_ok=True)
                            with open(os.path.join(folder, "first_pass.txt"), "w") as out:
                                out.write(where + "\n\n" + unified(text_a, text_b, f"a/{name_a}", f"b/{name_b}"))
                        return where
            return "the final CUDA/TIR differed but no pass output did"
        return f"no pair of the {tries} tried differed"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def vary_example(base: Result, args: argparse.Namespace, python: str) -> dict:
    """Runs of one example (the corpus's first, then fresh ones), what varied, saved and printed."""
    key = example_key(base.example)
    made = [corpus for corpus in args.corpus if os.path.isfile(os.path.join(corpus, key, "result.json"))]
    runs = [(corpus, load(os.path.join(corpus, key, "result.json"))) for corpus in made]
    scratch = tempfile.mkdtemp(prefix="lt-variation-")
    try:
        for wanted in (args.runs, args.runs + args.more):
            outs = [os.path.join(scratch, str(n + 1)) for n in range(len(runs), wanted)]
            with ThreadPoolExecutor(max(1, args.jobs)) as pool:
                runs += [(out, result) for out, result in zip(outs, pool.map(
                    lambda out: run_child(base.example, out, python, args.timeout), outs), strict=True)]
            if not varies([r for _, r in runs]):
                break
        shas = variants_of([r for _, r in runs])
        varying = {label: s for label, s in shas.items() if len(set(s)) > 1 or len(s) < len(runs)}
        line = f"{key:<60} {len(runs)} runs, {len(shas)} kernels"
        entry: dict = {"runs": len(runs), "kernels": len(shas), "varying": {}}
        for label, s in varying.items():
            counts = [s.count(sha) for sha in dict.fromkeys(s)]
            where = "CUDA" if len({sha.split(":")[0] for sha in s}) > 1 else "TIR only"
            entry["varying"][label] = {"distinct": len(counts), "runs_per_source": counts, "present_in": len(s), "differs_in": where}
            line += f"\n    varies ({where}): {label}: {len(counts)} distinct, runs per variant {counts} (in {len(s)} of {len(runs)} runs)"
        if varying and args.save:
            save_pairs(os.path.join(args.save, key), runs)
        if varying and args.passes:
            entry["first_pass"] = first_pass_difference(base.example, python, args.timeout, 4, os.path.join(args.save, key) if args.save else None)
            line += f"\n    {entry['first_pass']}"
        print(line, flush=True)
        return entry
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", required=True, nargs="+", help="examples_corpus.py --out folders (runs already made)")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--more", type=int, default=4, help="runs added for the examples that varied")
    parser.add_argument("--save", help="folder for the differing sources, diffs and variation.json")
    parser.add_argument("--passes", action="store_true", help="find the first pass whose output differs")
    parser.add_argument("--only", nargs="*", default=[], help="only these examples (keys, e.g. gemm__example_gemm)")
    parser.add_argument("--skip", nargs="*", default=[], help="not these examples")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that made the first run")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--jobs", type=int, default=2, help="fresh processes at once (default 2)")
    args = parser.parse_args(argv)
    args.python = interpreter(args.python)
    if not args.python:
        return 2
    if not os.path.isdir(args.corpus[0]):
        print(f"{args.corpus[0]}: no such folder (give examples_corpus.py --out folders)", file=sys.stderr)
        return 2
    first = []
    for key in sorted(os.listdir(args.corpus[0])):  # the examples that lowered in the first run (finished ones only)
        path = os.path.join(args.corpus[0], key, "result.json")
        if (not args.only or key in args.only) and os.path.isfile(path) and key not in args.skip:
            result = load(path)
            if result.status == "lowered":
                first.append(result)
    python = args.python
    report = {example_key(base.example): vary_example(base, args, python) for base in first}
    vary = [k for k, e in report.items() if e["varying"]]
    print(f"\n{len(report)} examples, {sum(e['kernels'] for e in report.values())} kernels; {len(vary)} vary: {' '.join(vary)}")
    if args.save:  # added to what earlier calls found
        os.makedirs(args.save, exist_ok=True)
        path = os.path.join(args.save, "variation.json")
        if os.path.isfile(path):
            with open(path) as data:
                report = {**json.load(data), **report}
        with open(path, "w") as data:
            json.dump(report, data, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
