"""Real TileLang 0.1.15 compiles, traced in-process through the public API."""

import json
import os
import re
import zlib

import pytest

import kernels
import lower_trace
from lower_trace.model import KernelStatus, PassStatus, source_key, spans_key

KNOWN_PHASES = {"semantic_check", "pipeline_cuda", "pipeline_c", "host_device_split", "device_codegen_prep", "host_codegen_prep"}


def traced(tmp_path, build, lower, mode="html"):
    with lower_trace.trace(mode=mode, trace_dir=tmp_path) as run:
        artifact = lower(build())
    return lower_trace.load_trace(run.run_dir), artifact


def test_gemm_every_pass_nested_passes_phases_and_codegen(tmp_path, lower_cuda):
    trace, artifact = traced(tmp_path, kernels.gemm, lower_cuda)
    (kernel,) = trace.kernels
    assert kernel.name == "gemm" and kernel.status is KernelStatus.OK
    assert kernel.target == "cuda -arch=sm_90a" and kernel.entry == "lower"
    # A TVM PassInstrument sees 85 pass events for this GEMM, nested ones included.
    assert len(kernel.passes) == 85
    assert [p.seq for p in kernel.passes] == list(range(85))
    by_name = {}
    for record in kernel.passes:
        by_name.setdefault(record.name, []).append(record)
    (split,) = by_name["tl.SplitHostDevice"]
    (ssa,) = by_name["tirx.ConvertSSA"]
    assert ssa.depth == 1 and ssa.parent == split.seq and split.depth == 0
    (tile_op,) = by_name["tl.LowerTileOp"]
    nested = [p for p in kernel.passes if p.parent == tile_op.seq]
    assert [p.name for p in nested] == ["tl.LetInline", "tl.Simplify"]
    # Every pass has a phase, and the ones outside TileLang's pipeline are placed.
    assert {p.phase for p in kernel.passes} <= KNOWN_PHASES
    assert [p.phase for p in kernel.passes[:3]] == ["semantic_check"] * 3
    assert [p.phase for p in kernel.passes[-5:]] == ["host_device_split"] * 2 + ["device_codegen_prep"] * 3
    # Anonymous `pass_fn` passes are named after the factory that made them.
    assert "pass_fn" not in by_name
    assert {"NestedLoopChecker", "ParallelLocalIndexChecker", "FragmentLoopChecker", "HoistBroadcastValues"} <= set(by_name)
    # Statuses follow the IR: a changed pass has a different snapshot.
    for record in kernel.passes:
        assert record.status in (PassStatus.CHANGED, PassStatus.UNCHANGED)
        assert (record.before != record.after) == (record.status is PassStatus.CHANGED)
        assert record.ms >= 0
    assert 20 <= kernel.changed_count < 85
    assert "T.Pipelined" not in trace.snapshot(kernel.passes[-1].after)
    assert 'annotations={"num_stages": 3}' in trace.snapshot(kernel.passes[3].before)
    # The device codegen step: final TIR in, CUDA out -- the very source TileLang returned.
    (codegen,) = kernel.codegen
    assert codegen.role == "device" and codegen.language == "cuda" and codegen.seq == 85
    assert codegen.function == "target.build.tilelang_cuda_without_compile"
    assert trace.snapshot(codegen.source) == artifact.kernel_source
    assert "__global__" in artifact.kernel_source
    assert trace.snapshot(codegen.tir) == trace.snapshot(kernel.passes[-1].after)


def test_each_distinct_snapshot_is_stored_once(tmp_path, lower_cuda):
    trace, _ = traced(tmp_path, kernels.gemm, lower_cuda)
    (kernel,) = trace.kernels
    (codegen,) = kernel.codegen
    digests = {p.before for p in kernel.passes} | {p.after for p in kernel.passes} | {codegen.source, codegen.line_map}
    with open(os.path.join(trace.path, "snapshots.jsonl")) as pack:
        stored = [json.loads(line)["digest"] for line in pack]
    assert len(set(stored)) == len(stored)
    # Beside the snapshots: the spans of the TIR ones, and the user's files the kernel was written in.
    spans = {spans_key(d) for d in digests} & set(stored)
    sources = {key for key in stored if key.startswith(source_key(""))}
    assert sorted(set(stored) - spans - sources) == sorted(digests)
    assert spans_key(kernel.passes[0].before) in spans and spans_key(codegen.source) not in spans
    assert source_key(kernels.__file__) in sources
    texts = [trace.snapshot(d) for d in digests]
    assert len(set(texts)) == len(texts)


def test_the_snapshot_pack_is_compressed(tmp_path, lower_cuda):
    """Format 2: a GEMM's snapshots and their spans take under a sixth of their text on disk (one
    deflate stream finds what consecutive snapshots share), and read back exactly. The user's kernel
    file stored beside them costs no more than it does compressed on its own."""
    trace, _ = traced(tmp_path, kernels.gemm, lower_cuda)
    with open(os.path.join(trace.path, "snapshots.jsonl")) as pack:
        digests = [json.loads(line)["digest"] for line in pack]
    sources = [d for d in digests if d.startswith(source_key(""))]
    assert sources == [source_key(kernels.__file__)]
    with open(kernels.__file__, "rb") as file:
        assert trace.snapshot(sources[0]).encode() == file.read()
        alone = len(zlib.compress(trace.snapshot(sources[0]).encode(), 9))
    texts = [trace.snapshot(d) for d in digests if d not in sources]
    assert len(texts) > 30 and all(texts)
    assert os.path.getsize(os.path.join(trace.path, "snapshots.jsonl")) < sum(len(t) for t in texts) / 6 + alone


@pytest.mark.parametrize("name", ["elementwise", "row_sum", "flash_attention"])
def test_other_kernels_trace_completely(tmp_path, lower_cuda, name):
    trace, artifact = traced(tmp_path, kernels.CUDA_KERNELS[name], lower_cuda)
    (kernel,) = trace.kernels
    assert kernel.status is KernelStatus.OK and len(kernel.passes) > 60
    assert {p.phase for p in kernel.passes} <= KNOWN_PHASES
    assert trace.snapshot(kernel.codegen[0].source) == artifact.kernel_source
    if name == "row_sum":
        assert any(p.name == "tl.LowerTileOp" and p.status is PassStatus.CHANGED for p in kernel.passes)
    if name == "flash_attention":
        assert "exp2" in artifact.kernel_source


def test_a_failing_pass_is_recorded_and_its_exception_reaches_the_caller(tmp_path, lower_cuda):
    with pytest.raises(Exception) as untraced:
        lower_cuda(kernels.nested_parallel())
    with pytest.raises(Exception) as traced_err, lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        lower_cuda(kernels.nested_parallel())
    # The caller sees exactly what it sees without tracing.
    assert type(traced_err.value) is type(untraced.value)
    assert str(traced_err.value) == str(untraced.value)
    trace = lower_trace.load_trace(run.run_dir)
    (kernel,) = trace.kernels
    assert kernel.status is KernelStatus.FAILED
    failed = [p for p in kernel.passes if p.status is PassStatus.FAILED]
    assert [p.name for p in failed] == ["NestedLoopChecker"]
    (record,) = failed
    assert record.error.type == type(untraced.value).__name__
    assert "Nested parallel loops are not allowed" in record.error.message
    assert "Traceback" in record.error.traceback and "nested_loop_checker.py" in record.error.traceback
    assert "for j in T.parallel(64)" in trace.snapshot(record.before)  # the IR it received
    assert record.after == ""


def test_terminal_mode_shows_a_failure_with_the_ir_it_received(tmp_path, lower_cuda, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TL_LOWER_TRACE_DIR", raising=False)
    lower_trace.enable(mode="terminal")
    with pytest.raises(ValueError):
        lower_cuda(kernels.nested_parallel())
    lower_trace.disable()
    err = capsys.readouterr().err
    assert "NestedLoopChecker  FAILED" in err and "ValueError: [Tilelang Semantic Check] Nested parallel" in err
    received = err.split("the IR this pass received", 1)[1]  # (with the origins of its lines, on 0.1.15)
    assert "for j in T.parallel(64)" in received
    assert "traced 1 kernel, 1 pass; 1 failed to compile (1 failed pass)" in err
    assert os.listdir(tmp_path) == []


def test_host_codegen_is_captured_apart_from_device_codegen(tmp_path, lower_cuda, tilelang, cuda_target):
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run, cuda_target:
        artifact = tilelang.lower(kernels.elementwise_add(), target=cuda_target, enable_host_codegen=True)
    (kernel,) = lower_trace.load_trace(run.run_dir).kernels
    trace = lower_trace.load_trace(run.run_dir)
    device, host = kernel.codegen
    assert (device.role, device.language) == ("device", "cuda")
    assert (host.role, host.function, host.language) == ("host", "target.build.tilelang_c_host", "c")
    assert trace.snapshot(device.source) == artifact.kernel_source
    assert "elementwise_add" in trace.snapshot(host.source) and "__global__" not in trace.snapshot(host.source)
    assert device.seq < host.seq
    assert "host_codegen_prep" in {p.phase for p in kernel.passes}


def test_terminal_mode_prints_diffs_and_writes_nothing(tmp_path, lower_cuda, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TL_LOWER_TRACE_DIR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    lower_trace.enable(mode="terminal")
    lower_cuda(kernels.elementwise_add())
    lower_trace.disable()
    err = capsys.readouterr().err
    assert "== lower-trace: kernel k1 elementwise_add  [cuda -arch=sm_90a]  82 passes" in err
    assert "tl.LayoutInference  changed  +" in err
    assert "@@ -" in err and "\n       +" in err and "\x1b[" not in err
    assert "device codegen" in err and "__global__" in err
    assert os.listdir(tmp_path) == []


def test_reset_starts_a_new_run_and_disable_restores_tilelang(tmp_path, lower_cuda, tilelang, capsys):
    from tilelang.instrumentation import session as tl_session

    cache_before = tilelang.is_cache_enabled()
    from tilelang.contrib import nvcc

    compile_cuda = nvcc.compile_cuda
    first = lower_trace.enable(mode="html", trace_dir=tmp_path)
    assert nvcc.compile_cuda is not compile_cuda  # TileLang's nvcc call is traced (the device stage) ...
    assert lower_trace.enable(mode="html", trace_dir=tmp_path) is first  # idempotent
    assert "lower-trace" in tl_session._tool_factories
    lower_cuda(kernels.elementwise_add())
    second = lower_trace.reset()
    lower_cuda(kernels.row_sum())
    assert lower_trace.reset() is not second  # a third run ...
    third = lower_trace.current_run()
    assert lower_trace.reset() is not third  # ... closed empty, and silently
    lower_trace.disable()
    lower_trace.disable()  # idempotent
    assert "lower-trace" not in tl_session._tool_factories
    assert nvcc.compile_cuda is compile_cuda  # ... and put back exactly
    assert tilelang.is_cache_enabled() == cache_before
    assert first.run_dir != second.run_dir
    assert "no kernel was compiled" not in capsys.readouterr().err
    assert [k.name for k in lower_trace.load_trace(first.run_dir).kernels] == ["elementwise_add"]
    assert [k.name for k in lower_trace.load_trace(second.run_dir).kernels] == ["row_sum"]
    for run in (first, second):
        assert os.path.isfile(os.path.join(run.run_dir, "report.html"))


def test_jit_compile_of_c_kernels_is_traced_and_runs(tmp_path, tilelang):
    torch = pytest.importorskip("torch")
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
        scale = tilelang.compile(kernels.scale_c(), target="c", execution_backend="cython")
    a = torch.arange(64, dtype=torch.float32)
    c = torch.empty(64)
    add(a, torch.ones(64), c)
    assert torch.equal(c, a + 1)
    scale(a, c)
    assert torch.equal(c, a * 3)
    trace = lower_trace.load_trace(run.run_dir)
    assert [k.name for k in trace.kernels] == ["vector_add", "scale"]
    # The kernels' own statements (kernels.py: C[i] = A[i] + B[i]; C[i] = A[i] * 3.0), as C writes them.
    statements = {"vector_add": "C[i]=A[i]+B[i];", "scale": "C[i]=A[i]*3.000000e+00f;"}
    for kernel, jit in zip(trace.kernels, (add, scale), strict=True):
        assert kernel.status is KernelStatus.OK and kernel.entry == kernel.name  # named by TileLang's JIT session
        assert kernel.target == "c"
        (codegen,) = kernel.codegen
        assert codegen.language == "c" and codegen.function == "target.build.tilelang_c"
        source = trace.snapshot(codegen.source)
        assert source == jit.get_kernel_source()  # the source TileLang compiled, as TileLang gives it
        assert statements[kernel.name] in re.sub(r"[\s()]", "", source)


def test_unwritable_trace_dir_warns_once_and_compiles_the_same_kernel(tmp_path, lower_cuda, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    untraced = lower_cuda(kernels.elementwise_add()).kernel_source
    lower_trace.enable(mode="html", trace_dir=blocker)
    traced_source = lower_cuda(kernels.elementwise_add()).kernel_source
    again = lower_cuda(kernels.row_sum()).kernel_source
    lower_trace.disable()
    assert traced_source == untraced and "__global__" in again
    err = capsys.readouterr().err
    assert err.count("cannot write the trace") == 1
    assert "your compile goes on" in err


@pytest.mark.tracer_fault_expected
def test_a_failing_printer_warns_once_and_compiles_the_same_kernel(monkeypatch, tmp_path, lower_cuda, capsys):
    from lower_trace.integrations.ir_reading import tvm_ir

    def broken(self, mod):
        raise RuntimeError("printer exploded")

    untraced = lower_cuda(kernels.gemm()).kernel_source
    monkeypatch.setattr(tvm_ir.TVMIR, "print_ir", broken)
    lower_trace.enable(mode="html", trace_dir=tmp_path)
    traced_source = lower_cuda(kernels.gemm()).kernel_source
    lower_trace.disable()
    assert traced_source == untraced
    err = capsys.readouterr().err
    assert err.count("internal error") == 1 and "printer exploded" in err
    # The one line names the file that keeps every occurrence's traceback, for a bug report.
    (faults,) = tmp_path.glob("*/run-*/tracer-faults.txt")
    assert str(faults) in err and "please report it" in err, err
    kept = faults.read_text()
    assert "Traceback (most recent call last)" in kept and "RuntimeError: printer exploded" in kept and "in broken" in kept


@pytest.mark.parametrize("name", ["gemm", "flash_attention"])
def test_snapshots_match_what_an_independent_printer_sees(tmp_path, lower_cuda, name):
    """Ground truth: a second instrument prints the module at every callback. Our
    cheap capture (identity and structural checks) must agree with it on every pass,
    also where a pass updates the module object in place (tl.SplitHostDevice does)."""
    from tilelang import instrumentation as tl_instr
    from tilelang import tvm

    seen = []

    @tvm.ir.instrument.pass_instrument
    class PrintEverything:
        def __init__(self):
            self.stack = []

        def run_before_pass(self, mod, info):
            self.stack.append(len(seen))
            seen.append([str(info.name), mod.script(), None, calling_line()])

        def run_after_pass(self, mod, info):
            seen[self.stack.pop()][2] = mod.script()

    class Probe(tl_instr.PassInstrumentationTool):
        def create_pass_instrument(self):
            return PrintEverything()

    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        tl_instr.register_pass_instrumentation_tool("ground-truth", Probe)
        try:
            lower_cuda(kernels.CUDA_KERNELS[name]())
        finally:
            tl_instr.unregister_pass_instrumentation_tool("ground-truth")
    trace = lower_trace.load_trace(run.run_dir)
    (kernel,) = trace.kernels
    assert len(kernel.passes) == len(seen)
    renamed = 0
    for record, (raw_name, before, after, line) in zip(kernel.passes, seen, strict=False):
        if raw_name == "pass_fn" and line:
            # A pass made from a plain function: named after the factory TileLang called on the line
            # that ran it (that line's text, read here by this test's own walk of the stack).
            assert record.name.rsplit(".", 1)[-1] in line, (record.name, line)
            renamed += 1
        else:
            assert record.name == raw_name
        assert trace.snapshot(record.before) == before, record.name
        assert trace.snapshot(record.after) == after, record.name
        assert (record.status is PassStatus.CHANGED) == (before != after), record.name
    assert renamed > 0  # TileLang runs some: the check above did run
    split = next(p for p in kernel.passes if p.name == "tl.SplitHostDevice")
    assert split.status is PassStatus.CHANGED


def calling_line():
    """The text of the line, in TileLang's own code, that ran the pass being entered: the first
    frame up the stack outside TVM's pass machinery and this test."""
    import inspect
    import linecache

    for frame in inspect.stack(context=0)[2:]:
        path = frame.filename.replace(os.sep, "/")
        if "/tilelang/" in path and "/tvm/" not in path and "/3rdparty/" not in path and "instrument" not in path:
            return linecache.getline(frame.filename, frame.lineno).strip()
    return ""
