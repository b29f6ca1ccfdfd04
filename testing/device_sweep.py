"""A sweep that TileLang compiles with nvcc (`tilelang.compile` for sm_90a), traced in a fresh
process: what the device-stage tests of the integration and browser tiers read. Two GEMM tiles for
sm_90a (the 128x256 one spills; warp specialisation pins both at 240 registers) and, with
`ampere`, two for sm_80, where the tile decides the registers (64x64: fewer than 128x128)."""

import base64
import fcntl
import os
import re
import shutil
import subprocess
import sys

from support import pythonpath

SWEEP = """
import tilelang, kernels
target = {"kind": "cuda", "arch": "sm_90a"}
tilelang.compile(kernels.gemm(M=512, N=512, K=512, block_M=64, block_N=128), target=target)
tilelang.compile(kernels.gemm(M=512, N=512, K=512, block_M=128, block_N=256), target=target)
if AMPERE:
    for block in (64, 128):
        tilelang.compile(kernels.gemm(M=512, N=512, K=512, block_M=block, block_N=block), target={"kind": "cuda", "arch": "sm_80"})
"""


def missing_tools():
    """Why the device stage cannot be built here (None: it can)."""
    from lower_trace.integrations.nvcc.toolchain import find_tool

    missing = [tool for tool in ("nvcc", "ptxas", "nvdisasm") if not find_tool(tool)]
    return f"needs {', '.join(missing)} (the CUDA toolkit; pip install nvidia-cuda-nvdisasm)" if missing else None


def run_python(code, folder, prefix=(), **env_extra):
    env = {**os.environ, "PYTHONPATH": pythonpath(), "TILELANG_DISABLE_CACHE": "1", **env_extra}
    proc = subprocess.run([*prefix, sys.executable, "-c", code], env=env, cwd=str(folder), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def traced_sweep(folder, ampere=True, one_core=False):
    """The trace folder of the sweep run with TL_LOWER_TRACE=html in `folder` (one_core: pinned to
    one core, where lower-trace has no worker thread and ptxas' report waits for the close)."""
    trace = os.path.join(str(folder), "trace")
    prefix = ("taskset", "-c", "0") if one_core else ()
    run_python(SWEEP.replace("AMPERE", str(ampere)), folder, prefix=prefix, TL_LOWER_TRACE="html", TL_LOWER_TRACE_DIR=trace)
    return trace


def shared_sweep(tmp_path_factory, name, one_core=False):
    """A copy of its own (in `name`) of a traced sweep this test run makes once -- the four kernels
    (ampere), or sm_90a's two pinned to one core -- for every module and xdist worker that asks (the
    first waits for nvcc, the others for it); copied, as `lower-trace device` writes into its folder."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the run's folder, shared by its workers
    built = root / ("device-sweep-one-core" if one_core else "device-sweep")
    with open(f"{built}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (built / "done").exists():
            shutil.rmtree(built, ignore_errors=True)
            built.mkdir()
            traced_sweep(built, ampere=not one_core, one_core=one_core)
            (built / "done").write_text("")
    copy = tmp_path_factory.mktemp(name) / "trace"
    shutil.copytree(built / "trace", copy)
    return str(copy)


INSTRUCTION = re.compile(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")  # an instruction (group 1: its opcode), not .byte data


def nvdisasm_table(trace, record, folder):
    """nvcc's own line table, read here and not by lower-trace: nvdisasm -gi run on the binary the
    trace holds; [(instruction text, CUDA line)] per instruction, the line the last record naming
    the generated source gave."""
    from lower_trace.integrations.nvcc.toolchain import find_tool

    cubin = folder / "k.cubin"
    cubin.write_bytes(base64.b64decode(trace.read_snapshot(record.binary)))
    listing = subprocess.run([find_tool("nvdisasm"), "--print-code", "-gi", str(cubin)], capture_output=True, text=True, check=True).stdout
    out, line = [], 0
    for text in listing.splitlines():
        for path, number in re.findall(r'"([^"]+)", line (\d+)', text):
            if os.path.basename(path) == record.source_name:
                line = int(number)
        if INSTRUCTION.match(text):
            out.append((text.strip(), line))
    return out
