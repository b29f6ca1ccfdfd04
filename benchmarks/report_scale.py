"""Scale: 1, 20 and 100 GEMM variants traced in one process.

    python benchmarks/report_scale.py [--counts 1,20,100] [--builtin]

For each count: total lowering time untraced and traced (html), bytes on disk,
report size, and the time the report takes to open in headless Chromium (from
navigation until the page has built itself). With --builtin, TileLang's own
tracer is timed too (slow: it rewrites its report after every pass).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time

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


def open_time(report: str, browser) -> float:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    started = time.perf_counter()
    page.goto("file://" + report)
    page.wait_for_selector("body[data-ready='1']", timeout=60000)
    elapsed = time.perf_counter() - started
    page.close()
    if errors:
        raise RuntimeError(f"report errors: {errors}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1,20,100")
    parser.add_argument("--builtin", action="store_true", help="also time TileLang's built-in tracer")
    args = parser.parse_args()

    import lower_trace
    from tilelang import tvm
    from playwright.sync_api import sync_playwright

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    lower_all(variants(1), target)  # warm-up
    rows = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        for count in map(int, args.counts.split(",")):
            builds = variants(count)
            untraced = lower_all(builds, target)
            trace_dir = tempfile.mkdtemp(prefix="lt-scale-")
            sink = open(os.devnull, "w")
            with contextlib.redirect_stderr(sink):
                run = lower_trace.enable(mode="html", trace_dir=trace_dir)
                started = time.perf_counter()
                lower_all(builds, target)
                lowered = time.perf_counter() - started
                lower_trace.disable()  # drains the worker and writes the final report
                traced_total = time.perf_counter() - started
            sink.close()
            report = run.report_path
            row = {
                "kernels": count,
                "untraced s": untraced,
                "traced s": lowered,
                "x (lower)": lowered / untraced,
                "x (+final report)": traced_total / untraced,
                "MB on disk": dir_bytes(trace_dir) / 2**20,
                "KB/kernel": dir_bytes(trace_dir) / 1024 / count,
                "report MB": os.path.getsize(report) / 2**20,
                "opens in s": min(open_time(report, browser) for _ in range(3)),
            }
            if args.builtin:
                from tilelang.tools import lower_trace as builtin

                builtin_dir = tempfile.mkdtemp(prefix="lt-scale-builtin-")
                with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                    builtin.enable(mode="html", trace_dir=builtin_dir)
                    row["built-in x"] = lower_all(builds, target) / untraced
                    builtin.disable()
                row["built-in MB"] = dir_bytes(builtin_dir) / 2**20
                shutil.rmtree(builtin_dir, ignore_errors=True)
            shutil.rmtree(trace_dir, ignore_errors=True)
            rows.append(row)
            print("  ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
        browser.close()
    print()
    keys = list(rows[0])
    print(" | ".join(keys))
    print(" | ".join("---" for _ in keys))
    for row in rows:
        print(" | ".join(f"{row[k]:.2f}" if isinstance(row[k], float) else str(row[k]) for k in keys))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
