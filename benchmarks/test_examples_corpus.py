"""TileLang's own examples as a pytest corpus: one test per example, every kernel it compiles lowered to
CUDA sm_90a on the CPU, in the test's own process (so lower-trace's pytest plugin pairs each kernel
with its test), stopped where the example would need the GPU (benchmarks/corpus_harness.py).

    LT_EXAMPLES_DIR=DIR pytest -p no:cacheprovider benchmarks/test_examples_corpus.py -n 2
    pytest benchmarks/test_examples_corpus.py --tx 2*popen --dist load
    lower-trace regress --base-python .venvs/tilelang-0.1.13/bin/python -- pytest benchmarks/test_examples_corpus.py -n 2

DIR: a folder of examples (examples/**/example_*.py), default TileLang's examples/ from the mirror
(TILELANG_MIRROR), extracted once into the temp folder. A test passes when the example lowered at
least one kernel, fails when tilelang.lower raised, and is skipped, with the reason, when the example
stopped before any kernel (it needs a GPU to build it), lowered none, or ran past LT_EXAMPLES_TIMEOUT
seconds (default 60).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from corpus_harness import run_example
from examples_corpus import MIRROR, example_key, extract, find_examples


def _examples_dir() -> str:
    given = os.environ.get("LT_EXAMPLES_DIR")
    if given:
        return given
    revision = subprocess.run(["git", "-C", MIRROR, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    folder = os.path.join(tempfile.gettempdir(), f"lt-tilelang-examples-{revision[:12]}")
    if not os.path.isdir(folder):  # xdist workers collect at once: extract beside, then rename (one wins)
        scratch = tempfile.mkdtemp(prefix="lt-tilelang-examples-")
        extract(scratch)
        try:
            os.rename(scratch, folder)
        except OSError:
            shutil.rmtree(scratch, ignore_errors=True)
    return os.path.join(folder, "examples")


EXAMPLES = find_examples([_examples_dir()])


@pytest.mark.parametrize("example", EXAMPLES, ids=[example_key(e) for e in EXAMPLES])
def test_example_lowers(example: str, tmp_path) -> None:
    result = run_example(example, str(tmp_path), timeout=float(os.environ.get("LT_EXAMPLES_TIMEOUT", "60")))
    assert result.status != "lower-failed", f"tilelang.lower raised: {result.reason}"
    if result.status != "lowered":
        pytest.skip(f"{result.status}: {result.reason}")
    assert all(kernel.sha256 for kernel in result.kernels)


TWO_KERNELS = '''
import json, sys
import torch
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def scale(N, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] * 2
    return main


@tilelang.jit(out_idx=[-2, -1])
def split(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "bfloat16"), C: T.Tensor((N, 2), "int32")):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i]
                C[bx * 128 + i, 0] = 1
                C[bx * 128 + i, 1] = 2
    return main


b = scale(256)(torch.randn(256, dtype=torch.float16, device="cuda"))
c, d = split(512)(torch.randn(512, device="cuda"))
torch.testing.assert_close(b, torch.ones(256, dtype=torch.float16))  # would fail: the stand-in's check passes
with open(sys.argv[0] + ".seen.json", "w") as out:
    json.dump([[list(t.shape), str(t.dtype), bool((t == 0).all())] for t in (b, c, d)], out)
'''


def test_stand_in_returns_zero_outputs_so_later_kernels_compile(tmp_path) -> None:
    """A launch returns zeros shaped and typed as the out_idx buffers; the example goes on to its next kernel."""
    import json

    example = tmp_path / "example_two_kernels.py"
    example.write_text(TWO_KERNELS)
    result = run_example(str(example), str(tmp_path / "sources"), timeout=120)
    assert result.status == "lowered", result.reason
    assert [k.name for k in result.kernels] == ["main", "main"] and all(k.sha256 and k.tir_sha256 for k in result.kernels)
    seen = json.loads((tmp_path / "example_two_kernels.py.seen.json").read_text())
    assert seen == [[[256], "torch.float16", True], [[512], "torch.bfloat16", True], [[512, 2], "torch.int32", True]]
