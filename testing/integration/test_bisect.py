"""lower-trace bisect on real TileLang compiles: a C kernel compiled by gcc and run on CPU tensors,
with a miscompiling pass slipped into TileLang's pipeline (the ground truth: the test put it
there), and checks that are always good or always bad."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("tilelang")

from lower_trace.model import PassStatus
from lower_trace.rerun.bisection import KNOWN_REQUIRED, Bisector
from support import TESTING, lower_trace_cli

# A stand-in for a compiler bug: after the real pass, 3.0 becomes 3.5 (in the check, slipped into
# TileLang's pipeline; in the reduce test's script, run on each candidate).
BUGGY = f"sys.path.insert(0, {TESTING!r})\nfrom miscompile import buggy\n"  # testing/miscompile.py, for the reduce test's script


CHECK = """
import sys
sys.path.insert(0, {here!r})
import torch, tilelang, tilelang.transform, kernels
from tilelang import tvm

import miscompile
INJECT = {inject!r}
if INJECT:
    miscompile.inject(INJECT)

ok = True
# With two kernels, only the second one's numbers are checked (the first is compiled all the same).
for name, checked in (("scale", {kernels} == 1), ("other", True))[: {kernels}]:
    func = kernels.scale_c(factor=3.0).with_attr("global_symbol", name)
    kernel = tilelang.compile(func, target="c", execution_backend="cython")
    a = torch.arange(64, dtype=torch.float32)
    c = torch.zeros(64, dtype=torch.float32)
    kernel(a, c)
    ok = ok and (torch.allclose(c, a * 3.0) or not checked)
sys.exit(0 if ok and not {always_bad} else 3)  # 3: wrong numbers (a crash would be 1)
"""


def check(tmp_path, inject="", kernels=1, always_bad=False):
    path = tmp_path / "check.py"
    path.write_text(textwrap.dedent(CHECK.format(here=TESTING, inject=inject, kernels=kernels, always_bad=always_bad)))
    return [sys.executable, str(path)]


def quiet_bisector(command, workdir, **kwargs):
    said = []
    return Bisector(command, str(workdir), say=said.append, **kwargs), said


@pytest.fixture(scope="module")
def injected(tmp_path_factory):
    """bisect's output on the check with the miscompiling pass slipped in (shared with the reduce test)."""
    tmp_path = tmp_path_factory.mktemp("injected")
    command = check(tmp_path, inject="VectorizeLoop")
    assert subprocess.run(command, capture_output=True).returncode == 3  # the numbers really are wrong
    done = subprocess.run(
        [lower_trace_cli(), "bisect", "--work", str(tmp_path / "work"), "--color", "never", "--", *command],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_bisect_names_the_injected_pass(injected, tmp_path):
    out = injected
    assert "first bad pass:" in out and "tl.BuggyConstantFold" in out.split("first bad pass:")[1].splitlines()[0], out
    # The pass is named by the number the limits count (the last of the first bad ones), not only by its 0-based step.
    good, bad = map(int, re.search(r"with the first (\d+) passes your check passes; with the first (\d+)", out).groups())
    assert bad == good + 1
    nth = f"{bad}{'th' if 10 <= bad % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(bad % 10, 'th')}"
    assert f": the {nth} of the " in out.split("first bad pass:")[1].splitlines()[0]
    assert "run 1: every pass: bad" in out and re.search(r"^run 2 of about \d+: none of the \d+ passes but the required ones: good", out, re.MULTILINE)
    runs = sum(1 for line in out.splitlines() if line.startswith("run "))
    assert runs <= 10  # log2(~66 passes) + the two ends + the bad end's trace
    assert "is required" not in out  # the built-in list sufficed: nothing was learned
    # The change itself: 3.0 became 3.5 in the pass's diff.
    diff = out.split("did in the bad run:")[1]
    assert any(line.strip().startswith("-") and "3.0" in line for line in diff.splitlines())
    assert any(line.strip().startswith("+") and "3.5" in line for line in diff.splitlines())
    # How to shrink the bad pass's input against the user's check (lower-trace reduce --test).
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "shrink its input:" in line)
    assert "TL_LOWER_TRACE_REPLAY=1" in lines[at] and re.search(r"lower-trace reduce \S+ -k k\d+ -p \d+ -o FOLDER --test SCRIPT", lines[at + 1])
    # The command it prints reproduces the bad run.
    line = next(line for line in out.splitlines() if "reproduce the bad run:" in line).split("reproduce the bad run:", 1)[1].strip()
    again = subprocess.run(line, shell=True, capture_output=True, text=True, env={**os.environ, "TL_LOWER_TRACE_DIR": str(tmp_path / "again")})
    assert again.returncode == 3
    line = next(line for line in out.splitlines() if "and the good one:" in line).split("and the good one:", 1)[1].strip()
    again = subprocess.run(line, shell=True, capture_output=True, text=True, env={**os.environ, "TL_LOWER_TRACE_DIR": str(tmp_path / "again-good")})
    assert again.returncode == 0


def test_a_pass_nested_in_a_required_pass_is_found(tmp_path):
    """The miscompiling pass sits inside a Sequential the compile needs (it is named tl.FlattenBuffer,
    a required pass, and runs the real FlattenBuffer first): the required pass runs, but what is
    nested in it is counted and skipped like any other pass. The ground truth is where the test
    put the bug; before, bisect answered "the cause is not a pass that can be skipped"."""
    command = check(tmp_path, inject="FlattenBuffer")
    assert subprocess.run(command, capture_output=True).returncode == 3  # the numbers really are wrong
    bisector, said = quiet_bisector(command, tmp_path / "work")
    answer = bisector.bisect()
    assert answer.kind == "found", said
    assert answer.culprit.name == "tl.BuggyConstantFold"
    parent = next(p for p in answer.kernel.passes if p.seq == answer.culprit.parent)
    assert parent.name == "tl.FlattenBuffer" and parent.depth == 0  # the required Sequential it is nested in
    # Not tested means never skipped: every run ran it, as often as the full run did.
    assert "tl.BuggyConstantFold" not in answer.untested
    for name in answer.untested:
        for step in bisector.steps:
            if step.trace is not None and step.verdict in ("good", "bad"):
                ran = [p for k in step.trace.kernels for p in k.passes if p.name == name and p.status is not PassStatus.SKIPPED]
                assert ran, (name, step.limit)
    # A pass nested in a required one that is not required itself was tested (skipped in some run):
    # TileLang's own tirx.ConvertSSA inside tl.SplitHostDevice.
    assert "tirx.ConvertSSA" not in answer.untested
    low = next(step for step in bisector.steps if step.limit == 0)
    (kernel,) = low.trace.kernels
    split = next(p for p in kernel.passes if p.name == "tl.SplitHostDevice")
    nested = [p for p in kernel.passes if p.parent == split.seq]
    assert nested and all(p.status is PassStatus.SKIPPED for p in nested if p.name not in KNOWN_REQUIRED)


def test_skipped_passes_are_recorded_and_the_low_end_is_good(tmp_path):
    bisector, _ = quiet_bisector(check(tmp_path), tmp_path / "work")
    full = bisector.run(None, "every pass")
    low = bisector.run(0, "none")
    assert (full.verdict, low.verdict) == ("good", "good")  # the built-in required passes make a working kernel
    (kernel,) = low.trace.kernels
    skipped = [p for p in kernel.passes if p.status is PassStatus.SKIPPED]
    ran = [p for p in kernel.passes if p.status is not PassStatus.SKIPPED]
    assert skipped and all(p.before == p.after for p in skipped)
    names = {p.name for p in ran if p.depth == 0}
    assert names <= set(KNOWN_REQUIRED), names
    assert [p.ordinal for p in full.trace.kernels[0].passes] == list(range(1, full.counted + 1))


def test_a_check_that_is_always_good_or_always_bad_gets_a_clear_answer(tmp_path):
    bisector, _ = quiet_bisector(check(tmp_path), tmp_path / "good")
    answer = bisector.bisect()
    assert answer.kind == "always-good" and answer.runs == 1 and answer.culprit is None
    bisector, _ = quiet_bisector(check(tmp_path, always_bad=True), tmp_path / "bad")
    answer = bisector.bisect()
    assert answer.kind == "always-bad" and answer.runs == 2 and answer.culprit is None
    assert "tl.LowerTileOp" in answer.untested  # required passes are named as not tested


def test_a_required_pass_missing_from_the_list_is_learned(tmp_path):
    required = [name for name in KNOWN_REQUIRED if name != "tirx.BindTarget"]
    bisector, said = quiet_bisector(check(tmp_path, inject="VectorizeLoop"), tmp_path / "work", required=required)
    answer = bisector.bisect()
    assert "tirx.BindTarget" in answer.required and any("tirx.BindTarget is required" in line for line in said)
    assert answer.kind == "found" and answer.culprit.name == "tl.BuggyConstantFold"


def test_kernel_scope_leaves_other_kernels_alone(tmp_path):
    bisector, _ = quiet_bisector(check(tmp_path, inject="VectorizeLoop", kernels=2), tmp_path / "work", kernel="^other$")
    answer = bisector.bisect()
    assert answer.kind == "found" and answer.culprit.name == "tl.BuggyConstantFold" and answer.kernel.name == "other"
    scale = next(k for k in answer.bad.trace.kernels if k.name == "scale")
    assert all(p.ordinal == 0 and p.status is not PassStatus.SKIPPED for p in scale.passes)


def test_configs_without_a_list_try_every_switch_tvm_registers():
    """`--configs` alone tries TVM's own switches too (tirx.disable_vectorize), not only TileLang's
    tl.* ones; each is a config this TVM accepts set to True (TVM's registry is the ground truth),
    and none only makes the compiler talk."""
    from tilelang import tvm

    from lower_trace.integrations.reruns.extra_configs import switch_configs

    keys = switch_configs()
    assert "tirx.disable_vectorize" in keys and "tl.disable_warp_specialized" in keys and "tl.force_let_inline" in keys
    registered = tvm.transform.PassContext.list_configs()
    for key in keys:
        assert key in registered
        tvm.transform.PassContext(config={key: True})  # accepted as an on/off switch
    assert not any("verbose" in key or "dump" in key for key in keys)


def test_bad_input_is_one_line(tmp_path):
    for args, says in (
        ((), "--"),
        (("--", "no-such-command-anywhere"), "cannot run no-such-command-anywhere"),
        (("--timeout", "0", "--", "true"), "--timeout"),
        (("--kernel", "(", "--", "true"), "not a valid regex"),
        (("--configs", "no.such_config", "--", "true"), "not a pass config this TileLang knows"),
    ):
        done = subprocess.run([lower_trace_cli(), "bisect", "--work", str(tmp_path / "w"), *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and says in done.stderr, (args, done.stdout, done.stderr)


def test_a_config_that_stops_the_compile_is_not_a_flip(tmp_path):
    """tl.enable_auto_warp_specialization takes a string: set to True, the compile fails. That tells
    nothing about the check, and must not be reported as flipping it."""
    done = subprocess.run(
        [lower_trace_cli(), "bisect", "--work", str(tmp_path / "work"), "--configs", "tl.enable_auto_warp_specialization", "--", *check(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 1 and "no config changes the result" in done.stdout, done.stdout + done.stderr
    assert "did not get through with (so they tell nothing): tl.enable_auto_warp_specialization=True" in done.stdout


def test_configs_mode_names_the_switch_that_flips_the_result(tmp_path):
    """The bug sits in tl.LetInline, which TileLang's C pipeline runs only with tl.force_let_inline."""
    command = check(tmp_path, inject="LetInline")
    done = subprocess.run(
        [lower_trace_cli(), "bisect", "--work", str(tmp_path / "work"), "--configs", "tl.force_let_inline,tl.disable_vectorize_256", "--", *command],
        capture_output=True, text=True, timeout=600,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "as it is: good; 2 configs tried one at a time" in out
    flipped = [line for line in out.splitlines() if "flips" in line]
    assert len(flipped) == 1 and flipped[0].strip().startswith("tl.force_let_inline=True: bad (flips good -> bad)"), out


def test_ctrl_c_stops_cleanly(tmp_path):
    import signal
    import time

    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(60)\n")
    process = subprocess.Popen(
        [lower_trace_cli(), "bisect", "--work", str(tmp_path / "work"), "--", sys.executable, str(slow)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    time.sleep(3)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C reaches the whole group
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "stopped after" in out, out + err
    assert "Traceback" not in err


def test_the_known_required_passes_suffice_for_the_cuda_pipeline(tmp_path):
    """With only the built-in required passes run, TileLang's CUDA pipeline still lowers a
    pipelined GEMM and an elementwise kernel to CUDA source (nothing broken, nothing learned)."""
    script = tmp_path / "lower_cuda.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {TESTING!r})
        import tilelang, kernels
        from tilelang import tvm
        target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
        with target:
            tilelang.lower(kernels.gemm(), target=target)
            tilelang.lower(kernels.elementwise_add(), target=target)
    """))
    bisector, _ = quiet_bisector([sys.executable, str(script)], tmp_path / "work")
    full = bisector.run(None, "every pass")
    low = bisector.run(0, "only the required")
    assert (full.verdict, low.verdict) == ("good", "good")
    assert all(k.codegen and k.status.value == "ok" for k in low.trace.kernels)
    skipped = [p for k in low.trace.kernels for p in k.passes if p.status is PassStatus.SKIPPED]
    assert len(skipped) > 100


INTERESTING = """#!{python}
# The user's numeric check of a candidate, C-Reduce's convention: exit 0 while the miscompiling
# pass (the check's, above) still changes what the kernel computes from the candidate's input.
import os, sys
os.environ["TILELANG_DISABLE_CACHE"] = "1"
import torch, tilelang
from tilelang import tvm

{buggy}
def computed(mod):
    func = next(f for f in mod.functions.values() if isinstance(f, tvm.tirx.PrimFunc))
    kernel = tilelang.compile(func, target="c", execution_backend="cython")
    shapes = [[int(d) for d in func.buffer_map[p].shape] for p in func.params]
    tensors = [torch.arange(1, 1 + torch.Size(shape).numel(), dtype=torch.float32).reshape(shape) for shape in shapes]
    kernel(*tensors)
    return tensors

with open(os.path.join(sys.argv[1], "input.json")) as handle:
    mod = tvm.ir.load_json(handle.read())
try:
    before, after = computed(mod), computed(buggy(mod))
except Exception:
    sys.exit(1)  # it no longer compiles: not the bug we are after
sys.exit(0 if any(not torch.equal(a, b) for a, b in zip(before, after)) else 1)
"""


def test_reduce_shrinks_the_miscompile_bisect_found_against_the_users_check(injected, tmp_path):
    """bisect's answer -> its command keeping every pass's input -> reduce --test with the user's
    numeric check: the module left is smaller and the bad pass still changes its result there."""
    lines = injected.splitlines()
    at = next(i for i, line in enumerate(lines) if "shrink its input:" in line)
    keep = lines[at].split("shrink its input:", 1)[1].split("   # ", 1)[0].strip()
    assert subprocess.run(keep, shell=True, capture_output=True, text=True).returncode == 3  # the bad run, inputs kept
    script = tmp_path / "interesting.py"
    script.write_text(INTERESTING.replace("{python}", sys.executable).replace("{buggy}", BUGGY))
    script.chmod(0o755)
    reduce = lines[at + 1].strip().split("  (SCRIPT")[0].replace("FOLDER", str(tmp_path / "reduced")).replace("SCRIPT", str(script))
    done = subprocess.run(reduce.replace("lower-trace ", f"{lower_trace_cli()} ", 1), shell=True, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    before, after = map(int, re.search(r"statements (\d+) → (\d+)", done.stdout).groups())
    assert after <= before
    # Ground truth, the test's own: the user's check on the reduced input, in a fresh process.
    assert subprocess.run([str(script), str(tmp_path / "reduced")], capture_output=True).returncode == 0
    # Smaller: the 64-element loop and buffers shrank (the bug needs one element to show).
    from tilelang import tvm

    reduced = tvm.ir.load_json((tmp_path / "reduced" / "input.json").read_text())
    func = next(f for f in reduced.functions.values() if isinstance(f, tvm.tirx.PrimFunc))
    assert all(int(d) < 64 for buffer in func.buffer_map.values() for d in buffer.shape), reduced.script()
    assert "3" in reduced.script() and "T.float32(3.0)" in reduced.script()
