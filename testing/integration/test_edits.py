"""Edit the generated source and rerun, end to end: real kernels compiled (gcc for
target "c", nvcc for CUDA) and executed, each run a fresh interpreter as a user runs it."""

import glob
import json
import os
import shutil
import subprocess

import pytest

from lower_trace.edits.working_copies import EditStore
from support import lower_trace_cli

# Arguments: the scale factors to compile (one variant of `scale` each, in this order), and
# "plus" for the kernel as its author changed it later (C = A * factor + 1).
TWO_KERNELS = """
import sys
import tilelang, torch
import tilelang.language as T
import kernels
plus = "plus" in sys.argv[1:]
factors = [float(a) for a in sys.argv[1:] if a != "plus"] or [3.0]


def scale_plus(factor, N=64):
    @T.prim_func
    def scale(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(1) as _:
            for i in T.serial(N):
                C[i] = A[i] * T.float32(factor) + T.float32(1)

    return scale


add = tilelang.compile(kernels.vector_add_c(), target="c", execution_backend="cython")
scales = [tilelang.compile(scale_plus(f) if plus else kernels.scale_c(factor=f), target="c", execution_backend="cython") for f in factors]
a = torch.arange(64, dtype=torch.float32)
c = torch.empty(64)
add(a, torch.ones(64), c)
print("ADD", c[:4].tolist())
for factor, scale in zip(factors, scales):
    d = torch.empty(64)
    scale(a, d)
    print(f"SCALE:{factor}", d[:4].tolist())
"""


@pytest.fixture
def user(run_python, tmp_path):
    """Run the two-kernel script traced or untraced, with TileLang's kernel cache on."""
    cache = {"TILELANG_CACHE_DIR": str(tmp_path / "kernel-cache"), "TILELANG_DISABLE_CACHE": "0"}

    def run(*args, traced=True, check=True):
        env = dict(cache, TL_LOWER_TRACE="html") if traced else dict(cache)
        proc = run_python(TWO_KERNELS, env=env, args=args, check=check)
        lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line.startswith(("ADD", "SCALE")))
        return proc, lines

    return run


def edits_dir(tmp_path):
    return tmp_path / "tmp" / "lower_trace_dir" / "user_kernel" / "edits"


def replace_in(path, old, new):
    text = path.read_text()
    assert old in text, (old, text)
    path.write_text(text.replace(old, new))


def latest_codegen(tmp_path):
    import lower_trace

    trace = lower_trace.load_trace(str(tmp_path / "tmp" / "lower_trace_dir"))
    return {k.name: k.codegen[0] for k in trace.kernels}, trace


def test_edit_two_kernels_rerun_and_the_result_follows(user, tmp_path):
    first, out = user()
    assert out == {"ADD": "[1.0, 2.0, 3.0, 4.0]", "SCALE:3.0": "[0.0, 3.0, 6.0, 9.0]"}
    folder = edits_dir(tmp_path)
    add, scale = folder / "vector_add.c", folder / "scale.c"
    assert f"vector_add: generated source saved to {os.path.relpath(add, tmp_path)}" in first.stderr
    # Each kernel has its own file, holding exactly what was compiled.
    steps, trace = latest_codegen(tmp_path)
    assert add.read_text() == trace.snapshot(steps["vector_add"].source)
    assert scale.read_text() == trace.snapshot(steps["scale"].source)
    assert steps["vector_add"].edit_status == "SYNCED"

    replace_in(add, "C[i] = (A[i] + B[i]);", "C[i] = (A[i] - B[i]);")
    replace_in(scale, "3.000000e+00f", "1.000000e+01f")
    patched, out = user()
    assert out == {"ADD": "[-1.0, 0.0, 1.0, 2.0]", "SCALE:3.0": "[0.0, 10.0, 20.0, 30.0]"}
    assert "vector_add: PATCHED, compiling your edit of" in patched.stderr
    assert "scale: PATCHED" in patched.stderr
    steps, trace = latest_codegen(tmp_path)
    for name in ("vector_add", "scale"):
        step = steps[name]
        assert step.edit_status == "PATCHED" and step.edit_path.endswith(f"edits/{name}.c")
        assert trace.snapshot(step.source) == (folder / f"{name}.c").read_text()  # what was compiled
        assert "C[i]" in trace.snapshot(step.generated) and step.generated != step.source

    # Untraced, with the kernel cache on, twice (a cache hit the second time): the originals.
    for _ in range(2):
        _, out = user(traced=False)
        assert out == {"ADD": "[1.0, 2.0, 3.0, 4.0]", "SCALE:3.0": "[0.0, 3.0, 6.0, 9.0]"}
    # ... and a cached original never masks the edit on a traced rerun.
    _, out = user()
    assert out == {"ADD": "[-1.0, 0.0, 1.0, 2.0]", "SCALE:3.0": "[0.0, 10.0, 20.0, 30.0]"}


def test_conflict_keeps_the_edit_and_says_how_to_bring_it_back(user, tmp_path):
    user()
    folder = edits_dir(tmp_path)
    scale = folder / "scale.c"
    replace_in(scale, "3.000000e+00f", "1.000000e+01f")
    edited = scale.read_text()
    conflict, out = user("plus")  # the author changed the kernel: codegen differs from the baseline
    assert out["SCALE:3.0"] == "[1.0, 4.0, 7.0, 10.0]"  # the new codegen is compiled
    (backup,) = glob.glob(str(folder / "scale.c.*.edit"))
    (base,) = glob.glob(str(folder / "scale.c.*.base"))
    assert open(backup).read() == edited  # the edit, preserved
    assert "+ 1.000000e+00f" not in open(base).read()  # what it was made against
    assert "+ 1.000000e+00f" in scale.read_text()  # the working copy holds the new codegen
    aside = [os.path.basename(backup), os.path.basename(base)]
    assert sorted(os.listdir(folder)) == sorted([".baseline", ".lock", ".variants", "index.log", "scale.c", "vector_add.c", *aside])
    message = next(line for line in conflict.stderr.splitlines() if "CONFLICT" in line)
    assert os.path.relpath(backup, tmp_path) in message
    assert f"diff -u {os.path.relpath(base, tmp_path)} {os.path.relpath(backup, tmp_path)} | patch" in message
    steps, _ = latest_codegen(tmp_path)
    assert steps["scale"].edit_status == "CONFLICT" and steps["scale"].edit_backup == backup
    assert steps["vector_add"].edit_status == "SYNCED"
    # Changed back with no edit in between: the same working copy is simply refreshed.
    regenerated, out = user()
    assert out["SCALE:3.0"] == "[0.0, 3.0, 6.0, 9.0]"
    assert "scale: REGENERATED" in regenerated.stderr and "+ 1.000000e+00f" not in scale.read_text()
    assert len(glob.glob(str(folder / "scale.c.*.edit"))) == 1 and not glob.glob(str(folder / "scale-*"))


def test_variants_of_one_kernel_have_their_own_working_copies(user, tmp_path):
    """scale with factor 3 and 5 in one run: same name and buffers, other constants."""
    first, out = user("3", "5")
    assert out["SCALE:3.0"] == "[0.0, 3.0, 6.0, 9.0]" and out["SCALE:5.0"] == "[0.0, 5.0, 10.0, 15.0]"
    folder = edits_dir(tmp_path)
    three = folder / "scale.c"
    (five,) = [folder / name for name in os.listdir(folder) if name.startswith("scale-") and name.endswith(".c")]
    assert "3.000000e+00f" in three.read_text() and "5.000000e+00f" in five.read_text()
    rel = {path: os.path.relpath(path, tmp_path) for path in (three, five)}
    for path in (three, five):
        assert f"scale: generated source saved to {rel[path]}; edit it" in first.stderr

    # Nothing changed: every variant is SYNCED, none regenerated.
    again, _ = user("3", "5")
    assert "REGENERATED" not in again.stderr and "CONFLICT" not in again.stderr
    assert f"scale: SYNCED, {rel[three]}\n" in again.stderr and f"scale: SYNCED, {rel[five]}\n" in again.stderr

    # An edit of one variant is compiled for that variant only.
    replace_in(five, "5.000000e+00f", "1.000000e+01f")
    patched, out = user("3", "5")
    assert out["SCALE:5.0"] == "[0.0, 10.0, 20.0, 30.0]" and out["SCALE:3.0"] == "[0.0, 3.0, 6.0, 9.0]"
    assert f"scale: PATCHED, compiling your edit of {rel[five]}" in patched.stderr
    assert f"scale: SYNCED, {rel[three]}\n" in patched.stderr

    # Which copy is which: the literals that differ, with a little code around them.
    import lower_trace

    run_dir = lower_trace.store.layout.list_runs(str(tmp_path / "tmp" / "lower_trace_dir"))[-1]
    for where in ([], [run_dir], [str(folder.parent)]):
        listing = subprocess.run([lower_trace_cli(), "edits", *where], cwd=tmp_path, capture_output=True, text=True)
        assert listing.returncode == 0, listing.stderr
        rows = {line.split()[0]: line for line in listing.stdout.splitlines()[1:]}
        assert set(rows) == {"scale.c", five.name, "vector_add.c"}
        assert rows["scale.c"].split()[1:5] == ["scale", "device", "as", "generated"]
        assert rows["scale.c"].endswith("  A[i] * T.float32(3.0)")
        assert rows[five.name].split()[1:4] == ["scale", "device", "edited"]
        assert rows[five.name].endswith("  A[i] * T.float32(5.0)")
        assert rows["vector_add.c"].endswith("vector_add(A:[64]:float32, B:[64]:float32, C:[64]:float32)")

    # The author changes the kernel (+ 1): every variant's TIR changes, and each keeps its copy:
    # the unedited one is regenerated, the edited one conflicts and its edit is kept aside.
    changed, out = user("3", "5", "plus")
    assert out["SCALE:3.0"] == "[1.0, 4.0, 7.0, 10.0]" and out["SCALE:5.0"] == "[1.0, 6.0, 11.0, 16.0]"
    assert f"scale: REGENERATED, codegen changed; {rel[three]} now holds the new source" in changed.stderr
    assert f"scale: CONFLICT, codegen changed and {rel[five]} was edited; compiling the new codegen" in changed.stderr
    assert "generated source saved" not in changed.stderr  # no new copy beside an orphaned edit
    (backup,) = glob.glob(str(folder / f"{five.name}.*.edit"))
    assert "1.000000e+01f" in open(backup).read()
    assert sorted(name for name in os.listdir(folder) if name.endswith(".c")) == sorted(["scale.c", five.name, "vector_add.c"])
    assert "(A[i] * 3.000000e+00f) + 1.000000e+00f" in three.read_text()
    assert "(A[i] * 5.000000e+00f) + 1.000000e+00f" in five.read_text()
    # ... which is the new normal.
    settled, _ = user("3", "5", "plus")
    assert settled.stderr.count("scale: SYNCED") == 2 and "REGENERATED" not in settled.stderr


def test_an_old_index_is_migrated_without_losing_an_edit(user, tmp_path):
    user()
    folder = edits_dir(tmp_path)
    # What lower-trace wrote before variants: index.json keyed "kernel|signature|role", nothing else.
    entries = EditStore(str(folder.parent)).entries()
    old = {f"{e.kernel}|{e.signature}|{e.role}": {key: getattr(e, key) for key in ("file", "kernel", "role", "language")} for e in entries}
    shutil.rmtree(folder / ".variants")
    os.remove(folder / "index.log")
    (folder / "index.json").write_text(json.dumps(old))
    replace_in(folder / "scale.c", "3.000000e+00f", "1.000000e+01f")
    listing = subprocess.run([lower_trace_cli(), "edits"], cwd=tmp_path, capture_output=True, text=True)
    row = next(line for line in listing.stdout.splitlines() if line.split()[0] == "scale.c")
    assert "edited" in row and "from an older lower-trace, not matched to a variant yet" in row
    # Factor 5 comes first now: the old copy is not its copy (it was made for factor 3's code).
    proc, out = user("5", "3")
    assert out["SCALE:3.0"] == "[0.0, 10.0, 20.0, 30.0]" and out["SCALE:5.0"] == "[0.0, 5.0, 10.0, 15.0]"
    assert f"scale: PATCHED, compiling your edit of {os.path.relpath(folder / 'scale.c', tmp_path)}" in proc.stderr
    (five,) = [name for name in os.listdir(folder) if name.startswith("scale-") and name.endswith(".c")]
    created = next(line for line in proc.stderr.splitlines() if five in line)
    assert f"(your edit in {os.path.relpath(folder / 'scale.c', tmp_path)} is for other variants of scale, so not used here" in created
    assert json.load(open(folder / "index.json"))["format"] == 2  # rewritten in today's format
    rows = {e.file: e for e in EditStore(str(folder.parent)).entries()}
    assert sorted(rows) == sorted(["scale.c", five, "vector_add.c"])
    assert rows["scale.c"].state == "edited" and "T.float32(3.0)" in rows["scale.c"].variant
    assert not any("older lower-trace" in row.variant for row in rows.values())  # each matched a variant


def test_a_bad_edit_shows_the_compiler_error_in_the_users_file_and_is_kept(user, tmp_path):
    user()
    add = edits_dir(tmp_path) / "vector_add.c"
    replace_in(add, "C[i] = (A[i] + B[i]);", "C[i] = (A[i] + B[i]) oops;")
    broken = add.read_text()
    proc, _ = user(check=False)
    assert proc.returncode != 0
    line = next(n for n, text in enumerate(broken.splitlines(), 1) if "oops" in text)
    assert f"{add}:{line}:" in proc.stderr  # gcc points into the working copy
    assert "the compile failed while using your edit of" in proc.stderr and "lower-trace edits --reset vector_add" in proc.stderr
    assert add.read_text() == broken
    # Fixing it is all it takes.
    add.write_text(broken.replace(" oops", ""))
    _, out = user()
    assert out["ADD"] == "[1.0, 2.0, 3.0, 4.0]"


def test_edits_command_lists_and_resets(user, tmp_path):
    user()
    add = edits_dir(tmp_path) / "vector_add.c"
    replace_in(add, "C[i] = (A[i] + B[i]);", "C[i] = (A[i] * B[i]);")
    cli = lower_trace_cli()
    listing = subprocess.run([cli, "edits"], cwd=tmp_path, capture_output=True, text=True)
    assert listing.returncode == 0
    rows = {line.split()[0]: line.split() for line in listing.stdout.splitlines()[1:]}
    assert rows["vector_add.c"][1:4] == ["vector_add", "device", "edited"]
    assert rows["scale.c"][1:5] == ["scale", "device", "as", "generated"]
    assert "C:[64]:float32" in rows["scale.c"][-1]  # the signature tells same-named kernels apart
    reset = subprocess.run([cli, "edits", "--reset", "vector_add"], cwd=tmp_path, capture_output=True, text=True)
    assert reset.returncode == 0 and "your edit is saved in" in reset.stdout
    (backup,) = glob.glob(str(edits_dir(tmp_path) / "vector_add.c.*.edit"))
    assert "(A[i] * B[i])" in open(backup).read()
    _, out = user()
    assert out["ADD"] == "[1.0, 2.0, 3.0, 4.0]"
    missing = subprocess.run([cli, "edits", "--reset", "nope"], cwd=tmp_path, capture_output=True, text=True)
    assert missing.returncode == 2 and "no working copy for 'nope'; kernels: scale, vector_add" in missing.stderr


def edits_listing(tmp_path):
    """`lower-trace edits` as the user runs it: file -> its line; and the whole output."""
    listing = subprocess.run([lower_trace_cli(), "edits"], cwd=tmp_path, capture_output=True, text=True)
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    return {line.split()[0]: line for line in lines[1:] if line.startswith("  ")}, listing.stdout


def test_a_copy_that_no_longer_compiles_is_marked_stale(user, tmp_path):
    """Stale: the edit as it stands failed to compile, or the kernel's code changed and the
    copy's variant was not compiled since. Ground truth: gcc's exit, and which copies hold the
    kernel's current code (its `+ 1` in the generated C)."""
    user("3", "5")
    folder = edits_dir(tmp_path)
    add = folder / "vector_add.c"
    (five,) = [name for name in os.listdir(folder) if name.startswith("scale-") and name.endswith(".c")]
    rows, out = edits_listing(tmp_path)
    assert "stale" not in out  # every copy compiled as it stands

    replace_in(add, "C[i] = (A[i] + B[i]);", "C[i] = (A[i] + B[i]) oops;")
    broken, _ = user("3", "5", check=False)
    assert broken.returncode != 0 and f"{add}:" in broken.stderr  # gcc failed on the working copy
    rows, out = edits_listing(tmp_path)
    assert "  stale: compile failed  " in rows["vector_add.c"] and rows["vector_add.c"].split()[1:4] == ["vector_add", "device", "edited"]
    assert not any("stale" in rows[name] for name in ("scale.c", five))
    assert "compile failed: the last compile with this edit, as the file is now, failed" in out

    # Fixed, it is an edit not compiled yet, not a failed one; compiled, it stays unmarked.
    add.write_text(add.read_text().replace(") oops;", ");").replace("(A[i] + B[i])", "(A[i] - B[i])"))
    assert "stale" not in edits_listing(tmp_path)[0]["vector_add.c"]
    # The author changes the scale kernel (+ 1) and compiles factor 3 only: factor 5's copy is left behind.
    _changed, out_values = user("3", "plus")
    assert out_values["ADD"] == "[-1.0, 0.0, 1.0, 2.0]" and out_values["SCALE:3.0"] == "[1.0, 4.0, 7.0, 10.0]"
    rows, out = edits_listing(tmp_path)
    current = {name for name in ("scale.c", five) if "+ 1.000000e+00f" in (folder / name).read_text()}
    assert current == {"scale.c"}
    assert {name for name in ("scale.c", five, "vector_add.c") if "stale" in rows[name]} == {five}
    assert "  stale: code changed  " in rows[five]
    assert "code changed: the kernel's code changed and this variant was not compiled since" in out
    # Compiled with the new code, factor 5 takes its copy over: nothing is stale any more.
    _, out_values = user("5", "plus")
    assert out_values["SCALE:5.0"] == "[1.0, 6.0, 11.0, 16.0]" and "+ 1.000000e+00f" in (folder / five).read_text()
    assert "stale" not in edits_listing(tmp_path)[1]

    # The failing text put back: the index remembers that exactly this text failed.
    add.write_text(add.read_text().replace("(A[i] - B[i]);", "(A[i] + B[i]) oops;"))
    assert "stale: compile failed" in edits_listing(tmp_path)[0]["vector_add.c"]


IMPLEMENTATIONS = """
import tilelang
import tilelang.language as T
from tilelang import tvm
import kernels

N = 64


def times():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(1) as _:
            for i in T.serial(N):
                C[i] = A[i] * T.float32(3)
    return main


def plus():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(1) as _:
            for i in T.serial(N):
                C[i] = A[i] * T.float32(3) + T.float32(1)
    return main


def twice():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(1) as _:
            for i in T.serial(N):
                C[i] = A[i] * T.float32(3) + T.float32(1)
                C[i] = C[i] * T.float32(2)
    return main


# Three implementations under one name and buffers (as TileLang's `main` often is).
for make in (times, plus, twice):
    tilelang.compile(make(), target="c", execution_backend="cython")
# One kernel for the CPU and, as CUDA source, for a GPU: one name and buffers, two languages.
tilelang.compile(kernels.scale_c(), target="c", execution_backend="cython")
cuda = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
with cuda:
    tilelang.lower(kernels.scale_c(), target=cuda)
"""


def test_every_line_of_the_listing_tells_its_copy_apart(run_python, tmp_path):
    """Each copy's description is its own, and true of it: a line it quotes as its code is in the
    copy's TIR (as the trace recorded it before the first pass), a `without` line is not."""
    import lower_trace

    run_python(IMPLEMENTATIONS, env={"TL_LOWER_TRACE": "html"})
    rows, _ = edits_listing(tmp_path)
    trace = lower_trace.load_trace(str(tmp_path / "tmp" / "lower_trace_dir"))
    tir_of = {}
    for kernel in trace.kernels:
        for step in kernel.codegen:
            tir_of[os.path.basename(step.edit_path)] = {line.strip() for line in trace.snapshot(kernel.passes[0].before).splitlines()}
    mains = [name for name in rows if name.startswith("main")]
    assert len(mains) == 3 and sorted(name for name in rows if name.startswith("scale")) == ["scale.c", "scale.cu"]
    descriptions = {name: rows[name].split("as generated", 1)[1].strip() for name in rows}
    assert len({descriptions[name] for name in mains}) == 3, descriptions
    assert descriptions["scale.c"] != descriptions["scale.cu"], descriptions
    assert descriptions["scale.c"].endswith("for c") and descriptions["scale.cu"].endswith("for cuda")
    for name in mains:
        code = descriptions[name].removeprefix("other code: ")
        assert code != descriptions[name], descriptions[name]
        others = set().union(*(tir_of[other] for other in mains if other != name))
        for word in code.split("; "):
            if word.startswith("without "):
                assert word[len("without "):] not in tir_of[name] and word[len("without "):] in others, (name, word)
            else:
                assert word in tir_of[name], (name, word)


def test_cuda_edit_reaches_nvcc(tmp_path, lower_cuda, tilelang, cuda_target):
    """The working .cu gets an #error; nvcc compiling it must report the marker, in the user's file."""
    import kernels
    import lower_trace

    if not shutil.which("nvcc") and not os.path.exists("/usr/local/bin/nvcc"):
        pytest.skip("nvcc is not installed")
    os.environ["PATH"] = os.environ.get("PATH", "") + ":/usr/local/bin"
    with lower_trace.trace(mode="html", trace_dir=tmp_path):
        lower_cuda(kernels.elementwise_add())
    # <dir>/<script>/edits/: the script here is the test runner.
    (working,) = map(type(tmp_path), glob.glob(str(tmp_path / "*" / "edits" / "elementwise_add.cu")))
    source = working.read_text()
    marker = "#error LOWER_TRACE_EDIT_MARKER"
    working.write_text(source.replace('extern "C" __global__ void __launch_bounds__', marker + '\nextern "C" __global__ void __launch_bounds__', 1))
    with pytest.raises(Exception) as err, lower_trace.trace(mode="html", trace_dir=tmp_path), cuda_target:
        tilelang.lower(kernels.elementwise_add(), target=cuda_target, enable_device_compile=True)
    text = str(err.value)
    assert f"{working}:" in text and "error: #error LOWER_TRACE_EDIT_MARKER" in text
    # With the edit undone, nvcc compiles the kernel.
    working.write_text(source)
    with lower_trace.trace(mode="html", trace_dir=tmp_path), cuda_target:
        artifact = tilelang.lower(kernels.elementwise_add(), target=cuda_target, enable_device_compile=True)
    assert "__global__" in artifact.kernel_source


def test_terminal_mode_says_edits_are_not_used_and_still_traces(user, run_python, tmp_path):
    user()
    replace_in(edits_dir(tmp_path) / "vector_add.c", "C[i] = (A[i] + B[i]);", "C[i] = (A[i] - B[i]);")
    proc = run_python(TWO_KERNELS, env={"TL_LOWER_TRACE": "terminal", "NO_COLOR": "1"})
    assert "ADD [1.0, 2.0, 3.0, 4.0]" in proc.stdout  # terminal mode compiles TileLang's own source
    assert "edited working copies in" in proc.stderr and "are not used: terminal mode writes nothing" in proc.stderr
    assert "== lower-trace: kernel k1 vector_add" in proc.stderr and "could not switch tracing on" not in proc.stderr
    assert "[lower_trace]" not in proc.stdout  # TileLang's own tracer did not start in our place


@pytest.fixture
def kernels(tilelang):
    import kernels as module

    return module


def _tir_of(func):
    """The TIR as lowering gets it (what the session hands the store), printed without lowering."""
    from tilelang import tvm

    return tvm.IRModule({func.attrs["global_symbol"]: func}).script()


def test_edits_tells_every_variant_of_a_sweep_apart(tmp_path, kernels):
    """Autotune-shaped: 12 GEMM variants (tiles x pipeline stages) of one name and buffers.
    Every listed description is different, and each shows the stage count the variant has."""
    store = EditStore(str(tmp_path))
    configs = [(bm, bn, stages) for bm in (64, 128) for bn in (64, 128) for stages in (1, 2, 3)]
    for bm, bn, stages in configs:
        func = kernels.gemm(512, 512, 512, bm, bn, 32, num_stages=stages)
        store.resolve("gemm", "sig", "device", "cuda", f"// gemm {bm} {bn} {stages}\n", tir=_tir_of(func))
    rows = EditStore(str(tmp_path)).entries()
    assert len(rows) == len(configs)
    descriptions = [row.variant for row in rows]
    assert len(set(descriptions)) == len(configs), descriptions
    by_file = {row.file: row.variant for row in rows}
    for bm, bn, stages in configs:
        (name,) = [row.file for row in rows if f"// gemm {bm} {bn} {stages}" in open(row.path).read()]
        print(by_file[name])
        assert f"num_stages={stages}" in by_file[name].replace(" ", "") or f"num_stages\": {stages}" in by_file[name], by_file[name]


def test_other_code_is_quoted_with_the_variants_own_literals(tmp_path, kernels):
    store = EditStore(str(tmp_path))
    for factor in (3.0, 5.0):
        store.resolve("scale", "sig", "device", "c", f"// scale {factor}\n", tir=_tir_of(kernels.scale_c(factor=factor)))
    plus = kernels.scale_plus_c(factor=7.0)
    store.resolve("scale", "sig", "device", "c", "// plus 7\n", tir=_tir_of(plus))
    rows = {open(row.path).read(): row.variant for row in EditStore(str(tmp_path)).entries()}
    # The +1 kernel is code of its own: what it shows as "other code" has its own factor, 7.
    assert "7" in rows["// plus 7\n"] and "3.0" not in rows["// plus 7\n"] and "5.0" not in rows["// plus 7\n"]
