"""The working copies on their own files (edits/working_copies.py): the three-way decision, and
the variant rule on TIR text as TileLang prints a small C kernel. No compile: the integration
tier's test_edits.py runs the same workflow end to end."""

import json
import os
import statistics
import subprocess
import sys
import time

from lower_trace.edits.working_copies import EditStore
from lower_trace.model import EditStatus
from support import ROOT


def test_three_way_decisions_on_files(tmp_path):
    store = EditStore(str(tmp_path))
    first = store.resolve("gemm", "sig-a", "device", "cuda", "v1")
    assert first.status is EditStatus.SYNCED and first.created and first.compile_text == "v1"
    assert store.resolve("gemm", "sig-a", "device", "cuda", "v1").status is EditStatus.SYNCED
    path = first.path
    open(path, "w").write("mine")
    patched = store.resolve("gemm", "sig-a", "device", "cuda", "v1")
    assert (patched.status, patched.compile_text) == (EditStatus.PATCHED, "mine")
    regenerated = store.resolve("gemm", "sig-b", "device", "cuda", "v1")  # other shapes: its own file
    assert regenerated.path != path and os.path.basename(regenerated.path).startswith("gemm-")
    conflict = store.resolve("gemm", "sig-a", "device", "cuda", "v2")
    assert conflict.status is EditStatus.CONFLICT and conflict.compile_text == "v2"
    assert open(conflict.backup).read() == "mine" and open(conflict.backup_base).read() == "v1"
    assert open(path).read() == "v2"
    open(path, "w").write("v3")  # the user's edit equals what codegen produces next
    assert store.resolve("gemm", "sig-a", "device", "cuda", "v3").status is EditStatus.SYNCED
    assert store.resolve("gemm", "sig-a", "device", "cuda", "v4").status is EditStatus.REGENERATED
    os.remove(path)  # a deleted working copy is recreated
    assert store.resolve("gemm", "sig-a", "device", "cuda", "v4").created
    host = store.resolve("gemm", "sig-a", "host", "c", "h1")
    assert os.path.basename(host.path) == "gemm.host.c"
    assert sorted(e.file for e in EditStore(str(tmp_path)).entries()) == sorted(["gemm.cu", os.path.basename(regenerated.path), "gemm.host.c"])


# --- the variant rule, on the files (TIR text as TileLang prints a small C kernel) ---------------

SCALE_TIR = """# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def scale(A_handle: T.handle, C_handle: T.handle):
        A = T.match_buffer(A_handle, (64,), strides=(1,))
        C = T.match_buffer(C_handle, (64,), strides=(1,))
        # with T.sblock("root"):
        for bx in T.thread_binding({blocks}, thread="blockIdx.x"):
            tx: T.int32 = T.launch_thread_idx(0)
            with T.sblock("tilelang_root"):
                T.reads()
                T.writes()
                for i in range({block}):
                    C[bx * {block} + i] = A[bx * {block} + i] * T.float32({factor}){extra}
"""
PLUS, MINUS = " + T.float32(1.0)", " - T.float32(2.0)"


def scale_tir(factor, extra="", block=64):
    return SCALE_TIR.format(factor=factor, extra=extra, block=block, blocks=64 // block)


def resolve(store, factor, extra="", role="device", tir=None, block=64):
    code = f"// {role}: C = A * {factor}{extra}, block {block}\n"
    return store.resolve("scale", "scale(A:[64], C:[64])", role, "c", code, tir=tir or scale_tir(factor, extra, block), config="target=c")


def test_each_variant_keeps_its_copy_through_code_changes(tmp_path):
    first = EditStore(str(tmp_path))
    three, five = resolve(first, 3.0), resolve(first, 5.0)
    assert os.path.basename(three.path) == "scale.c" and three.created
    assert five.created and os.path.basename(five.path) == f"scale-{os.path.basename(five.path)[6:12]}.c" != "scale.c"
    later = EditStore(str(tmp_path))  # the next run
    seven = resolve(later, 7.0)  # the same code with other literals: another variant
    assert seven.created and seven.path not in (three.path, five.path)
    assert resolve(later, 3.0).path == three.path
    # The code changes (+ 1) and the variants come in another order: each takes over its own copy.
    changed = EditStore(str(tmp_path))
    got = [resolve(changed, 5.0, PLUS), resolve(changed, 3.0, PLUS)]
    assert [(o.path, o.status) for o in got] == [(five.path, EditStatus.REGENERATED), (three.path, EditStatus.REGENERATED)]
    # Factor 7 was not compiled in that run; when it is, the changed code still finds its copy,
    partial = EditStore(str(tmp_path))
    assert (resolve(partial, 7.0, PLUS).path, resolve(partial, 7.0, PLUS).status) == (seven.path, EditStatus.SYNCED)
    # ... and a new factor with that code is a new variant.
    nine = resolve(partial, 9.0, PLUS)
    assert nine.created
    # Changed code whose literals match no copy: the nearest, ties to the oldest copy, none twice.
    again = EditStore(str(tmp_path))
    got = [resolve(again, f, MINUS) for f in (11.0, 13.0, 15.0, 17.0, 19.0)]
    assert [o.path for o in got[:4]] == [three.path, five.path, seven.path, nine.path]
    assert all(o.status is EditStatus.REGENERATED for o in got[:4]) and got[4].created
    # The same history in another folder gives the same files: the rule is deterministic.
    other = tmp_path / "other"
    history = [[(3.0, ""), (5.0, "")], [(7.0, ""), (3.0, "")], [(5.0, PLUS), (3.0, PLUS)], [(7.0, PLUS), (9.0, PLUS)]]
    for run in [*history, [(f, MINUS) for f in (11.0, 13.0, 15.0, 17.0, 19.0)]]:
        store = EditStore(str(other))
        last = [resolve(store, f, extra) for f, extra in run]
    assert [os.path.basename(o.path) for o in last] == [os.path.basename(o.path) for o in got]


def test_an_edited_variant_conflicts_alone_and_a_new_kernel_does_not_take_a_copy(tmp_path):
    store = EditStore(str(tmp_path))
    three, five = resolve(store, 3.0), resolve(store, 5.0)
    with open(five.path, "w") as handle:
        handle.write("// mine\n")
    run = EditStore(str(tmp_path))
    assert resolve(run, 5.0).status is EditStatus.PATCHED and resolve(run, 3.0).status is EditStatus.SYNCED
    run = EditStore(str(tmp_path))
    conflict, regenerated = resolve(run, 5.0, PLUS), resolve(run, 3.0, PLUS)
    assert (conflict.status, conflict.path) == (EditStatus.CONFLICT, five.path)
    assert open(conflict.backup).read() == "// mine\n" and regenerated.status is EditStatus.REGENERATED
    # Another kernel under the same name and buffers (mostly other code) gets its own copy.
    body = "".join(f"                    T.evaluate(T.call_extern('int32', 'step{n}', i))\n" for n in range(40))
    other = resolve(run, 3.0, tir=scale_tir(3.0).replace("                    C[bx", body + "                    C[bx"))
    assert other.created and other.path not in (three.path, five.path)
    # A host copy takes its device copy's key.
    host = resolve(run, 5.0, PLUS, role="host")
    assert os.path.basename(host.path) == os.path.basename(five.path)[: -len(".c")] + ".host.c"


def test_other_pass_configs_are_other_variants_and_the_listing_says_so(tmp_path):
    store = EditStore(str(tmp_path))
    text = scale_tir(3.0)
    plain = store.resolve("scale", "sig", "device", "c", "// plain\n", tir=text, config="target=c")
    vectorized = store.resolve("scale", "sig", "device", "c", "// other\n", tir=text, config="target=c; tl.disable_vectorize=T.bool(True)")
    assert plain.path != vectorized.path and vectorized.created
    rows = {os.path.basename(e.path): e.variant for e in EditStore(str(tmp_path)).entries()}
    assert rows == {"scale.c": "target=c", os.path.basename(vectorized.path): "target=c; tl.disable_vectorize=T.bool(True)"}


def test_a_sweep_costs_the_same_per_compile_however_many_variants(tmp_path, monkeypatch):
    """100 variants: a compile's cost (time, and files opened) does not grow with the count."""
    from lower_trace.edits import edit_folder  # every file the working copies open is opened there

    opened = []
    real_open = open

    def counting_open(*args, **kwargs):
        opened.append(args[0])
        return real_open(*args, **kwargs)

    monkeypatch.setattr(edit_folder, "open", counting_open, raising=False)
    configs = [(f"{1 + i // 4}.5", (4, 8, 16, 32)[i % 4]) for i in range(100)]

    def sweep():
        store = EditStore(str(tmp_path))  # one process's run
        times, opens = [], []
        for factor, block in configs:
            before, start = len(opened), time.perf_counter()
            outcome = store.resolve("scale", "sig", "device", "c", f"// {factor} {block}\n", tir=scale_tir(factor, block=block), config="target=c")
            times.append(time.perf_counter() - start)
            opens.append(len(opened) - before)
            assert outcome.status is EditStatus.SYNCED
        return times, opens

    for label in ("new variants", "known variants"):
        times, opens = sweep()
        first, last = statistics.median(times[:20]), statistics.median(times[-20:])
        assert last <= 3 * first, (label, first, last)
        # A few files per compile (the lock, its copy, its baseline, an index line), the same at
        # the 100th as at the 2nd; at most one more when the index is rewritten whole.
        assert max(opens[-20:]) <= max(opens[1:21]) <= 6 and max(opens[1:]) <= max(opens[1:21]) + 1, (label, opens)
    assert len({e.file for e in EditStore(str(tmp_path)).entries()}) == 100


CONCURRENT = """
import json, sys
from lower_trace.edits.working_copies import EditStore
from lower_trace.model import EditStatus
sys.path.insert(0, sys.argv[2])
import test_edit_variants
import os, time
store = EditStore(sys.argv[1])
factors = [float(f) for f in range(30)]
store.entries()  # this process has read the folder before the other one writes to it
open(os.path.join(sys.argv[1], sys.argv[3]), "w").close()
while not all(os.path.exists(os.path.join(sys.argv[1], order)) for order in ("up", "down")):
    time.sleep(0.001)  # both start together
out = {}
for factor in (factors if sys.argv[3] == "up" else factors[::-1]):
    out[factor] = test_edit_variants.resolve(store, factor).path
    time.sleep(0.002)  # the other process takes its turns in between
print(json.dumps(out))
"""


def test_two_processes_tracing_one_script_agree(tmp_path):
    """Two processes compile the same 30 variants at once, in opposite orders: one copy each."""
    EditStore(str(tmp_path)).resolve("other", "sig", "device", "c", "// another kernel\n", tir="x = 1")
    here = os.path.dirname(os.path.abspath(__file__))  # this module, which the children import
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, here, os.path.dirname(here)]))
    command = [sys.executable, "-c", CONCURRENT, str(tmp_path), here]
    procs = [subprocess.Popen([*command, order], stdout=subprocess.PIPE, text=True, env=env) for order in ("up", "down")]
    results = [json.loads(proc.communicate(timeout=120)[0]) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs)
    assert results[0] == results[1] and len(set(results[0].values())) == 30
    assert len(EditStore(str(tmp_path)).entries()) == 31
