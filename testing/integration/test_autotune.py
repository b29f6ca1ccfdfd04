"""Autotune-shaped compiles (issue 9, item 2): traces stay correct per kernel when TileLang's
autotuner compiles configs concurrently in its thread pool, when one grouped compile session
lowers several kernels, and when `@tilelang.jit` kernels are specialised from several threads.

Everything here runs TileLang's own functions on the CPU: `AutoTuner.run` with target "c" and
the cython backend (compile pool and wall-clock benchmark), the grouped CUDA + tvm_ffi compile
(`compile_grouped_unit_tvm_ffi`, nvcc included; only running the kernels needs a GPU),
`JITImpl.par_compile`, and jitted kernels executed with CPU torch tensors.

Ground truth never comes from lower-trace itself: the same configs compiled one after another
in a separate run, TileLang's return values (kernel sources, device modules), and a second
instrumentation tool registered through TileLang's public API that prints the IR around every
pass of every PassContext it is given.
"""

import contextlib
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import kernels
import lower_trace
from lower_trace.model import KernelStatus, PassStatus

WORKERS = 4
N = 2520  # divisible by every block size below: 105, 63, 45, 35 tiles
BLOCKS = (24, 40, 56, 72)
# The autotuner's configs, a failing one among the first WORKERS (compiled concurrently).
CONFIGS = [{"block": 24}, {"block": 40}, {"block": 8, "nested": True}, {"block": 56}, {"block": 72}]


@pytest.fixture
def no_kernel_cache(tilelang):
    """Untraced compiles must compile too (and leave nothing in the user's cache)."""
    was_enabled = tilelang.is_cache_enabled()
    tilelang.disable_cache()
    yield
    if was_enabled:
        tilelang.enable_cache()


@pytest.fixture
def quiet_autotuner(tilelang, monkeypatch):
    """AutoTuner.run adds an autotuner.log in the working directory and a stdout handler."""
    from tilelang.autotuner import tuner

    monkeypatch.setattr(tuner, "_logger_handlers_initialized", True)
    return tuner


# --- helpers -----------------------------------------------------------------------------


class _Gate:
    """Holds the first `count` arrivals until all of them are there, then lets everyone through:
    the configs they elaborate are then compiled at the same time, not one after another."""

    def __init__(self, count):
        self._left = count
        self._lock = threading.Lock()
        self._open = threading.Event()
        self.threads = set()

    def arrive(self):
        with self._lock:
            self.threads.add(threading.get_ident())
            self._left -= 1
            if self._left <= 0:
                self._open.set()
        if not self._open.wait(60):
            raise TimeoutError("the autotuner never ran these configs at the same time")


_gate = None


def _wait_at_gate():
    gate = _gate
    if gate is not None and threading.current_thread() is not threading.main_thread():
        gate.arrive()  # (the autotuner also elaborates the first config in the main thread)


def autotune_axpy(N=N, block=24, nested=False):
    """The function the autotuner elaborates per config (AutoTuner(fn, configs)). In its pool
    threads it waits at the gate, so the first configs are compiled concurrently."""
    _wait_at_gate()
    return kernels.tiled_axpy(N=N, block=block, nested=nested)


def grouped_scaled_add(M=256, N=256, factor=3.0, block_M=32, block_N=32):
    """The same for a CUDA kernel compiled in grouped units: the units start together."""
    _wait_at_gate()
    return kernels.scaled_add(M=M, N=N, factor=factor, block_M=block_M, block_N=block_N)


@contextlib.contextmanager
def gated(count):
    global _gate
    _gate = _Gate(count)
    try:
        yield _gate
    finally:
        _gate = None


def cpu_tuner(configs):
    """TileLang's AutoTuner as `AutoTuner.from_kernel(...).set_compile_args(...)` sets it up, for
    target "c": compiles in its thread pool (WORKERS threads), benchmarks on the CPU wall clock."""
    torch = pytest.importorskip("torch")
    from tilelang.autotuner import AutoTuner

    tuner = AutoTuner.from_kernel(autotune_axpy, configs).set_compile_args(target="c", execution_backend="cython")
    tuner.set_profile_args(
        supply_prog=lambda params: [torch.ones(N), torch.ones(N), torch.empty(N)],
        skip_check=True,
        backend="wall",
    )
    tuner._resolve_num_compile_workers = lambda: WORKERS  # this machine has fewer cores than that
    return tuner


def rows(kernel):
    """What must not depend on concurrency: each pass's name, outcome, nesting and phase."""
    return [(p.name, p.status, p.depth, p.parent, p.phase, p.caller) for p in kernel.passes]


def texts(trace, kernel):
    return [(trace.snapshot(p.before), trace.snapshot(p.after)) for p in kernel.passes]


def assert_well_formed(kernel):
    """One kernel's passes: numbered 0.. without gaps or repeats except where codegen took a
    number, nested with each child right under a parent of the same kernel."""
    seqs = [p.seq for p in kernel.passes] + [c.seq for c in kernel.codegen]
    assert sorted(seqs) == list(range(len(seqs))), kernel.kernel_id
    by_seq = {p.seq: p for p in kernel.passes}
    for record in kernel.passes:
        assert record.kernel == kernel.kernel_id
        if record.parent is None:
            assert record.depth == 0
        else:
            parent = by_seq[record.parent]
            assert parent.seq < record.seq and record.depth == parent.depth + 1
    for codegen in kernel.codegen:
        assert codegen.kernel == kernel.kernel_id


def in_flight(kernel_traces):
    """The most compiles that were running at one moment."""
    events = sorted(e for k in kernel_traces for e in ((k.started, 1), (k.started + k.ms / 1000.0, -1)))
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


def blocks_in(text):
    """The block sizes whose tile literal (`bx * 40`) appear in a tiled_axpy IR or C text."""
    return {int(b) for b in re.findall(r"bx \* (\d+)", text)}


# --- the autotuner's thread pool (target "c") -------------------------------------------


def test_autotuner_pool_traces_each_config_as_its_own_kernel(tmp_path, tilelang, no_kernel_cache, quiet_autotuner):
    """AutoTuner.run compiles every config in its ThreadPoolExecutor (one `tilelang.compile`, one
    TileLang compile session, per config and thread) and benchmarks the results. Traced, each
    config is one kernel whose passes, snapshots and source are exactly those of the same config
    compiled alone."""
    # Ground truth: the autotuner's own per-config compile (CompileArgs.compile_program), one
    # config after another, in a run of its own.
    compile_args = cpu_tuner(CONFIGS).compile_args
    alone, sources = {}, {}
    with lower_trace.trace(mode="html", trace_dir=tmp_path / "alone") as run:
        for config in CONFIGS:
            if config.get("nested"):
                with pytest.raises(ValueError, match="Nested parallel loops"):
                    compile_args.compile_program(kernels.tiled_axpy(N=N, **config))
            else:
                sources[config["block"]] = compile_args.compile_program(kernels.tiled_axpy(N=N, **config)).get_kernel_source()
    alone_trace = lower_trace.load_trace(run.run_dir)
    for config, kernel in zip(CONFIGS, sorted(alone_trace.kernels, key=lambda k: int(k.kernel_id[1:])), strict=False):
        alone["nested" if config.get("nested") else config["block"]] = kernel

    tuner = cpu_tuner(CONFIGS)
    with gated(WORKERS) as gate, lower_trace.trace(mode="html", trace_dir=tmp_path / "tuned") as run:
        result = tuner.run(warmup=1, rep=2, timeout=0)
    assert len(gate.threads) == WORKERS  # the configs were elaborated in WORKERS pool threads at once
    assert result.config["block"] in BLOCKS

    trace = lower_trace.load_trace(run.run_dir)
    assert len(trace.kernels) == len(CONFIGS)
    assert sorted(k.kernel_id for k in trace.kernels) == sorted(f"k{i}" for i in range(1, len(CONFIGS) + 1))
    assert {k.name for k in trace.kernels} == {"tiled_axpy"} and {k.entry for k in trace.kernels} == {"tiled_axpy"}
    # Really concurrent: the first WORKERS configs (the failing one among them, done within
    # milliseconds) were compiled at the same time.
    assert in_flight(trace.kernels) >= WORKERS - 1

    failed = [k for k in trace.kernels if k.status is KernelStatus.FAILED]
    assert len(failed) == 1
    (bad,) = failed
    assert rows(bad) == rows(alone["nested"]) and texts(trace, bad) == texts(alone_trace, alone["nested"])
    assert [p.status for p in bad.passes] == [PassStatus.FAILED] and bad.passes[0].name == "NestedLoopChecker"
    assert bad.error.type == "ValueError" and "Nested parallel loops" in bad.error.message
    assert bad.codegen == ()

    seen = {}
    for kernel in trace.kernels:
        assert_well_formed(kernel)
        if kernel is bad:
            continue
        assert kernel.status is KernelStatus.OK and kernel.target == "c"
        (block,) = blocks_in(trace.snapshot(kernel.passes[-1].after))
        assert block not in seen, f"two kernels hold config block={block}"
        seen[block] = kernel
        solo = alone[block]
        # The same passes, in the same order, nesting and phases, with the same outcomes ...
        assert rows(kernel) == rows(solo)
        # ... on the same IR: every snapshot is this config's, none another config's.
        assert texts(trace, kernel) == texts(alone_trace, solo)
        for before, after in texts(trace, kernel):  # (the host part after the split has no tiles)
            assert blocks_in(before) <= {block} and blocks_in(after) <= {block}
        (codegen,) = kernel.codegen
        assert (codegen.role, codegen.language, codegen.function) == ("device", "c", "target.build.tilelang_c")
        assert trace.snapshot(codegen.source) == sources[block]  # what TileLang compiled for it
        assert trace.snapshot(codegen.tir) == trace.snapshot(kernel.passes[-1].after)
        assert blocks_in(sources[block]) == {block}
    assert sorted(seen) == sorted(BLOCKS)
    # Nothing lost, nothing twice: the passes add up to the configs compiled alone.
    assert sum(len(k.passes) for k in trace.kernels) == sum(len(k.passes) for k in alone_trace.kernels)
    # The tuned kernel is the traced one of its config.
    best = seen[result.config["block"]]
    assert result.kernel.get_kernel_source() == trace.snapshot(best.codegen[0].source)
    assert os.path.isfile(os.path.join(run.run_dir, "report.html"))


# --- one grouped compile session, several kernels (CUDA + tvm_ffi, nvcc) -------------------


class _Witness:
    """Ground truth for compile sessions: a TileLang instrumentation tool (one per session, as
    TileLang makes them) that prints the module before and after every pass of every PassContext
    it is asked to instrument, labelled as TileLang labels the context, and keeps the source of
    every codegen call."""

    def __init__(self):
        self.sessions = []
        self._lock = threading.Lock()

    def register(self):
        from tilelang import instrumentation as tl_instr
        from tilelang import tvm

        witness = self

        @tvm.ir.instrument.pass_instrument
        class PrintEveryPass:
            def __init__(self, passes):
                self.passes = passes
                self.stack = []

            def run_before_pass(self, mod, info):
                self.stack.append(len(self.passes))
                self.passes.append([str(info.name), mod.script(), None])

            def run_after_pass(self, mod, info):
                self.passes[self.stack.pop()][2] = mod.script()

        class Tool(tl_instr.PassInstrumentationTool):
            def __init__(self):
                self.contexts = []  # (label, [[name, before, after]])
                self.codegen = []  # (function, names in the module, source)
                with witness._lock:
                    witness.sessions.append(self)

            def create_pass_instrument(self):
                passes = []
                self.contexts.append((tl_instr.current_pass_instrument_context(), passes))
                return PrintEveryPass(passes)

            def run_codegen(self, event, next_call):
                result = next_call()
                names = sorted(gv.name_hint for gv in event.mod.get_global_vars())
                self.codegen.append((str(event.name), names, result.inspect_source()))
                return result

        tl_instr.register_pass_instrumentation_tool("ground-truth", Tool)

    @staticmethod
    def unregister():
        from tilelang import instrumentation as tl_instr

        tl_instr.unregister_pass_instrumentation_tool("ground-truth")

    @staticmethod
    def passes_of(tool, label_test):
        return [p for label, passes in tool.contexts if label_test(label or "") for p in passes]


def cuda_compile_args():
    from tilelang.autotuner.param import CompileArgs
    from tilelang.backend.module import create_backend_context

    context = create_backend_context({"kind": "cuda", "arch": "sm_90a"}, None, "tvm_ffi")
    return CompileArgs(
        out_idx=None,
        target=context.target,
        execution_backend=context.execution_backend.name,
        target_host=context.target_host,
        verbose=False,
        pass_configs=None,
    )


def grouped_elaborate(nested=False, **config):
    return kernels.nested_parallel() if nested else kernels.scaled_add(M=256, N=256, **config)


def assert_matches_witness(trace, kernel, expected):
    """The kernel's passes are exactly the witnessed ones: names (TileLang's anonymous `pass_fn`
    is named after its factory by lower-trace), and the IR before and after each."""
    assert len(kernel.passes) == len(expected), (kernel.name, len(kernel.passes), len(expected))
    for record, (name, before, after) in zip(kernel.passes, expected, strict=False):
        assert record.name == name or name == "pass_fn", (record.name, name)
        assert trace.snapshot(record.before) == before, record.name
        if after is None:
            assert record.status is PassStatus.FAILED and record.after == ""
        else:
            assert trace.snapshot(record.after) == after, record.name
            assert (record.status is PassStatus.CHANGED) == (before != after), record.name


def check_grouped_unit(trace, tool, unit, sources=None):
    """One grouped compile session of TileLang: per config, a lower and a host PassContext of its
    own (labelled `kernel=<symbol>_gc_<idx>`), then one device PassContext and one codegen for
    the merged device module of the whole unit. Traced: a kernel per config with its own passes
    and host codegen, and one kernel for the merged device module that says which kernels it holds."""
    by_name = {k.name: k for k in trace.kernels}
    lowered = []
    for idx, config in unit:
        symbol = f"{'nested_parallel' if config.get('nested') else 'scaled_add'}_gc_{idx}"
        assert symbol in by_name, f"no kernel record for {symbol}: {sorted(by_name)}"
        kernel = by_name[symbol]
        assert kernel.entry == "grouped-tvm-ffi"
        assert_well_formed(kernel)
        expected = _Witness.passes_of(tool, lambda label, s=symbol: f"kernel={s}" in label)
        assert_matches_witness(trace, kernel, expected)
        if config.get("nested"):
            assert kernel.status is KernelStatus.FAILED
            assert [p.name for p in kernel.passes if p.status is PassStatus.FAILED] == ["NestedLoopChecker"]
            assert kernel.error.type == "ValueError" and "Nested parallel loops" in kernel.error.message
            assert kernel.codegen == ()
            continue
        lowered.append(symbol)
        assert kernel.status is KernelStatus.OK
        (host,) = kernel.codegen
        assert (host.role, host.function, host.language) == ("host", "target.build.tilelang_c_host", "c")
        (witnessed,) = [src for fn, names, src in tool.codegen if names == [symbol]]
        assert trace.snapshot(host.source) == witnessed
        assert f"{symbol}_kernel" in witnessed
    # The merged device module: a record of its own, named (as any module of several functions
    # is) after every kernel it holds.
    held = {f"{symbol}_kernel" for symbol in lowered}
    (device_kernel,) = [k for k in trace.kernels if set(k.name.split("+")) == held]
    assert device_kernel.entry == "grouped-tvm-ffi"
    assert device_kernel.status is KernelStatus.OK
    assert_well_formed(device_kernel)
    assert_matches_witness(trace, device_kernel, _Witness.passes_of(tool, lambda label: label.startswith("stage=grouped-device")))
    (device,) = device_kernel.codegen
    assert (device.role, device.function, device.language) == ("device", "target.build.tilelang_cuda", "cuda")
    (witnessed,) = [src for fn, names, src in tool.codegen if fn == "target.build.tilelang_cuda"]
    source = trace.snapshot(device.source)
    assert source == witnessed and (sources is None or source == sources)
    for symbol in lowered:
        assert f"void __launch_bounds__(128, 1) {symbol}_kernel(" in source
    return device_kernel


def test_a_grouped_compile_traces_each_kernel_of_the_group(tmp_path, tilelang, no_kernel_cache):
    """TileLang's grouped compile (the autotuner's CUDA + tvm_ffi path) lowers every config of a
    unit in one compile session and compiles their device code as one module with nvcc. One
    config fails its semantic check: TileLang keeps going and hands that error back per config."""
    from tilelang.autotuner.grouped_compile import compile_grouped_unit_tvm_ffi

    unit = [(0, dict(block_M=32, block_N=32)), (1, dict(nested=True)), (2, dict(block_M=64, block_N=16, factor=5.0))]
    witness = _Witness()
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        witness.register()
        try:
            results = compile_grouped_unit_tvm_ffi(unit, cuda_compile_args(), grouped_elaborate)
        finally:
            witness.unregister()
    results = {idx: (kernel, error) for idx, _, kernel, error in results}
    assert isinstance(results[1][1], ValueError) and results[1][0] is None
    assert results[0][1] is None and results[2][1] is None
    artifact = results[0][0].artifact
    assert artifact.kernel_source == results[2][0].artifact.kernel_source  # one device module for the unit

    (tool,) = witness.sessions
    trace = lower_trace.load_trace(run.run_dir)
    # A kernel per config, and one for the merged device module.
    assert len(trace.kernels) == len(unit) + 1, [k.name for k in trace.kernels]
    assert [k for k in trace.kernels if any(c.role == "device" for c in k.codegen)] == [k for k in trace.kernels if "+" in k.name]
    check_grouped_unit(trace, tool, unit, sources=artifact.kernel_source)
    # Each config's device TIR, as TileLang returned it, is what its own last lowering pass made.
    by_name = {k.name: k for k in trace.kernels}
    for idx in (0, 2):
        kernel = by_name[f"scaled_add_gc_{idx}"]
        lowering = _Witness.passes_of(tool, lambda label, i=idx: label.startswith(f"stage=grouped-lower, config={i},"))
        assert trace.snapshot(kernel.passes[len(lowering) - 1].after) == results[idx][0].artifact.device_mod.script()
    assert str(results[1][1]) == by_name["nested_parallel_gc_1"].error.message


def test_grouped_units_compiled_concurrently_by_the_autotuner(tmp_path, tilelang, no_kernel_cache, quiet_autotuner):
    """AutoTuner.run with enable_grouped_compile: units of two configs, each a grouped compile
    session, compiled concurrently in its pool. Everything up to the benchmark runs here; the
    benchmark needs a GPU, so the run ends with TileLang's "Auto-tuning failed"."""
    torch = pytest.importorskip("torch")
    from tilelang.autotuner import AutoTuner

    configs = [dict(block_M=32, block_N=32), dict(block_M=16, block_N=64), dict(block_M=64, block_N=16), dict(block_M=32, block_N=64)]
    tuner = AutoTuner.from_kernel(grouped_scaled_add, configs).set_compile_args(target={"kind": "cuda", "arch": "sm_90a"}, execution_backend="tvm_ffi")
    tuner.set_profile_args(supply_prog=lambda params: [torch.ones(256, 256)] * 3, skip_check=True, backend="wall")
    tuner._resolve_num_compile_workers = lambda: WORKERS
    witness = _Witness()
    with gated(2), lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        witness.register()
        try:
            with pytest.raises(RuntimeError, match="Auto-tuning failed"):
                tuner.run(warmup=1, rep=2, timeout=0, enable_grouped_compile=True, group_compile_size=2)
        finally:
            witness.unregister()
    trace = lower_trace.load_trace(run.run_dir)
    assert len(witness.sessions) == 2  # two grouped compile sessions, in two pool threads at once
    assert len(trace.kernels) == len(configs) + 2, [k.name for k in trace.kernels]
    assert in_flight(trace.kernels) >= 2
    for tool in witness.sessions:
        label = next(label for label, _ in tool.contexts if label.startswith("stage=grouped-device"))
        indexes = [int(i) for i in re.search(r"configs=\[([\d,]+)\]", label).group(1).split(",")]
        check_grouped_unit(trace, tool, [(i, configs[i]) for i in indexes])


# --- @tilelang.jit from threads, run on the CPU ----------------------------------------------

SPECS = [(64, 3.0, 8), (96, 1.5, 16), (128, -0.5, 32), (160, 0.25, 8)]  # N, factor, block


def run_jit_from_threads(torch):
    """Fresh lazy and eager jitted axpy kernels, each specialised for every SPECS entry from its
    own thread and run with CPU tensors. Returns the outputs and the sources compiled."""
    lazy, eager = kernels.jit_axpy("lazy"), kernels.jit_axpy("eager")

    def one(spec):
        n, factor, block = spec
        a = torch.arange(n, dtype=torch.float32)
        b = torch.full((n,), 0.5)
        kernel = lazy(n, factor, block)
        lazy_out = kernel(a, b)
        eager_out = torch.empty(n)
        eager(a, b, eager_out, factor=factor, block=block)
        return lazy_out, eager_out, kernel.get_kernel_source()

    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(one, SPECS))
    eager_sources = [k.get_kernel_source() for k in eager._kernel_cache.values()]
    return results, eager_sources


def test_jit_kernels_specialised_from_threads_give_the_same_results_traced(tmp_path, tilelang, no_kernel_cache):
    torch = pytest.importorskip("torch")
    untraced, untraced_eager = run_jit_from_threads(torch)
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        traced, traced_eager = run_jit_from_threads(torch)
    for (n, factor, _), (lazy_a, eager_a, src_a), (lazy_b, eager_b, src_b) in zip(SPECS, untraced, traced, strict=False):
        expected = torch.arange(n, dtype=torch.float32) * factor + 0.5
        assert torch.equal(lazy_a, lazy_b) and torch.equal(eager_a, eager_b) and torch.allclose(lazy_b, expected)
        assert torch.equal(eager_b, lazy_b)
        assert src_a == src_b
    assert sorted(untraced_eager) == sorted(traced_eager)

    trace = lower_trace.load_trace(run.run_dir)
    assert sorted(k.name for k in trace.kernels) == ["eager_axpy"] * len(SPECS) + ["lazy_axpy"] * len(SPECS)
    pipeline = None
    for kernel in trace.kernels:
        assert kernel.status is KernelStatus.OK and kernel.entry == kernel.name and kernel.target == "c"
        assert_well_formed(kernel)
        names = [p.name for p in kernel.passes]
        assert names == (pipeline or names)  # one pipeline for every specialisation
        pipeline = names
        (codegen,) = kernel.codegen
        assert trace.snapshot(codegen.tir) == trace.snapshot(kernel.passes[-1].after)
    by_style = {style: sorted(trace.snapshot(k.codegen[0].source) for k in trace.kernels if k.name == f"{style}_axpy") for style in ("lazy", "eager")}
    assert by_style["lazy"] == sorted(src for _, _, src in traced)
    assert by_style["eager"] == sorted(traced_eager)
    # Each kernel's IR is its own specialisation's (length, factor, tile), from the first snapshot on.
    found = []
    for kernel in trace.kernels:
        first, source = trace.snapshot(kernel.passes[0].before), trace.snapshot(kernel.codegen[0].source)
        (n,) = {int(x) for x in re.findall(r"match_buffer\(\w+, \((\d+),\)", first)}
        (factor,) = {float(x) for x in re.findall(r"T\.float32\(([-\d.]+)\)", first)}
        (block,) = blocks_in(first)
        assert (n, factor, block) in SPECS
        assert f"bx < {n // block};" in source and f"i < {block};" in source and blocks_in(source) == {block}
        found.append((kernel.name, n, factor, block))
    assert sorted(found) == sorted((f"{style}_axpy", *spec) for style in ("lazy", "eager") for spec in SPECS)


def test_par_compile_traces_each_kernel(tmp_path, tilelang, no_kernel_cache):
    """JITImpl.par_compile: TileLang's own thread pool of `tilelang.compile` calls."""
    lazy = kernels.jit_axpy("lazy")
    with lower_trace.trace(mode="html", trace_dir=tmp_path) as run:
        compiled = lazy.par_compile([dict(N=n, factor=f, block=b) for n, f, b in SPECS], num_workers=WORKERS)
    trace = lower_trace.load_trace(run.run_dir)
    assert len(trace.kernels) == len(SPECS)
    sources = sorted(trace.snapshot(k.codegen[0].source) for k in trace.kernels)
    assert sources == sorted(k.get_kernel_source() for k in compiled)
    assert len(set(sources)) == len(SPECS)
    for kernel in trace.kernels:
        assert_well_formed(kernel)
        assert kernel.status is KernelStatus.OK
