"""SASS instructions moved off a CUDA line nvcc's line table gives them but that cannot have made
them (analysis/device/attribution.py), on the demo GEMM (examples/gemm.py) and flash attention.

Ground truth: nvdisasm -gi run here on the cubin the trace holds (nvcc's own line per
instruction: the last record naming the compiled file), the generated CUDA's text (does a line
call wgmma?) and the user's files (where T.gemm is)."""

import json
import os
import re
import subprocess

import pytest

tilelang = pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")

import lower_trace  # noqa: E402
from device_sweep import INSTRUCTION, missing_tools, nvdisasm_table, run_python  # noqa: E402
from support import ROOT, TESTING, lower_trace_cli  # noqa: E402

if missing_tools():
    pytest.skip(missing_tools(), allow_module_level=True)

EXAMPLE = os.path.join(ROOT, "examples", "gemm.py")
SCRIPT = f"""
import sys
sys.path[:0] = [{os.path.dirname(EXAMPLE)!r}, {TESTING!r}]
import tilelang
from tilelang import tvm
import gemm, marked_kernels
with tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}}) as target:
    tilelang.lower(gemm.matmul(1024, 1024, 1024), target=target)  # the demo's kernel, as its main() lowers it
    tilelang.lower(marked_kernels.flash_attention(), target=target)
"""
# What only a line calling it can make (by SASS opcode): the calls as TileLang's CUDA names them.
CALLS = {"HGMMA": "wgmma", "UTMALDG": "tma_load", "UTMASTG": "tma_store"}


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attribution")
    trace = os.path.join(str(folder), "trace")
    run_python(SCRIPT, folder, TL_LOWER_TRACE="html", TL_LOWER_TRACE_DIR=trace)
    subprocess.run([lower_trace_cli(), "device", trace], check=True, capture_output=True, timeout=600)
    return lower_trace.load_trace(trace)


def nvdisasm_lines(trace, record, folder):
    """[(opcode with modifiers, nvcc's CUDA line)] per instruction, from nvdisasm run here."""
    return [(INSTRUCTION.match(text).group(1), line) for text, line in nvdisasm_table(trace, record, folder)]


def _shown(trace, kernel, *flags):
    command = [lower_trace_cli(), "show", trace.path, "-k", kernel.kernel_id, "--sass", *flags]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("which", [0, 1], ids=["demo-gemm", "flash-attention"])
def test_each_hgmma_off_a_wgmma_line_is_moved_to_its_batchs_wgmma_line(traced, which, tmp_path):
    kernel = traced.kernels[which]
    record = kernel.device_stage
    cuda = traced.read_snapshot(record.source).split("\n")
    truth = nvdisasm_lines(traced, record, tmp_path)
    shown = [entry for entry in json.loads(_shown(traced, kernel, "--json"))["sass"] if entry.get("opcode")]
    assert len(shown) == len(truth)
    moved = 0
    for index, (entry, (opcode, nvcc)) in enumerate(zip(shown, truth, strict=True)):
        call = CALLS.get(opcode.split(".")[0])
        if call and call not in cuda[nvcc - 1]:
            moved += opcode.startswith("HGMMA")
            assert entry["nvcc_line"] == nvcc and call in cuda[entry["line"] - 1], entry
        else:  # nvcc's line is one that can have made it: kept
            assert entry["line"] == nvcc and "nvcc_line" not in entry, entry
        if opcode.startswith("HGMMA") and entry.get("nvcc_line"):
            # The wgmma call of its own batch: between the warpgroup_arrive before it and the wait after it.
            arrive = next(line for op, line in reversed(truth[:index]) if op.startswith("WARPGROUP.ARRIVE"))
            wait = next(line for op, line in truth[index:] if op.startswith("WARPGROUP.DEPBAR"))
            assert arrive <= entry["line"] <= wait, (arrive, entry, wait)  # ptxas may fence each HGMMA on its own line
    assert moved  # nvcc 13 puts 3 of 8 HGMMAs off wgmma lines in both kernels


def test_show_sass_prints_instructions_with_nvccs_line_beside_a_moved_one(traced, tmp_path):
    kernel = traced.kernels[0]
    record = kernel.device_stage
    cuda = traced.read_snapshot(record.source).split("\n")
    truth = nvdisasm_lines(traced, record, tmp_path)
    out = _shown(traced, kernel)
    assert "//##" not in out  # nvdisasm's records are the column, not rows
    rows = [row for row in out.splitlines() if INSTRUCTION.search(row)]
    assert len(rows) == len(truth)
    moved = [(row, nvcc) for row, (opcode, nvcc) in zip(rows, truth, strict=True) if opcode.startswith("HGMMA") and "wgmma" not in cuda[nvcc - 1]]
    assert moved
    for row, nvcc in moved:
        where = re.match(r"\s*cu:(\d+) \(nvcc: (\d+)\)", row)
        assert where and int(where.group(2)) == nvcc and "wgmma" in cuda[int(where.group(1)) - 1], row
    # With --origins the moved HGMMAs come from the user's T.gemm (found here in the demo's text).
    with open(EXAMPLE, encoding="utf-8") as handle:
        gemm_line = next(number for number, text in enumerate(handle, 1) if "T.gemm(" in text)
    with_origins = [row for row in _shown(traced, kernel, "--origins").splitlines() if "(nvcc: " in row]
    assert len(with_origins) == len(moved) and all(f"gemm.py:{gemm_line}" in row for row in with_origins), with_origins
