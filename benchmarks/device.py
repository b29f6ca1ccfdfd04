"""What the device stage adds to a compile TileLang runs nvcc for (issue 21's 5% budget).

    python benchmarks/device.py [--rounds 3] [--kernels 2]
    taskset -c 0 python benchmarks/device.py      # on one core

Each round runs, interleaved, fresh processes that `tilelang.compile` --kernels GEMM tiles for
sm_90a: untraced; traced with TL_LOWER_TRACE_DEVICE=off (the rest of the trace, no device
stage); traced (the default: PTX, cubin, ptxas' report); traced with =sass (nvdisasm too).
TileLang's built-in tracer records no device stage, so it is not a row here (benchmarks/overhead.py
compares the traces). Prints the medians of wall and CPU time (the child's own, workers
included) and the ratios against the trace without the device stage.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = r"""
import sys
sys.path.insert(0, {testing!r})
import tilelang, kernels
tiles = [(64, 128), (128, 128), (64, 64), (128, 64)][:{count}]
for bm, bn in tiles:
    tilelang.compile(kernels.gemm(M=512, N=512, K=512, block_M=bm, block_N=bn), target={{"kind": "cuda", "arch": "sm_90a"}})
"""

SETTINGS = {
    "untraced": {},
    "traced, device off": {"TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_DEVICE": "off"},
    "traced (device on)": {"TL_LOWER_TRACE": "html"},
    "traced, device sass": {"TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_DEVICE": "sass"},
}


def run_once(code: str, extra: dict[str, str], folder: str) -> tuple[float, float]:
    env = {**os.environ, "TILELANG_DISABLE_CACHE": "1", "TL_LOWER_TRACE_DIR": folder, **extra}
    if "TL_LOWER_TRACE" not in extra:
        env.pop("TL_LOWER_TRACE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kernels", type=int, default=2)
    args = parser.parse_args()
    code = CHILD.format(testing=os.path.join(HERE, "..", "testing"), count=args.kernels)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in SETTINGS}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.rounds):
            for name, extra in SETTINGS.items():
                times[name].append(run_once(code, extra, os.path.join(folder, name.replace(" ", "_"))))
    base_wall = statistics.median(w for w, _ in times["traced, device off"])
    base_cpu = statistics.median(c for _, c in times["traced, device off"])
    print(f"{args.kernels} GEMM compiles per process, {args.rounds} rounds, {os.cpu_count()} cores visible")
    print(f"{'':22} {'wall s':>8} {'cpu s':>8}  {'wall vs off':>11} {'cpu vs off':>10}")
    for name, samples in times.items():
        wall, cpu = statistics.median(w for w, _ in samples), statistics.median(c for _, c in samples)
        print(f"{name:22} {wall:8.2f} {cpu:8.2f}  {wall / base_wall:10.3f}x {cpu / base_cpu:9.3f}x")


if __name__ == "__main__":
    main()
