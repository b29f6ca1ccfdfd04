"""`lower-trace reduce` on real kernels that fail in tl.LayoutInference and tl.LowerTileOp, padded
with statements the failure does not need (testing/kernels.py, the lines marked "padding").

Ground truth: the reduced reproducer, run in a fresh process from another folder, raises the
original error; every padding statement's buffer is gone from it; and taking away any one
statement that is left (the test's own TVM code, not the reducer's) makes it stop failing."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

tilelang = pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")

from tilelang import tvm  # noqa: E402

import kernels  # noqa: E402
import lower_trace  # noqa: E402
from support import lower_trace_cli  # noqa: E402

tir = getattr(tvm, "tirx", None) or tvm.tir
CASES = {
    "padded_transposed_fragment": ("tl.LayoutInference", "frag: (j, i) and (i, j)", ("other", "row", "C[", "D[")),
    "padded_shape_mismatch": ("tl.LowerTileOp", "Shared tile and global tile shape mismatch", ("t = ", "C[", "T.copy(T.region(A[0, 0], 1, 64, 64)")),
}


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reduce")
    with lower_trace.trace(mode="html", trace_dir=str(folder / "t")) as run, tvm.target.Target({"kind": "cuda", "arch": "sm_90a"}) as target:
        for build in (kernels.padded_transposed_fragment, kernels.padded_shape_mismatch):
            with pytest.raises(Exception):
                tilelang.lower(build(), target=target)
    return lower_trace.load_trace(run.run_dir)


def _run_repro(folder):
    return subprocess.run([sys.executable, os.path.join(folder, "repro.py")], capture_output=True, text=True, timeout=300, cwd=folder)


def _statements(mod):
    """Every statement of a sequence, as (the sequence's position in pre-order, index in it)."""
    found, order = [], []
    func = next(f for f in mod.functions.values() if isinstance(f, tir.PrimFunc))
    tir.stmt_functor.pre_order_visit(func.body, lambda n: (order.append(n) if isinstance(n, tir.SeqStmt) else None) or True)
    for k, seq in enumerate(order):
        found += [(k, i) for i in range(len(seq.seq))]
    return found


def _without(mod, where):
    k, i = where
    func_gv, func = next((g, f) for g, f in mod.functions.items() if isinstance(f, tir.PrimFunc))
    order = []
    tir.stmt_functor.pre_order_visit(func.body, lambda n: (order.append(n) if isinstance(n, tir.SeqStmt) else None) or True)
    target = order[k]

    def post(node):
        if node.same_as(target):  # nothing else changes, so the sequence reaches here as it was
            kept = [s for j, s in enumerate(node.seq) if j != i]
            return kept[0] if len(kept) == 1 else tir.SeqStmt(kept)
        return None

    body = tir.stmt_functor.ir_transform(func.body, None, post)
    return tvm.IRModule({func_gv: func.with_body(body)}, attrs=mod.attrs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_reduced_module_fails_the_same_way_without_the_padding_and_is_1_minimal(failing, name, tmp_path, run_script):
    pass_name, message, padding = CASES[name]
    kernel = failing.kernel(name)
    failed = next(p for p in kernel.passes if p.error is not None)
    assert failed.name == pass_name
    out = tmp_path / "reduced"
    command = [lower_trace_cli(), "reduce", failing.path, "-k", kernel.kernel_id, "-o", str(out), "--jobs", "2"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("reduced: statements ") and "→" in proc.stdout
    # From another folder, in a fresh process, without the user's program: the original error.
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(out, elsewhere)
    ran = _run_repro(str(elsewhere))
    assert ran.returncode != 0 and message in ran.stderr and f"{failed.error.type}: " in ran.stderr
    reduced = (out / "reduced.py").read_text()
    assert all(text not in reduced for text in padding), reduced
    assert (out / "error.txt").read_text().startswith(failed.error.type)
    # 1-minimal: without any one statement left, it no longer fails with that message.
    text = (out / "input.json").read_text()
    mod = tvm.ir.load_json(text)
    places = _statements(mod)
    for where in places:
        trial = tmp_path / f"trial-{where[0]}-{where[1]}"
        shutil.copytree(out, trial)
        (trial / "input.json").write_text(tvm.ir.save_json(_without(mod, where)))
        again = run_script(trial / "repro.py", trial)  # forked from a warm Python: the cold run is above
        assert again.returncode == 0 or message not in again.stderr, (where, again.stderr[-500:])


def test_a_hanging_candidate_is_killed_and_the_reduction_goes_on(failing, tmp_path):
    """--test: candidates that lost the fragment hang; each is killed at --timeout, and the
    reduction ends where the interesting ones lead."""
    script = _shell_script(tmp_path / "interesting.sh", 'grep -q \'"frag"\' "$1/input.json" && exit 0\nsleep 600')
    out = tmp_path / "reduced"
    command = [*_reduce_fragment(failing, out), "--test", str(script), "--timeout", "3"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    timed_out = int(re.search(r"\((\d+) timed out\)", proc.stdout).group(1))
    assert timed_out >= 1
    assert '"frag"' in (out / "input.json").read_text()
    assert json.loads((out / "input.json").read_text())  # TVM's JSON, whole


def test_nothing_to_reduce_is_one_line(failing, tmp_path):
    command = [*_reduce_fragment(failing, tmp_path / "reduced"), "--matches", "no such message"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "nothing to reduce" in proc.stderr


def test_ctrl_c_keeps_the_smallest_module_so_far(failing, tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) while a slow --test runs: the
    reduction stops at once and writes the smallest interesting input it had tried."""
    script = _shell_script(tmp_path / "slow.sh", 'sleep 1\ngrep -q \'"frag"\' "$1/input.json"')
    kernel = failing.kernel("padded_transposed_fragment")
    out = tmp_path / "reduced"
    command = [*_reduce_fragment(failing, out), "--test", str(script), "-j", "2"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(8)
    assert proc.poll() is None, "it ended before Ctrl-C"
    os.killpg(proc.pid, signal.SIGINT)
    stopped = time.monotonic()
    stdout, stderr = proc.communicate(timeout=60)
    assert time.monotonic() - stopped < 10, "it went on after Ctrl-C"
    assert proc.returncode == 130, stderr  # interrupted, as a shell counts Ctrl-C; what it kept is written
    assert "(interrupted: the smallest so far)" in stdout
    before, after = map(int, re.search(r"statements (\d+) → (\d+)", stdout).groups())
    assert after < before
    # What it kept is interesting (the test's own check, here) and is the module it counted.
    assert subprocess.run([str(script), str(out)]).returncode == 0
    reduced = tvm.ir.load_json((out / "input.json").read_text())
    assert sum(1 for _ in _statements(reduced)) < sum(1 for _ in _statements(tvm.ir.load_json(_original_input(failing, kernel))))


def _original_input(trace, kernel):
    failed = next(p for p in kernel.passes if p.error is not None)
    return trace.ir_json(failed.input)


def _shell_script(path, body):
    """An executable /bin/sh script (a --test: it gets a candidate's folder as $1)."""
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _reduce_fragment(trace, out):
    """lower-trace reduce of the padded transposed-fragment failure into out."""
    kernel = trace.kernel("padded_transposed_fragment")
    return [lower_trace_cli(), "reduce", trace.path, "-k", kernel.kernel_id, "-o", str(out)]
