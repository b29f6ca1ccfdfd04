"""Launch capture (integrations/adapters/launches.py) on real kernels compiled for target "c" and run
on CPU tensors. What is recorded is held to torch's own view of each tensor, and each digest to one
computed here from the tensor's bytes (numpy's tobytes); the kernels' results to torch's arithmetic,
and every call's result to the same call untraced."""

import hashlib
import sys

import pytest

pytest.importorskip("tilelang")
torch = pytest.importorskip("torch")

import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402
from tilelang.jit.kernel import JITKernel  # noqa: E402

import kernels  # noqa: E402
import lower_trace  # noqa: E402


def digest(tensor):
    return hashlib.blake2b(tensor.contiguous().numpy().tobytes(), digest_size=16).hexdigest()


def scale_by(N=32):
    @T.prim_func
    def scale_by(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32"), f: T.float32):
        with T.Kernel(1) as _:
            for i in T.serial(N):
                C[i] = A[i] * f

    return scale_by


def here():
    return f"{__file__}:{sys._getframe(1).f_lineno + 1}"  # the caller's next line


def test_each_launch_is_recorded_as_torch_sees_its_tensors(tmp_path):
    a, b = torch.arange(64, dtype=torch.float32), torch.ones(64)
    original_call = JITKernel.__call__
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
        c = torch.full((64,), -1.0)
        c_before = digest(c)
        site = here()
        returned = add(a, b, c)
        add(a, b, c)  # the same values written again: no change
    assert torch.equal(c, a + b)
    assert JITKernel.__call__ is original_call  # put back exactly
    assert returned == add(a, b, torch.empty(64))  # what an untraced call returns ([] on 0.1.15)
    (kernel,) = lower_trace.load_trace(run.run_dir).kernels
    first, second = kernel.launches
    assert (first.kernel, first.n, second.n, first.site, first.error) == (kernel.kernel_id, 1, 2, site, None)
    assert first.ms > 0
    assert [v.name for v in first.args] == ["A", "B", "C"]  # the kernel's parameters (kernels.py)
    for value, tensor, before in zip(first.args, (a, b, c), (digest(a), digest(b), c_before), strict=True):
        assert (value.kind, value.shape, value.dtype, value.strides, value.device) == ("tensor", tuple(tensor.shape), "float32", tensor.stride(), "cpu")
        assert value.digest == before
    after = {v.name: v.digest for v in first.after}
    assert after == {"A": digest(a), "B": digest(b), "C": digest(a + b)}  # C written with torch's sum
    assert [v.digest for v in second.args] == [digest(a), digest(b), digest(a + b)]


def test_an_out_idx_kernel_records_its_scalar_and_what_it_returned(tmp_path):
    a = torch.linspace(-2, 2, 32)
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        scale = tilelang.compile(scale_by(), out_idx=[1], target="c", execution_backend="cython")
        out = scale(a, 2.5)
    assert torch.equal(out, a * 2.5) and torch.equal(scale(a, 2.5), out)  # untraced: the same numbers
    (launch,) = lower_trace.load_trace(run.run_dir).kernels[0].launches
    assert [(v.name, v.kind) for v in launch.args] == [("A", "tensor"), ("f", "scalar")]  # C is TileLang's to allocate
    assert launch.args[1].value == 2.5
    assert [(v.name, v.digest) for v in launch.after] == [("A", digest(a)), ("return", digest(a * 2.5))]


def test_a_launch_that_raises_is_recorded_and_the_caller_gets_the_same_error(tmp_path):
    a = torch.arange(128, dtype=torch.float32)[::2]  # 64 values, stride 2: TileLang wants contiguous
    add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
    with pytest.raises(ValueError) as untraced:
        add(a, torch.ones(64), torch.empty(64))
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
        with pytest.raises(ValueError) as traced:
            add(a, torch.ones(64), torch.empty(64))
    assert str(traced.value) == str(untraced.value)
    (launch,) = lower_trace.load_trace(run.run_dir).kernels[0].launches
    assert launch.error is not None and launch.error.type == "ValueError" and launch.error.message == str(untraced.value)
    assert launch.args[0].strides == a.stride() == (2,) and launch.args[0].digest == digest(a)
    assert launch.after == ()


def test_the_first_launches_are_kept_and_off_keeps_none(run_python, tmp_path):
    script = """
        import torch, tilelang, lower_trace, kernels
        add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
        a, c = torch.arange(64, dtype=torch.float32), torch.empty(64)
        for i in range(5):
            add(a, torch.full((64,), float(i)), c)
        print("SUM", float(c.sum()))
    """
    counts = {}
    for setting in ("meta:2", "off", "meta", "everything"):
        trace_dir = tmp_path / setting.replace(":", "_")
        proc = run_python(script, env={"TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_DIR": str(trace_dir), "TL_LOWER_TRACE_LAUNCHES": setting})
        assert f"SUM {float((torch.arange(64) + 4.0).sum())}" in proc.stdout  # the last launch's result, as torch adds
        (kernel,) = lower_trace.load_trace(str(trace_dir)).kernels
        counts[setting] = [launch.n for launch in kernel.launches]
        said = [line for line in proc.stderr.splitlines() if "TL_LOWER_TRACE_LAUNCHES" in line]
        assert len(said) == (1 if setting == "everything" else 0), proc.stderr
    assert counts == {"meta:2": [1, 2], "off": [], "meta": [1, 2, 3, 4, 5], "everything": [1, 2, 3, 4, 5]}


def test_each_run_counts_its_own_launches(tmp_path):
    """A run's kernel ids start at k1 again (a run per test under pytest --lower-trace, reset()): the limit
    is counted per run, so a later run records its kernels' first launches too."""
    a = torch.arange(64, dtype=torch.float32)
    recorded = []
    for round_ in range(3):
        with lower_trace.trace(mode="trace", trace_dir=tmp_path / str(round_)) as run:
            add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
            for _ in range(10):
                add(a, a, torch.empty(64))
        recorded.append([launch.n for launch in lower_trace.load_trace(run.run_dir).kernels[0].launches])
    assert recorded == [list(range(1, 9))] * 3
