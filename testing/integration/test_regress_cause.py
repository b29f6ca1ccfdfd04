"""regress's cause -- the pass that wrote each differing line of the final code, on each side --
held to a recorder of its own: TVM's PassInstrument around TileLang's lowering (recorder.py)
records every pass's output on each side, and the pass that produced each differing final TIR
line is found there, without lower-trace. Two real sides: a pipelined GEMM with warp
specialisation switched off on head."""

import collections
import json
import os
import subprocess

import pytest

pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")

from tilelang import tvm

import kernels
import recorder
from support import lower_trace_cli, pythonpath

TESTING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
CONFIG = {"tl.disable_warp_specialized": True}
SCRIPT = f"""
import sys
sys.path.insert(0, {TESTING!r})
import kernels, tilelang
from tilelang import tvm
target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
with target:
    tilelang.lower(kernels.gemm(), target=target)
"""


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    folder = tmp_path_factory.mktemp("regress-cause")
    (folder / "corpus.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    env.update(PYTHONPATH=pythonpath(), TILELANG_DISABLE_CACHE="1")
    args = ["regress", "--dir", str(folder / "out"), "--head-config", "tl.disable_warp_specialized=true", "--json", "--", "python", "corpus.py"]
    proc = subprocess.run([lower_trace_cli(), *args], cwd=str(folder), env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stderr
    (gemm,) = json.loads(proc.stdout)["kernels"]
    return gemm, folder / "out"


def producers(passes, line, final):
    """The passes that produced a line of the final IR, from the recorder alone: those whose output
    has more copies of the line (indentation aside) than their input had. A line the final IR has
    once: the last of them (in the order they started, so an inner pass over its enclosing one); a
    line it has several times: any of them, since which copy is which a count cannot tell. Each
    as (its place in the order passes started, its name): TVM calls a Python function pass
    "pass_fn", which lower-trace names by the function that built it, so such a pass is held to
    its place alone."""
    made = []
    for place, recorded in enumerate(passes):
        if recorded.after is None:
            continue
        before = collections.Counter(text.strip() for text in recorded.before_text.splitlines())
        after = collections.Counter(text.strip() for text in recorded.after_text.splitlines())
        if after[line.strip()] > before[line.strip()]:
            made.append((place, None if recorded.name == "pass_fn" else recorded.name))
    copies = sum(1 for text in final.splitlines() if text.strip() == line.strip())
    return set(made) if copies > 1 else set(made[-1:])


def final_tir(out, side):
    """The TIR codegen got on a side, as the trace stored it (the lines regress diffed)."""
    import lower_trace

    (run,) = (out / side / "corpus").glob("run-*")
    trace = lower_trace.load_trace(str(run))
    (kernel,) = trace.kernels
    return trace.snapshot(kernel.codegen[-1].tir)


def test_the_writer_of_each_differing_tir_line_is_the_recorders(found):
    gemm, out = found
    assert gemm["verdict"] == "code differs" and gemm["cause"] is not None
    recorded = {}
    for side, config in (("base", {}), ("head", CONFIG)):
        passes, error = recorder.record(kernels.gemm(), CUDA, config=config)
        assert error is None
        recorded[side] = passes
    checked, apart = 0, []
    final = {side: final_tir(out, side) for side in ("base", "head")}
    for group in gemm["cause"]["passes"]:
        for side in ("base", "head"):
            for line in group[side]["lines"]:
                if line["where"] != "TIR" or line["by"] is None:
                    continue
                expected = producers(recorded[side], line["text"], final[side])
                checked += 1
                named = (line["by"]["seq"], line["by"]["pass"])
                if named not in expected and (named[0], None) not in expected:
                    apart.append((side, line["text"].strip(), line["by"]["pass"], expected))
    assert checked >= 20  # warp specialisation off rewrites a good part of the kernel
    assert not apart, f"{len(apart)} of {checked}: {apart}"
    # The pass named first is the one that wrote most differing lines, by the recorder's count of
    # the TIR lines plus lower-trace's own of the source lines (which the recorder cannot see).
    top = gemm["cause"]["passes"][0]
    assert top["lines"] == max(group["lines"] for group in gemm["cause"]["passes"])
    assert top["text"] in [fact.removeprefix("why: ") for fact in gemm["evidence"]]


def test_the_first_divergence_stays_beside_the_cause_for_a_config(found):
    """Same release, another config: the first pass where the pipelines part is still said."""
    gemm, _ = found
    assert gemm["first_difference"] is not None
    assert any(fact.startswith("why: ") for fact in gemm["evidence"]) and any(fact.startswith("first differs at") for fact in gemm["evidence"])


def test_the_comparison_page_opens_the_pass_that_wrote_a_line(found):
    """A click on a differing line opens the aligned row of the pass that wrote it on that side."""
    sync_api = pytest.importorskip("playwright.sync_api")
    gemm, _ = found
    page_path = gemm["compare_page"]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium")
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"file://{page_path}")
            page.wait_for_selector("body[data-ready='1']")
            head_line = page.locator("#cause details[open] .cause-side").nth(1).locator("a.cause-line").first
            by = head_line.locator(".cause-by").inner_text().removeprefix("← ")
            head_line.click()
            page.wait_for_function(f"location.hash === '#{head_line.get_attribute('data-row')}'")
            active = page.locator(".cmp-row.active .cmp-b").inner_text()
            assert active.split()[-2:] == by.split()  # "seq name" of head's pass
            assert errors == []
        finally:
            browser.close()
