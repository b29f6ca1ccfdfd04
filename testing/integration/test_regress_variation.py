"""TileLang's own run-to-run variation is not a regression.

1. One object under two names: TileLang 0.1.15 lowering the same layernorm kernel in two processes
   (testing/fixtures/variation: captured from real runs) binds `workspace` and `workspace_1` to the
   same shared-memory offset and swaps which one each AllReduce uses. regress calls that
   "equivalent code" and says what it equated; the independent truth is nvcc: both sources compile
   to the same PTX. A real change (another offset) stays "code differs".
2. Measured variation: `regress --repeat` runs one side twice and keeps what varied; a later
   two-side run given it (--variation) calls a kernel that differs in the known way "varies run to
   run" (exit 0), and a kernel the config really changes "code differs", even one known to vary.
   The corpus varies by construction (the side it runs on picks one of two tiles): the truth is
   what the test made it do, and TileLang's own lowering of each.
"""

import json
import os
import re
import shutil
import subprocess

import pytest

pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")

import lower_trace
from lower_trace.analysis.regress import regress as judge
from lower_trace.model import CodegenRecord, PassRecord, PassStatus, RunInfo
from lower_trace.model_json import to_json
from lower_trace.store.writer import TraceWriter
from shared_runs import clean_env
from support import FIXTURES, lower_trace_cli, pythonpath

TESTING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIATION = os.path.join(FIXTURES, "variation")


def fixture(name):
    with open(os.path.join(VARIATION, name), encoding="utf-8") as handle:
        return handle.read()


def stored(folder, tir, cuda):
    """A stored run of one kernel whose last pass made `tir` and whose codegen made `cuda`."""
    import hashlib

    writer = TraceWriter(str(folder), RunInfo(run_id="r", started=0.0, script="layernorm"))

    def digest(text):
        key = hashlib.sha1(text.encode()).hexdigest()[:16]
        writer.add_snapshot(key, text)
        return key

    writer.append("kernel", {"kernel_id": "k1", "name": "main", "target": "cuda -arch=sm_90a"})
    start = "# from tvm.script import tir as T\ndef main(): pass\n"
    writer.append("pass", to_json(PassRecord("k1", 0, "tl.MergeSharedMemoryAllocations", PassStatus.CHANGED, before=digest(start), after=digest(tir))))
    writer.append("codegen", to_json(CodegenRecord("k1", 1, "device", "target.build.tilelang_cuda", "cuda", "cuda", digest(tir), digest(cuda))))
    writer.append("kernel_end", {"kernel_id": "k1", "status": "ok", "ms": 5.0})
    writer.close()
    return lower_trace.load_trace(str(folder))


def ptx(source, tmp_path, name):
    """What nvcc makes of a TileLang CUDA source (TileLang's own include paths), comments dropped."""
    from tilelang import env as tl_env

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed here")
    cu = tmp_path / f"{name}.cu"
    cu.write_text(source)
    out = tmp_path / f"{name}.ptx"
    includes = [f"-I{tl_env.TILELANG_TEMPLATE_PATH}", f"-I{tl_env.CUTLASS_INCLUDE_DIR}"]
    proc = subprocess.run([nvcc, "-ptx", "-arch=sm_90a", "-std=c++20", *includes, str(cu), "-o", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return "\n".join(line for line in out.read_text().splitlines() if not line.startswith("//"))


def test_one_object_under_two_names_is_equivalent_code_and_nvcc_agrees(tmp_path):
    cuda_a, cuda_b = fixture("layernorm_a.cu"), fixture("layernorm_b.cu")
    tir_a, tir_b = fixture("layernorm_a_tir.txt"), fixture("layernorm_b_tir.txt")
    assert cuda_a != cuda_b and tir_a != tir_b  # what two processes of TileLang really gave
    assert ptx(cuda_a, tmp_path, "a") == ptx(cuda_b, tmp_path, "b")  # the same program, says nvcc
    (v,) = judge([stored(tmp_path / "a", tir_a, cuda_a)], [stored(tmp_path / "b", tir_b, cuda_b)])
    assert v.verdict.value == "equivalent code"
    (group,) = v.equated
    assert group.names == ("workspace", "workspace_1") and "24576" in group.value
    # Both names really are bound to that value in TileLang's source (read here with a plain regex).
    for name in group.names:
        assert re.search(rf"void\* {name} = \(\(void\*\)\(\(char\*\)buf_dyn_shmem \+ 24576\)\);", cuda_a)


def test_another_offset_is_still_code_differs(tmp_path):
    cuda_a = fixture("layernorm_a.cu")
    tir_a = fixture("layernorm_a_tir.txt")
    moved = cuda_a.replace("void* workspace_1 = ((void*)((char*)buf_dyn_shmem + 24576));", "void* workspace_1 = ((void*)((char*)buf_dyn_shmem + 0));")
    assert moved != cuda_a
    assert ptx(cuda_a, tmp_path, "a") != ptx(moved, tmp_path, "moved")  # nvcc: another program
    (v,) = judge([stored(tmp_path / "a", tir_a, cuda_a)], [stored(tmp_path / "m", tir_a, moved)])
    assert v.verdict.value == "code differs" and not v.equated


# A corpus that varies by construction: on the folder named "head" the gemm gets 2 stages, else 3;
# elementwise_add never varies. TL_LOWER_TRACE_DIR names the side it runs on.
CORPUS = f"""
import os, sys
sys.path.insert(0, {TESTING!r})
import kernels, tilelang
from tilelang import tvm

other = os.environ.get("TL_LOWER_TRACE_DIR", "").rstrip("/").endswith(os.environ.get("VARIES_ON", "head"))
target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
for build in (lambda: kernels.gemm(num_stages=2 if other else 3), lambda: kernels.elementwise_add(M=16, N=16, block_M=8, block_N=8)):
    with target:
        tilelang.lower(build(), target=target)
"""


def regress(folder, *args, varies_on="head"):
    env = {**clean_env(), "PYTHONPATH": pythonpath(), "VARIES_ON": varies_on}
    corpus = () if "--compare" in args else ("--", "python", "corpus.py")
    command = [lower_trace_cli(), "regress", *args, *corpus]
    return subprocess.run(command, cwd=str(folder), env=env, capture_output=True, text=True, timeout=900)


def lowered_cuda(**config):
    import tilelang
    from tilelang import tvm

    import kernels

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    out = {}
    for stages in (2, 3):
        with tvm.transform.PassContext(config=config), target:
            out[stages] = tilelang.lower(kernels.gemm(num_stages=stages), target=target).kernel_source
    return out


def test_repeat_measures_variation_and_variation_keeps_it_from_the_gate(tmp_path):
    (tmp_path / "corpus.py").write_text(CORPUS)
    repeat = regress(tmp_path, "--repeat", "--dir", str(tmp_path / "var"), "--json")
    assert repeat.returncode == 0, repeat.stderr[-2000:]  # a measurement: --fail-on varies makes it a check
    found = {k["kernel"]: k for k in json.loads(repeat.stdout)["kernels"]}
    assert found["gemm"]["verdict"] == "varies run to run" and found["elementwise_add"]["verdict"] == "identical"
    known = json.loads((tmp_path / "var" / "variation.json").read_text())
    assert [k["label"].split()[-1] for k in known["kernels"]] == ["gemm"] and len(known["kernels"][0]["sources"]) == 2

    # A config that changes neither kernel: the gemm differs between the sides only as it varies.
    plain = lowered_cuda()
    assert plain[2] != plain[3]
    var = str(tmp_path / "var")
    calm = regress(tmp_path, "--dir", str(tmp_path / "calm"), "--head-config", "tl.disable_out_of_bound_warning=true", "--variation", var, "--json")
    assert calm.returncode == 0, calm.stdout[-3000:] + calm.stderr[-2000:]
    verdicts = {k["kernel"]: k for k in json.loads(calm.stdout)["kernels"]}
    assert verdicts["gemm"]["verdict"] == "varies run to run" and verdicts["gemm"]["variation"]["versions"] == 2
    assert verdicts["elementwise_add"]["verdict"] == "identical"
    # Without --variation the same run (its sides as stored) is a change.
    loud = regress(tmp_path, "--compare", str(tmp_path / "calm" / "base"), str(tmp_path / "calm" / "head"), "--json")
    assert loud.returncode == 1 and {k["kernel"]: k["verdict"] for k in json.loads(loud.stdout)["kernels"]}["gemm"] == "code differs"

    # A config that really changes the gemm (TileLang says so): a change, though the gemm is known to vary.
    changed = lowered_cuda(**{"tl.disable_warp_specialized": True})
    assert changed[2] != plain[2] and changed[3] != plain[3]
    real = regress(tmp_path, "--dir", str(tmp_path / "real"), "--head-config", "tl.disable_warp_specialized=true", "--variation", var, "--json")
    assert real.returncode == 1
    assert {k["kernel"]: k["verdict"] for k in json.loads(real.stdout)["kernels"]}["gemm"] == "code differs"


def test_a_variation_file_that_is_not_one_is_one_line_exit_2(tmp_path):
    (tmp_path / "corpus.py").write_text(CORPUS)
    (tmp_path / "bad.json").write_text("{}")
    for given, said in ((tmp_path / "nowhere", "no variation.json there"), (tmp_path / "bad.json", "format")):
        proc = regress(tmp_path, "--head-config", "tl.disable_out_of_bound_warning=true", "--variation", str(given))
        assert proc.returncode == 2 and said in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
