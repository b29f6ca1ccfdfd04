"""Printing snapshots with the text of unchanged functions reused (integrations/ir_reading/tvm_print.py)
gives what TVM prints for the whole module, character for character, on real kernels."""

import pytest

pytest.importorskip("tilelang")

from tilelang import tvm

import kernels
import recorder
from lower_trace.integrations.ir_reading import tvm_print

CUDA = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})


def identity(mod):
    return (mod.attrs, mod.global_infos, mod.functions)


@pytest.mark.parametrize("name", ["gemm", "flash_attention", "row_sum"])
def test_reused_texts_are_the_whole_print(monkeypatch, name):
    """Every pass's input and output of a real compile, printed in order by one printer with its
    check against the whole print switched off (what it prints once the check passed)."""
    monkeypatch.setattr(tvm_print.CHECKS, "left", 0)
    monkeypatch.setattr(tvm_print.CHECKS, "enabled", True)
    passes, error = recorder.record(kernels.CUDA_KERNELS[name](), CUDA)
    assert error is None
    printer = tvm_print.ReusingPrinter(lambda mod: mod.script())
    compared = 0
    for p in passes:
        for mod, text in ((p.before, p.before_text), (p.after, p.after_text)):
            assert printer(identity(mod)) == text, p.name
            compared += 1
    assert compared == 2 * len(passes) > 100
    assert printer.reused >= 10  # after the host/device split most passes change one function of two


def test_a_print_that_differs_switches_reuse_off(monkeypatch):
    """The check before relying on it: a pieced text that is not the whole print is never
    returned, and piecing stops for the process."""
    monkeypatch.setattr(tvm_print.CHECKS, "left", 100)
    monkeypatch.setattr(tvm_print.CHECKS, "enabled", True)
    passes, _ = recorder.record(kernels.gemm(), CUDA)
    # A printer that prints modules of stubs otherwise than TVM would (a space after the class line).
    def odd(mod):
        text = mod.script()
        return text.replace("class Module:", "class Module: ") if "T.evaluate(0)" in text else text

    printer = tvm_print.ReusingPrinter(odd)
    assert [printer(identity(p.after)) for p in passes] == [p.after_text for p in passes]
    assert tvm_print.CHECKS.enabled is False and printer.reused == 0


def test_cut_joins_back_or_refuses():
    text = recorder.record(kernels.elementwise_add(), CUDA)[0][-1].after_text
    head, blocks = tvm_print.cut(text)
    assert head + "\n\n".join(block for _, block in blocks) == text
    assert head.endswith("class Module:\n") and [name for name, _ in blocks] == sorted(name for name, _ in blocks)
    assert tvm_print.cut(text.replace("    def ", "    def -", 1)) is None
    assert tvm_print.cut(text + "\n# Metadata omitted. Use show_meta=True in script() method to show it.") is None
