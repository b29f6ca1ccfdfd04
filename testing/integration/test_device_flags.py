"""`lower-trace device` on a kernel that was only lowered compiles it as TileLang's own compile
does, under each pass config that changes TileLang's nvcc call: fast math (off and on), the
register usage level, extra device flags (a list whose strings hold several flags; TVM takes
no other form on 0.1.15), and all three at once.

Ground truth is TileLang's own nvcc call for the same kernel and configs, untraced: the command
line it runs (caught at subprocess.Popen), the cubin it writes (disassembled here with nvdisasm)
and ptxas' report on that very command (rerun here with --ptxas-options=--verbose, which changes
no code). The kernel uses exp, exp2, log and divisions: fast math changes its code, and each
config changes TileLang's own result (checked first, so a config we dropped would show)."""

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("tilelang")

from device_sweep import missing_tools
from lower_trace.integrations.nvcc.toolchain import find_tool
from support import lower_trace_cli, pythonpath

if missing_tools():
    pytest.skip(missing_tools(), allow_module_level=True)

CASES = [  # (name, pass configs): each kernel of the run, in this order
    ("fast math off", {"tl.enable_fast_math": False}),
    ("fast math on", {"tl.enable_fast_math": True}),
    ("register usage level", {"tl.ptxas_register_usage_level": 0}),
    ("device flags, a list", {"tl.device_compile_flags": ["-Xptxas -O1", "-DLOWER_TRACE_UNUSED=1"]}),
    ("all three", {"tl.enable_fast_math": True, "tl.ptxas_register_usage_level": 0, "tl.device_compile_flags": ["-Xptxas -O1 -DLOWER_TRACE_ALL=1"]}),
]

SCRIPT = '''
import json, os, subprocess, sys
import tilelang
import tilelang.language as T
from tilelang import tvm
from tilelang.contrib import nvcc
import lower_trace

cases, out = json.loads(sys.argv[1]), sys.argv[2]
TARGET = {"kind": "cuda", "arch": "sm_90a"}


def kernel(M=256, N=256, block=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            for i, j in T.Parallel(block, block):
                x = A[by * block + i, bx * block + j]
                B[by * block + i, bx * block + j] = T.exp(x) / (1.0 + T.exp2(x * 0.5)) + T.log(x * x + 1.0) / x
    return main


# Lowered only, traced: one kernel a case.
with lower_trace.trace(mode="html", trace_dir=os.path.join(out, "lowered")) as run:
    for _, configs in cases:
        with tvm.target.Target(TARGET) as target, tvm.transform.PassContext(config=configs):
            tilelang.lower(kernel(), target=target)

# TileLang's own compile, untraced: the nvcc command line it runs and the files it writes.
folder = [""]
nvcc._resolve_artifact_paths = lambda temp, name, fmt, kernels_output_dir=None: (folder[0] + "/k.cu", folder[0] + "/k." + fmt)
calls = []
real_popen = subprocess.Popen


def popen(cmd, *args, **kwargs):
    if os.path.basename(str(cmd[0])) == "nvcc":
        calls.append([str(part) for part in cmd])
    return real_popen(cmd, *args, **kwargs)


subprocess.Popen = popen
for number, (_, configs) in enumerate(cases):
    folder[0] = os.path.join(out, f"tilelang{number}")
    os.makedirs(folder[0])
    try:
        tilelang.compile(kernel(), target=TARGET, pass_configs=configs)
    except Exception as exc:  # the final link (-lcuda) may fail on a machine without a GPU; nvcc ran before it
        print("compile:", type(exc).__name__, file=sys.stderr)
print(json.dumps({"lowered": run.run_dir, "calls": calls}))
'''

INSTRUCTION = re.compile(r"\s*/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?[A-Z]")  # an instruction line of nvdisasm, not .byte data


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """(the lowered-only run, TileLang's nvcc command lines, the folder of TileLang's files)."""
    folder = tmp_path_factory.mktemp("device_flags")
    script = folder / "kernel_flags.py"  # a file: T.prim_func reads its source
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": pythonpath(), "TILELANG_DISABLE_CACHE": "1"}
    proc = subprocess.run(
        [sys.executable, str(script), json.dumps([list(case) for case in CASES]), str(folder)],
        env=env, cwd=str(folder), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(found["calls"]) == len(CASES), "TileLang ran nvcc once a kernel (no cache)"
    return found["lowered"], found["calls"], str(folder)


def _options(command):
    """An nvcc command's options: without nvcc itself, the host compiler (-ccbin: no device code),
    the output and the input file."""
    out, items = [], iter(command[1:-1])  # the last: the input .cu
    for part in items:
        if part == "-o":
            next(items)
        elif not part.startswith("-ccbin"):
            out.append(part)
    return out


def _registers(command, folder):
    """ptxas' count for TileLang's own command line, rerun with its report on."""
    check = os.path.join(folder, "check.cubin")
    rerun = [*command[:-3], "--ptxas-options=--verbose", "-o", check, command[-1]]
    assert command[-3] == "-o"
    proc = subprocess.run(rerun, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(re.search(r"Used (\d+) registers", proc.stdout + proc.stderr).group(1))


def _instructions(sass):
    return [line.strip() for line in sass.splitlines() if INSTRUCTION.match(line)]


def _tilelang_truth(calls, folder):
    """Per case: TileLang's options, registers and SASS instructions."""
    nvdisasm = find_tool("nvdisasm")

    def one(number):
        command = calls[number]
        cubin = os.path.join(folder, f"tilelang{number}", "k.cubin")
        listing = subprocess.run([nvdisasm, "--print-code", "-gi", cubin], capture_output=True, text=True, check=True).stdout
        return {"options": _options(command), "registers": _registers(command, os.path.join(folder, f"tilelang{number}")), "sass": _instructions(listing)}

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return list(pool.map(one, range(len(calls))))


def _ours(run_dir, *extra):
    """`lower-trace device` on the run, as a user runs it: per kernel its options, registers and SASS."""
    import lower_trace

    proc = subprocess.run([lower_trace_cli(), "device", run_dir, "--json", *extra], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "cannot" not in proc.stderr and "failed" not in proc.stderr, proc.stderr
    summaries = json.loads(proc.stdout)["kernels"]
    trace = lower_trace.load_trace(run_dir)
    out = []
    for summary, kernel in zip(summaries, trace.kernels, strict=True):
        record = kernel.device_stage
        assert record.how == "on demand" and summary["kernel"] == kernel.kernel_id
        sass = _instructions(trace.read_snapshot(record.sass))
        assert summary["instructions"]["instructions"] == len(sass)
        out.append({"options": list(record.command[1:]), "registers": summary["resources"]["registers"], "sass": sass})
    return out


def _old_trace(run_dir, path):
    """The run as traces were before they recorded typed configs: only TVM's printed values."""
    shutil.copytree(run_dir, path)
    manifest = os.path.join(path, "trace.jsonl")
    with open(manifest) as records:
        lines = [json.loads(line) for line in records]
    for record in lines:
        if record["type"] == "kernel":
            record.pop("context", None)
    with open(manifest, "w") as out:
        out.writelines(json.dumps(record) + "\n" for record in lines)
    return path


def test_device_compiles_a_lowered_kernel_as_tilelang_does_under_each_config(compiled, tmp_path):
    run_dir, calls, folder = compiled
    truth = _tilelang_truth(calls, folder)
    names = [name for name, _ in CASES]
    off, on, level, flags, both = (truth[names.index(n)] for n in names)
    # Each config changes TileLang's own result on this kernel, so a config we dropped would show.
    assert on["registers"] != off["registers"] and len(on["sass"]) < len(off["sass"])  # exp/log/div: approximations
    assert level["registers"] != off["registers"]
    assert flags["sass"] != off["sass"] and both["sass"] not in (on["sass"], off["sass"])
    # TileLang's options are the flags each config asks for (its command line, read here).
    assert "--use_fast_math" in on["options"] and "--use_fast_math" not in off["options"]
    assert "-Xptxas" in flags["options"] and "-O1" in flags["options"]
    old = _old_trace(run_dir, str(tmp_path / "old"))  # before anything is added to the run
    ours = _ours(run_dir)
    for name, mine, theirs in zip(names, ours, truth, strict=True):
        assert mine["options"] == theirs["options"], name
        assert mine["registers"] == theirs["registers"], name
        assert mine["sass"] == theirs["sass"], name  # every instruction, so the counts too
    # A trace from before typed configs: the printed values ("T.bool(True)") read back, the same result.
    with open(os.path.join(old, "trace.jsonl")) as records:
        printed = [r["pass_configs"] for r in map(json.loads, records) if r["type"] == "kernel"]
    assert printed[1] == {"tl.enable_fast_math": "T.bool(True)"}
    for name, mine, theirs in zip(names, _ours(old), truth, strict=True):
        assert (mine["options"], mine["registers"], mine["sass"]) == (theirs["options"], theirs["registers"], theirs["sass"]), name
