"""Scale of the HTML report: traced runs, and sweeps of 300 and 1,000 kernels.

    python benchmarks/report_scale.py [--counts 1,20] [--sweep 300,1000] [--builtin]

Traced runs (--counts): that many GEMM variants lowered in one process, untraced and
traced (html): lowering time, bytes on disk, report size and the time the report
takes to open in headless Chromium (navigation until the page has built itself).
With --builtin, TileLang's own tracer is timed too (slow: it rewrites its report
after every pass).

Sweeps (--sweep): a few real GEMM variants are traced once; the report of N kernels
is then written from them through ReportWriter as a traced run writes it, each
kernel with texts of its own (testing/report_fixtures.sweep_report). Measured: the
time of all add_kernel calls and per kernel (the writer's own time, without making
the variants), of the final close() and its share of the writing, the file size,
the open time (best of 3), opening kernel N-50 and a regex search over every
snapshot ("searching i/N kernels..." until done).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time

# TileLang's built-in tracer is one of the rows: its module must stay TileLang's own (lower-trace
# drives it otherwise, see lower_trace/seed_api.py); set before anything imports it.
os.environ["TL_LOWER_TRACE_BUILTIN"] = "1"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))

CHROMIUM = "/usr/bin/chromium"


def variants(count: int):
    """count distinct GEMMs: shapes and tile sizes differ, so their IR differs."""
    import kernels

    tiles = [(128, 128, 32), (64, 64, 32), (128, 64, 32), (64, 128, 64), (128, 128, 64)]
    sizes = [256, 512, 768, 1024, 1536, 2048, 3072, 4096]
    out = []
    for i in range(count):
        block_m, block_n, block_k = tiles[i % len(tiles)]
        m = sizes[(i // len(tiles)) % len(sizes)]
        n = sizes[(i // (len(tiles) * len(sizes)) + i) % len(sizes)]
        out.append(lambda m=m, n=n, bm=block_m, bn=block_n, bk=block_k: kernels.gemm(m, n, 1024, bm, bn, bk))
    return out


def lower_all(builds, target) -> float:
    import tilelang

    started = time.perf_counter()
    for build in builds:
        with target:
            tilelang.lower(build(), target=target)
    return time.perf_counter() - started


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files)


def new_page(browser, errors):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return page


def wait_for(page, predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not page.evaluate(predicate):
        if time.monotonic() > deadline:
            raise TimeoutError(predicate)
        time.sleep(0.01)


def open_time(report: str, browser) -> float:
    errors: list[str] = []
    page = new_page(browser, errors)
    started = time.perf_counter()
    page.goto("file://" + report)
    page.wait_for_selector("body[data-ready='1']", timeout=60000)
    elapsed = time.perf_counter() - started
    page.close()
    if errors:
        raise RuntimeError(f"report errors: {errors}")
    return elapsed


def interact(report: str, browser, kernel_id: str) -> tuple[float, float]:
    """Seconds to open one kernel from the index, and to search every snapshot."""
    errors: list[str] = []
    page = new_page(browser, errors)
    page.goto("file://" + report)
    page.wait_for_selector("body[data-ready='1']", timeout=60000)
    started = time.perf_counter()
    page.click(f'#kernels .kernel-row[data-kernel="{kernel_id}"]')
    wait_for(page, f"() => !document.body.dataset.loading && location.hash.startsWith('#{kernel_id}/')")
    opened = time.perf_counter() - started
    started = time.perf_counter()
    page.fill("#search", r"T\.launch_thread")
    page.keyboard.press("Enter")
    wait_for(page, "() => document.getElementById('search-status').dataset.done === '1'")
    searched = time.perf_counter() - started
    page.close()
    if errors:
        raise RuntimeError(f"report errors: {errors}")
    return opened, searched


def traced_runs(counts, target, browser, builtin: bool) -> list[dict]:
    import lower_trace

    rows = []
    for count in counts:
        builds = variants(count)
        untraced = lower_all(builds, target)
        trace_dir = tempfile.mkdtemp(prefix="lt-scale-")
        sink = open(os.devnull, "w")
        with contextlib.redirect_stderr(sink):
            run = lower_trace.enable(mode="html", trace_dir=trace_dir)
            started = time.perf_counter()
            lower_all(builds, target)
            lowered = time.perf_counter() - started
            closing = time.perf_counter()
            lower_trace.disable()  # drains the worker and finishes the report
            closed = time.perf_counter()
        sink.close()
        report = run.report_path
        row = {
            "kernels": count,
            "untraced s": untraced,
            "traced s": lowered,
            "x (lower)": lowered / untraced,
            "x (+final report)": (closed - started) / untraced,
            "close s": closed - closing,
            "MB on disk": dir_bytes(trace_dir) / 2**20,
            "KB/kernel": dir_bytes(trace_dir) / 1024 / count,
            "report MB": os.path.getsize(report) / 2**20,
            "opens in s": min(open_time(report, browser) for _ in range(3)),
        }
        if builtin:
            from tilelang.tools import lower_trace as builtin_tracer

            builtin_dir = tempfile.mkdtemp(prefix="lt-scale-builtin-")
            with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                builtin_tracer.enable(mode="html", trace_dir=builtin_dir)
                row["built-in x"] = lower_all(builds, target) / untraced
                builtin_tracer.disable()
            row["built-in MB"] = dir_bytes(builtin_dir) / 2**20
            shutil.rmtree(builtin_dir, ignore_errors=True)
        shutil.rmtree(trace_dir, ignore_errors=True)
        rows.append(row)
        print_row(row)
    return rows


def sweeps(counts, target, browser) -> list[dict]:
    import lower_trace
    from lower_trace.render.report.writer import ReportWriter
    from report_fixtures import sweep_report

    base_dir = tempfile.mkdtemp(prefix="lt-sweep-base-")
    with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink), lower_trace.trace(mode="html", trace_dir=base_dir) as run:
        lower_all(variants(5), target)
    trace = lower_trace.load_trace(run.run_dir)
    rows = []
    for count in counts:
        out = tempfile.mkdtemp(prefix="lt-sweep-")
        path = os.path.join(out, "report.html")
        spent = [0.0]
        add_kernel = ReportWriter.add_kernel

        def timed(self, kernel, text_of, add_kernel=add_kernel, spent=spent):  # the writer's own time, not the fixture's making of variants
            started = time.perf_counter()
            add_kernel(self, kernel, text_of)
            spent[0] += time.perf_counter() - started

        ReportWriter.add_kernel = timed
        try:
            started = time.perf_counter()
            writer = sweep_report(trace, path, count, close=False)
            built = time.perf_counter() - started
        finally:
            ReportWriter.add_kernel = add_kernel
        written = spent[0]
        started = time.perf_counter()
        writer.close()
        close_s = time.perf_counter() - started
        opened, searched = interact(path, browser, f"k{count - 50}")
        row = {
            "kernels": count,
            "made in s": built,
            "add_kernel s (all)": written,
            "add_kernel ms (each)": 1000 * written / count,
            "close() ms": 1000 * close_s,
            "close / writing": close_s / written,
            "report MB": os.path.getsize(path) / 2**20,
            "opens in s": min(open_time(path, browser) for _ in range(3)),
            "open a kernel s": opened,
            "search all s": searched,
        }
        shutil.rmtree(out, ignore_errors=True)
        rows.append(row)
        print_row(row)
    shutil.rmtree(base_dir, ignore_errors=True)
    return rows


def print_row(row: dict) -> None:
    print("  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)


def print_table(rows: list[dict]) -> None:
    if not rows:
        return
    keys = list(rows[0])
    print()
    print("| " + " | ".join(keys) + " |")
    print("| " + " | ".join("---" for _ in keys) + " |")
    for row in rows:
        print("| " + " | ".join(f"{row[k]:.2f}" if isinstance(row[k], float) else str(row[k]) for k in keys) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1,20", help="traced runs of this many GEMM variants ('' for none)")
    parser.add_argument("--sweep", default="300,1000", help="sweep reports of this many kernels ('' for none)")
    parser.add_argument("--builtin", action="store_true", help="also time TileLang's built-in tracer")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright
    from tilelang import tvm

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    lower_all(variants(1), target)  # warm-up
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        runs = traced_runs([int(c) for c in args.counts.split(",") if c], target, browser, args.builtin)
        swept = sweeps([int(c) for c in args.sweep.split(",") if c], target, browser)
        browser.close()
    print_table(runs)
    print_table(swept)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
