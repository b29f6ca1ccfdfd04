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
import atexit, sys, time
sys.path.insert(0, {testing!r})
import tilelang, kernels
tiles = [(64, 128), (128, 128), (64, 64), (128, 64)][:{count}]
cpu0, wall0 = time.process_time(), time.perf_counter()
# Registered before lower-trace's own exit handler, so it runs after it: the CPU the trace's
# worker spends on the last kernel's device stage after the compile returned is counted.
atexit.register(lambda: print("COMPILE", wall, time.process_time() - cpu0))
for bm, bn in tiles:
    tilelang.compile(kernels.gemm(M=512, N=512, K=512, block_M=bm, block_N=bn), target={{"kind": "cuda", "arch": "sm_90a"}})
wall = time.perf_counter() - wall0
"""

SETTINGS = {
    "untraced": {},
    "traced, device off": {"TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_DEVICE": "off"},
    "traced (device on)": {"TL_LOWER_TRACE": "html"},
    "traced, device sass": {"TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_DEVICE": "sass"},
}


def run_once(code: str, extra: dict[str, str], folder: str) -> tuple[float, float, float, float]:
    """(process wall, process CPU, the compiles' wall, their CPU up to the process's exit)."""
    env = {**os.environ, "TILELANG_DISABLE_CACHE": "1", "TL_LOWER_TRACE_DIR": folder, **extra}
    if "TL_LOWER_TRACE" not in extra:
        env.pop("TL_LOWER_TRACE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    _, compile_wall, compile_cpu = next(line for line in out.splitlines() if line.startswith("COMPILE")).split()
    # nvcc and ptxas are child processes of the child: RUSAGE_CHILDREN counts them in the process CPU;
    # process_time (the compile's CPU) counts the Python process only.
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), float(compile_wall), float(compile_cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kernels", type=int, default=2)
    args = parser.parse_args()
    code = CHILD.format(testing=os.path.join(HERE, "..", "testing"), count=args.kernels)
    times: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in SETTINGS}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.rounds):
            for name, extra in SETTINGS.items():
                times[name].append(run_once(code, extra, os.path.join(folder, name.replace(" ", "_"))))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{args.kernels} GEMM compiles per process, {args.rounds} rounds, {cores} core(s)")
    print("process: the whole child (import tilelang included), CPU with nvcc/ptxas/nvdisasm; compile: the tilelang.compile calls")
    base = [statistics.median(sample[i] for sample in times["traced, device off"]) for i in range(4)]
    print(f"{'':22} {'process wall':>12} {'process cpu':>11} {'compile wall':>12}  {'ratios vs device off (process wall, cpu, compile wall)':>54}")
    for name, samples in times.items():
        medians = [statistics.median(sample[i] for sample in samples) for i in range(4)]
        ratios = "  ".join(f"{medians[i] / base[i]:.3f}x" for i in (0, 1, 2))
        print(f"{name:22} {medians[0]:11.2f}s {medians[1]:10.2f}s {medians[2]:11.2f}s  {ratios:>54}")


if __name__ == "__main__":
    main()
