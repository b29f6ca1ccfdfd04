"""The device stage on real kernels, checked against NVIDIA's own tools run by the test.

Ground truth: nvcc --ptxas-options=--verbose on the very source TileLang compiled (the resource
numbers), nvdisasm -gi on the very cubin it produced (the SASS line records), and a TileLang
compile without tracing (the binary, byte for byte)."""

import base64
import json
import os
import re
import subprocess
import sys

import pytest

tilelang = pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")  # 0.1.15: the CUDA callback compiles through compile_cuda

from device_sweep import missing_tools, nvdisasm_table, run_python, shared_sweep  # noqa: E402
from lower_trace.integrations.nvcc.toolchain import find_tool  # noqa: E402
from support import lower_trace_cli  # noqa: E402

if missing_tools():
    pytest.skip(missing_tools(), allow_module_level=True)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    return lower_trace_load(shared_sweep(tmp_path_factory, "device"))


def lower_trace_load(path):
    import lower_trace

    return lower_trace.load_trace(path)


def _nvcc_verbose(record, source, folder):
    """nvcc's own report: the recorded command, with --ptxas-options=--verbose, on the source."""
    path = os.path.join(folder, record.source_name)
    with open(path, "w") as handle:
        handle.write(source)
    command = [*record.command, "--ptxas-options=--verbose", "-o", os.path.join(folder, "check.cubin"), path]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = {}
    text = proc.stdout + proc.stderr
    entry = re.search(r"Compiling entry function '(\w+)'", text).group(1)
    frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", text)
    used = re.search(r"Used (\d+) registers.*", text).group(0)  # "..., used 1 barriers, 1024 bytes cumulative stack size, 1024 bytes smem"
    barriers, smem = re.search(r"used (\d+) barriers", used), re.search(r"(\d+) bytes smem", used)
    found.update(function=entry, stack=int(frame.group(1)), spill_stores=int(frame.group(2)), spill_loads=int(frame.group(3)))
    found["registers"] = int(re.search(r"Used (\d+)", used).group(1))
    found.update(barriers=int(barriers.group(1)) if barriers else 0, shared_static=int(smem.group(1)) if smem else 0)
    return found


def test_every_resource_number_is_nvccs_own(sweep, tmp_path):
    assert len(sweep.kernels) == 4
    seen = []
    for kernel in sweep.kernels:
        record = kernel.device_stage
        assert record is not None and record.how == "capture" and not record.error, kernel.kernel_id
        truth = _nvcc_verbose(record, sweep.read_snapshot(record.source), str(tmp_path))
        ours = record.function(truth["function"])
        assert ours is not None
        for name, value in truth.items():
            assert getattr(ours, name) == value, (kernel.kernel_id, name)
        seen.append(truth)
    # The 128x256 tile spills, the 64x128 one does not; on sm_80 the 64x64 and 128x128 tiles need
    # different registers (more for the bigger tile), each as nvcc says.
    assert seen[0]["spill_stores"] == 0 and seen[1]["spill_stores"] > 0 and seen[1]["spill_loads"] > 0
    assert seen[2]["registers"] < seen[3]["registers"]
    # The launch shape is the kernel's own: a 512x512 output in tiles of 64x128, 128x256, 64x64, 128x128.
    out = subprocess.run([lower_trace_cli(), "list", sweep.path, "--device", "--json"], capture_output=True, text=True, check=True).stdout
    grids = [tuple(row["launch"]["grid"]) for row in json.loads(out)["kernels"]]
    assert grids == [(4, 8, 1), (2, 4, 1), (8, 8, 1), (4, 4, 1)]


def test_list_device_names_the_spilling_variant(sweep):
    out = subprocess.run([lower_trace_cli(), "list", sweep.path, "--device", "--json"], capture_output=True, text=True, check=True).stdout
    rows = {row["kernel"]: row for row in json.loads(out)["kernels"]}
    for kernel in sweep.kernels:
        resources = kernel.device_stage.function()
        assert rows[kernel.kernel_id]["resources"]["registers"] == resources.registers
    spilling = [k for k, row in rows.items() if row["resources"]["spill_stores"]]
    assert spilling == [sweep.kernels[1].kernel_id]
    table = subprocess.run([lower_trace_cli(), "list", sweep.path, "--device", "--sort", "spills"], capture_output=True, text=True, check=True).stdout
    assert table.splitlines()[1].split()[0] == sweep.kernels[1].kernel_id  # the most spills first
    assert f"spilling: {sweep.kernels[1].kernel_id}" in table


def test_device_adds_sass_whose_line_records_are_nvdisasms(sweep, tmp_path):
    kernel = sweep.kernels[0]
    proc = subprocess.run([lower_trace_cli(), "device", sweep.path, "-k", kernel.kernel_id], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "registers " in proc.stdout and "occupancy 1 block/SM (8 warps, limited by registers)" in proc.stdout
    trace = lower_trace_load(sweep.path)
    record = trace.kernels[0].device_stage
    assert record.sass
    # nvdisasm -gi on the binary the trace holds, run here: every instruction's last record naming the source
    expected = nvdisasm_table(trace, record, tmp_path)
    out = subprocess.run([lower_trace_cli(), "show", sweep.path, "-k", kernel.kernel_id, "--sass", "--json"], capture_output=True, text=True, check=True)
    entries = [entry for entry in json.loads(out.stdout)["sass"] if entry.get("opcode")]
    # nvcc's own line: kept as nvcc_line where an instruction is moved off it (test_device_attribution.py)
    shown = [(entry["text"].strip(), entry.get("nvcc_line", entry["line"])) for entry in entries]
    assert shown == expected and any("HGMMA" in text for text, _ in shown)
    # A HGMMA comes from a CUDA line that calls wgmma (nvcc puts some on a barrier line: they are
    # moved), and that line from the user's T.gemm.
    cuda = trace.read_snapshot(record.source).splitlines()
    hgmma_lines = {entry["line"] for entry in entries if "HGMMA" in entry["text"]}
    assert all("wgmma" in cuda[n - 1] for n in hgmma_lines)
    command = [lower_trace_cli(), "show", sweep.path, "-k", kernel.kernel_id, "--sass", "--origins", "--json"]
    with_origins = subprocess.run(command, capture_output=True, text=True, check=True)
    with open(os.path.join(os.path.dirname(__file__), "..", "kernels.py")) as handle:
        gemm_line = next(i for i, text in enumerate(handle, 1) if "T.gemm(" in text)
    origins = [entry.get("origin") for entry in json.loads(with_origins.stdout)["sass"] if "HGMMA" in entry["text"]]
    assert origins and all(origin and origin["line"] == gemm_line and origin["file"].endswith("kernels.py") for origin in origins)


BINARY = """
import tilelang, kernels
from tilelang.contrib import nvcc
out = sys.argv[1]
# The same paths and source time stamp in both runs: TileLang picks random paths, and the cubin's
# DWARF line table holds the source's path and modification time.
nvcc._resolve_artifact_paths = lambda temp, name, fmt, kernels_output_dir=None: (out + "/k.cu", out + "/k." + fmt)
import os, subprocess
real_popen = subprocess.Popen
def popen(cmd, *args, **kwargs):
    os.utime(cmd[-1], (1e9, 1e9))
    return real_popen(cmd, *args, **kwargs)
nvcc.subprocess = type("S", (), {
    "Popen": staticmethod(popen), "PIPE": subprocess.PIPE, "STDOUT": subprocess.STDOUT, "TimeoutExpired": subprocess.TimeoutExpired,
})
tilelang.compile(kernels.gemm(M=512, N=512, K=512, block_M=64, block_N=128), target={"kind": "cuda", "arch": "sm_90a"})
"""


def test_the_binary_is_byte_identical_with_and_without_tracing(tmp_path):
    plain, traced = tmp_path / "plain", tmp_path / "traced"
    work = tmp_path / "work"
    for folder in (plain, traced, work):
        folder.mkdir()
    run_python(BINARY.replace("sys.argv[1]", repr(str(work))), tmp_path)
    (plain / "k.cubin").write_bytes((work / "k.cubin").read_bytes())
    run_python(BINARY.replace("sys.argv[1]", repr(str(work))), tmp_path, TL_LOWER_TRACE="html", TL_LOWER_TRACE_DIR=str(tmp_path / "trace"))
    (traced / "k.cubin").write_bytes((work / "k.cubin").read_bytes())
    assert (plain / "k.cubin").read_bytes() == (traced / "k.cubin").read_bytes()
    trace = lower_trace_load(str(tmp_path / "trace"))
    record = trace.kernels[0].device_stage
    assert record is not None and base64.b64decode(trace.read_snapshot(record.binary)) == (traced / "k.cubin").read_bytes()


def test_without_nvdisasm_device_says_so_in_one_line_and_gives_the_resources(sweep, tmp_path):
    """PATH holds nvcc and ptxas only, and an `nvidia` package of no wheel shadows the pip wheels."""
    import shutil

    trace_copy = tmp_path / "trace"
    shutil.copytree(sweep.path, trace_copy)
    shadow = tmp_path / "shadow" / "nvidia"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("nvcc", "ptxas"):
        (tools / name).symlink_to(find_tool(name))
    env = {**os.environ, "PATH": f"{tools}:/usr/bin:/bin", "CUDA_HOME": str(tmp_path), "PYTHONPATH": str(tmp_path / "shadow")}
    code = "import sys; from lower_trace.cli.main import main; sys.exit(main())"
    command = [sys.executable, "-c", code, "device", str(trace_copy), "-k", sweep.kernels[0].kernel_id, "--rebuild"]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "nvdisasm" in line]
    assert len(said) == 1 and "pip install nvidia-cuda-nvdisasm" in said[0], proc.stderr
    assert f"registers {sweep.kernels[0].device_stage.function().registers} " in proc.stdout


def test_diff_names_the_device_stage_differences(sweep):
    a, b = sweep.kernels[0], sweep.kernels[1]
    out = subprocess.run([lower_trace_cli(), "diff", f"{sweep.path}:{a.kernel_id}", f"{sweep.path}:{b.kernel_id}", "--json"], capture_output=True, text=True)
    assert out.returncode == 1, out.stderr
    changes = {item["what"]: (item["a"], item["b"]) for item in json.loads(out.stdout)["device"]}
    ra, rb = a.device_stage.function(), b.device_stage.function()
    assert changes["spill stores"] == (f"{ra.spill_stores} B", f"{rb.spill_stores} B")
    assert changes["spill loads"] == (f"{ra.spill_loads} B", f"{rb.spill_loads} B")
    assert ("registers" in changes) == (ra.registers != rb.registers)
    text = subprocess.run([lower_trace_cli(), "diff", f"{sweep.path}:{a.kernel_id}", f"{sweep.path}:{b.kernel_id}"], capture_output=True, text=True).stdout
    assert f"spill stores {ra.spill_stores} B → {rb.spill_stores} B" in text.splitlines()[-1]


def test_device_compiles_the_edited_working_copy(sweep, tmp_path):
    """`device --working-copy`: your edit compiled with TileLang's flags; its numbers are nvcc's."""
    import shutil

    trace_copy = tmp_path / "trace"
    shutil.copytree(os.path.dirname(sweep.path), trace_copy / "python")  # the run and its edits/ folder
    run = trace_copy / "python" / os.path.basename(sweep.path)
    kernel = sweep.kernels[2]
    step = next(c for c in kernel.codegen if c.role == "device")
    working = trace_copy / "python" / "edits" / os.path.basename(step.edit_path)
    # The trace names the working copy's absolute path: point it at the copy's.
    manifest = run / "trace.jsonl"
    manifest.write_text(manifest.read_text().replace(json.dumps(step.edit_path)[1:-1], str(working)))
    extra = '\nextern "C" __global__ void __launch_bounds__(64) extra_kernel(float* p) { p[threadIdx.x] = sqrtf(p[threadIdx.x]); }\n'
    working.write_text(working.read_text() + extra)
    command = [lower_trace_cli(), "device", str(run), "-k", kernel.kernel_id, "--working-copy", "--json"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    record = lower_trace_load(str(run)).kernels[2].device_stage
    assert record.how == "on demand" and record.edited
    assert {f.function for f in record.functions} >= {"extra_kernel"}
    truth = _nvcc_verbose_all(record, working.read_text(), str(tmp_path))
    for resources in record.functions:
        assert (resources.registers, resources.stack, resources.spill_stores) == truth[resources.function]


def _nvcc_verbose_all(record, source, folder):
    """Every entry function's (registers, stack, spill stores) as nvcc --ptxas-options=--verbose gives them."""
    path = os.path.join(folder, record.source_name)
    with open(path, "w") as handle:
        handle.write(source)
    command = [*record.command, "--ptxas-options=--verbose", "-o", os.path.join(folder, "all.cubin"), path]
    text = subprocess.run(command, capture_output=True, text=True, timeout=600, check=True)
    out, current = {}, None
    for line in (text.stdout + text.stderr).splitlines():
        if found := re.search(r"Compiling entry function '(\w+)'", line):
            current = found.group(1)
        elif (found := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", line)) and current:
            out[current] = [0, int(found.group(1)), int(found.group(2))]
        elif (found := re.search(r"Used (\d+) registers", line)) and current:
            out[current][0] = int(found.group(1))
    return {name: tuple(values) for name, values in out.items()}


def test_a_cpu_kernel_is_said_to_have_no_device_stage(tmp_path):
    import kernels
    import lower_trace

    with lower_trace.trace(mode="html", trace_dir=str(tmp_path / "t")) as run:
        tilelang.lower(kernels.vector_add_c(), target="c")
    for command in (["show", run.run_dir, "--device"], ["device", run.run_dir]):
        proc = subprocess.run([lower_trace_cli(), *command], capture_output=True, text=True, timeout=120)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and "CPU or host-only" in lines[0], (command, proc.stderr)
    table = subprocess.run([lower_trace_cli(), "list", run.run_dir, "--device"], capture_output=True, text=True, check=True).stdout
    assert "no CUDA source (CPU or host-only kernels): k1" in table and "lower-trace device compiles" not in table


def test_on_one_core_ptxas_waits_for_the_close_and_the_report_takes_it_late(tmp_path, tmp_path_factory):
    """Pinned to one core there is no worker thread: the compile does not wait for ptxas' report.
    The device record is written after its kernel ended, carries nvcc's own numbers, and the report
    gets it as late blocks (lt-d<block>, lt-device) whose index columns are those numbers."""
    trace = lower_trace_load(shared_sweep(tmp_path_factory, "late-device", one_core=True))  # the browser tier's too
    manifest = [json.loads(line) for line in open(os.path.join(trace.path, "trace.jsonl"))]
    html = open(os.path.join(trace.path, "report.html")).read()

    def blocks(cls):
        return [json.loads(body) for body in re.findall(rf'<script type="application/json" class="{cls}">(.*?)</script>', html, re.S)]

    block_of = {summary["id"]: summary["block"] for summary in blocks("lt-kernel")}
    assert all(summary["device"] is None for summary in blocks("lt-kernel"))  # written before ptxas ran
    late = {item["block"]: item["device"] for item in blocks("lt-device")}
    assert len(trace.kernels) == 2 and len(late) == 2
    for kernel in trace.kernels:
        ended = next(i for i, r in enumerate(manifest) if r["type"] == "kernel_end" and r["kernel_id"] == kernel.kernel_id)
        device = next(i for i, r in enumerate(manifest) if r["type"] == "device" and r["kernel"] == kernel.kernel_id)
        assert device > ended  # deferred: after the kernel
        record = kernel.device_stage
        truth = _nvcc_verbose(record, trace.read_snapshot(record.source), str(tmp_path))
        assert record.function(truth["function"]).registers == truth["registers"]
        block = block_of[kernel.kernel_id]
        assert f'id="lt-d{block}"' in html
        assert (late[block]["registers"], late[block]["spill_stores"], late[block]["spill_loads"]) == (
            truth["registers"], truth["spill_stores"], truth["spill_loads"])
