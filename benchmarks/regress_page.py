"""lower-trace regress's summary page at scale: a 300-kernel summary.html opened in headless Chromium.

    python benchmarks/regress_page.py [--kernels 300] [--rounds 5] [--from OUT] [--count 8]

The rows come from a real regress run: --from names a regress output folder (regress.json and
its compare/ pages), else one is made here (``lower-trace regress --head-config
tl.disable_warp_specialized=true`` over a --count-compile script corpus, benchmarks/regress.py's).
Its kernels are repeated, each copy another occurrence, to --kernels rows, and regress.json and
summary.html are written as regress writes them (regress/result.py's write_result). Chromium
(playwright, /usr/bin/chromium) then opens the page --rounds times, each in a new tab, and times:

  open: from navigating to the page until the table is built (body[data-ready="1"]) and a frame
        has been painted after it;
  sort: a click on the kernel column's header until the next frame (every row moves);
  main thread: the renderer's task time for the open (CDP Performance.getMetrics' TaskDuration),
        the CPU the page cost, less sensitive to the host's load than the wall.

Medians are printed against the target (open < 2 s), with the load average: the host is shared.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import regress as corpus  # noqa: E402  benchmarks/regress.py: the corpus it writes

from lower_trace.regress.result import RESULT, write_result  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
TARGET_S = 2.0
# After the table is built: one frame painted (the open's end), the same after a sort's click.
NEXT_FRAME = "() => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)))"
SORT = """async () => {
  const started = performance.now();
  document.querySelector('#kernels-table th[data-key="kernel"]').click();
  await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  return performance.now() - started;
}"""


def regress_output(count: int, scratch: str) -> str:
    """A real regress output folder: a --count-compile script corpus, warp specialisation off on head."""
    folder = os.path.join(scratch, "corpus")
    os.makedirs(folder)
    corpus.write_corpus(folder, count)
    out = os.path.join(scratch, "out")
    argv = [os.path.join(corpus.BIN, "lower-trace"), "regress", "--dir", out, "--head-config", corpus.HEAD_CONFIG, "--", "python", "corpus_script.py"]
    proc = subprocess.run(argv, cwd=folder, env=corpus.clean_env(), capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return out


def repeated(found: dict, kernels: int) -> dict:
    """regress.json's content with its kernels repeated to `kernels` rows, each copy a later occurrence."""
    real = found["kernels"]
    if not real:
        raise SystemExit("regress_page.py: the regress run compared no kernel")
    rows = []
    for i in range(kernels):
        row = copy.deepcopy(real[i % len(real)])
        row["occurrence"] = row.get("occurrence", 1) + (i // len(real)) * 1000
        rows.append(row)
    rows.sort(key=lambda row: row["severity"])  # regress.json's order: most severe first
    return {**found, "kernels": rows}


def measure(page_path: str, rounds: int) -> list[dict[str, float]]:
    from playwright.sync_api import sync_playwright

    url = "file://" + page_path
    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for _ in range(rounds):
                page = browser.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
                cdp = page.context.new_cdp_session(page)
                cdp.send("Performance.enable")
                before = _task_seconds(cdp)
                started = time.perf_counter()
                page.goto(url)
                page.wait_for_selector('body[data-ready="1"]', timeout=60_000)
                page.evaluate(NEXT_FRAME)
                opened = time.perf_counter() - started
                task = _task_seconds(cdp) - before
                rows = page.evaluate("document.querySelectorAll('#rows tr').length")
                sort_ms = page.evaluate(SORT)
                if errors:
                    raise RuntimeError(f"the page failed: {errors[0]}")
                out.append({"open": opened, "task": task, "sort": sort_ms / 1000, "rows": rows})
                page.close()
        finally:
            browser.close()
    return out


def _task_seconds(cdp) -> float:
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return float(metrics.get("TaskDuration", 0.0))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kernels", type=int, default=300, help="rows of the summary page")
    parser.add_argument("--rounds", type=int, default=5, help="times the page is opened; medians are printed")
    parser.add_argument("--from", dest="source", metavar="OUT", help="a regress output folder to take the kernels from")
    parser.add_argument("--count", type=int, default=8, help="without --from: compiles in the corpus run here")
    args = parser.parse_args()

    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    scratch = tempfile.mkdtemp(prefix="lt-regress-page-")
    try:
        source = os.path.abspath(args.source) if args.source else regress_output(args.count, scratch)
        with open(os.path.join(source, RESULT)) as handle:
            real = json.load(handle)
        found = repeated(real, args.kernels)
        out = os.path.join(scratch, "page")
        if os.path.isdir(os.path.join(source, "compare")):  # the rows' links: the real comparison pages
            shutil.copytree(os.path.join(source, "compare"), os.path.join(out, "compare"))
            for row in found["kernels"]:
                if row.get("compare_page"):
                    row["compare_page"] = os.path.join(out, "compare", os.path.basename(row["compare_page"]))
        started = time.process_time()
        page = write_result(out, found)
        written = time.process_time() - started
        size = os.path.getsize(page)
        results = measure(page, args.rounds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    median = {key: statistics.median(r[key] for r in results) for key in ("open", "task", "sort")}
    print(
        f"summary.html: {args.kernels} kernels ({len(real['kernels'])} real ones repeated), "
        f"{size / 1e6:.2f} MB, written in {1000 * written:.0f} ms CPU (regress.json + summary.html)"
    )
    print(f"rows in the table: {results[0]['rows']}")
    print(
        f"open (load + first render): {median['open']:.2f} s wall (median of {len(results)}; target < {TARGET_S:.0f} s: "
        f"{'met' if median['open'] < TARGET_S else 'MISSED'}), main thread {median['task']:.2f} s"
    )
    print(f"sort (click on 'kernel', to the next frame): {1000 * median['sort']:.0f} ms")
    opens = ", ".join(f"{r['open']:.2f}" for r in results)
    print(f"each open: {opens} s")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
