"""Off means off: with lower-trace installed and TL_LOWER_TRACE unset, importing TileLang
and lowering a kernel cost what they cost without it.

    python benchmarks/off.py [--runs 7]

"without" runs the same interpreter with `-S` (no site processing, so no .pth
file of any package runs) and site-packages put on sys.path by hand; "with"
runs it normally, so lower-trace's startup hook runs. Both time `import tilelang`
and one GEMM lower in a fresh process; medians of --runs, interleaved.
It also times the startup hook's own line.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import sysconfig
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = r"""
import sys, time
t0 = time.perf_counter()
import tilelang
from tilelang import tvm
t1 = time.perf_counter()
sys.path.insert(0, {testing!r})
import kernels
target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
with target:
    tilelang.lower(kernels.gemm(), target=target)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, sorted(m for m in sys.modules if m.startswith("lower_trace")))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    purelib = sysconfig.get_paths()["purelib"]
    code = CHILD.format(testing=os.path.join(HERE, "..", "testing"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    without = [sys.executable, "-S", "-c", f"import sys; sys.path.append({purelib!r}); exec({code!r})"]
    with_hook = [sys.executable, "-c", code]
    results: dict[str, list[tuple[float, float]]] = {"without (-S)": [], "with lower-trace": []}
    modules = {}
    for _ in range(args.runs):
        for label, command in (("without (-S)", without), ("with lower-trace", with_hook)):
            out = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout.strip().splitlines()[-1]
            imp, low, mods = out.split(" ", 2)
            results[label].append((float(imp), float(low)))
            modules[label] = mods
    base = None
    print(f"{'':<18} {'import tilelang':>16} {'lower gemm':>11} {'x':>6}   lower_trace modules imported")
    for label, values in results.items():
        imp = statistics.median(v[0] for v in values)
        low = statistics.median(v[1] for v in values)
        total = imp + low
        base = base or total
        print(f"{label:<18} {imp * 1000:>13.0f} ms {low * 1000:>8.0f} ms {total / base:>5.2f}x   {modules[label]}")
    # The startup hook's own line as installed, timed where it cannot import anything: the finder it
    # adds (for tilelang.tools.lower_trace) is taken out again after each run.
    with open(os.path.join(purelib, "lower_trace_startup.pth"), encoding="utf-8") as handle:
        line = handle.read().strip()
    before = list(sys.meta_path)
    code = compile(line, "lower_trace_startup.pth", "exec")  # site compiles the line at every start, then runs it

    def hook() -> None:
        exec(code, {})
        sys.meta_path[:] = before

    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("TL_LOWER_TRACE")}
    compiling = timeit.timeit(lambda: compile(line, "lower_trace_startup.pth", "exec"), number=5000) / 5000
    running = timeit.timeit(hook, number=20000) / 20000
    exec(code, {})  # its finder, as a started interpreter has it: what it costs each other import
    finder = sys.meta_path[0]
    sys.meta_path[:] = before
    os.environ.update(saved)
    per_lookup = timeit.timeit(lambda: finder.find_spec("numpy.core.multiarray", None), number=200000) / 200000
    print(
        f"\nthe startup hook's line, with the variable unset: {(compiling + running) * 1e6:.0f} µs per interpreter start "
        f"({compiling * 1e6:.0f} µs compiling it, {running * 1e6:.1f} µs running it)"
    )
    print(f"its finder (it waits for tilelang.tools.lower_trace): {per_lookup * 1e9:.0f} ns per other module imported")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
