"""The repro.py lower-trace writes, from integrations/reruns/repro_template.py (no TileLang needed: the scripts
are checked as text and compiled; testing/test_repro.py runs them on real kernels)."""

import ast

from lower_trace.model import ErrorInfo, PassBuild, ReproSpec
from lower_trace.rerun import repro

P = PassBuild
TILELANG = ReproSpec(
    "tl.LowerTileOp",
    (P("tl.LayoutInference", "tilelang.transform.LayoutInference()", ("tilelang.transform",)), P("tl.LowerTileOp", "find_pass('tl.LowerTileOp')")),
    "gemm", {"target": '{"kind": "cuda"}', "configs": {"tl.disable_tma_lower": True}}, {"tilelang": "0.1.15", "tvm": "0.25"},
    ErrorInfo("ValueError", "shape mismatch\n  --> kernel.py:3"), "",
)
SIMPLIFY = P("tir.Simplify", "tvm.tir.transform.Simplify()", ("tvm.tir.transform", "tvm"))
PLAIN = ReproSpec("tir.Simplify", (SIMPLIFY,), "add", {}, {"tvm": "0.27"}, None, "")


def test_the_script_is_the_template_filled_in():
    text = repro.script(TILELANG)
    assert "FILL_" not in text and "template only" not in text and "lower_trace" not in text
    tree = ast.parse(text)  # valid Python
    summary = "Reproducer written by lower-trace: tl.LowerTileOp failed on kernel gemm.\n\nRecorded with tilelang 0.1.15, tvm 0.25.\n"
    assert (ast.get_docstring(tree) or "").startswith(summary)
    assert "Error: ValueError: shape mismatch\n\nRun it where" in text  # the headline, then the template's blank line
    assert "runs tl.LayoutInference -> tl.LowerTileOp on it" in text
    assert "import tilelang  # noqa: F401  (registers TileLang's passes and IR nodes)\nfrom tilelang import tvm\nimport tilelang.transform\n\nHERE =" in text
    assert "PASS_CONFIGS = {'tl.disable_tma_lower': True}\nTARGET = '{\"kind\": \"cuda\"}'  # TVM's JSON" in text
    assert "    return [\n        tilelang.transform.LayoutInference(),\n        find_pass('tl.LowerTileOp'),\n    ]\n\n\ndef find_pass(name):\n" in text
    assert "for module_name in ('tilelang.transform', " in text and "in ('pass_fn', 'sequential', '_pipeline') and short" in text
    assert 'os.path.join(HERE, "input.json")' in text and text.endswith('if __name__ == "__main__":\n    main()\n')
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert functions[:3] == ["build_passes", "find_pass", "restore_layouts"] and functions[-1] == "main"


def test_plain_tvm_and_no_find_pass_leave_their_blocks_out():
    text = repro.script(PLAIN)
    ast.parse(text)
    assert "FILL_" not in text and "tilelang" not in text.split("# --- TileLang layouts", 1)[0].split('"""', 2)[2]
    assert '"""\n\nimport importlib  # noqa: F401' in text and "import sys\n\nimport tvm\nimport tvm.tir.transform\n\nHERE" in text
    assert "def find_pass" not in text
    assert "    ]\n\n\n# --- TileLang layouts brought back exactly" in text  # two blank lines, as between any two definitions
    assert "tir.Simplify on kernel add, rerun (it did not fail when traced).\n\nRecorded with tvm 0.27.\n\nRun it where" in text
    assert "It prints the IR the passes make.\n" in text


def test_filled_in_text_is_not_searched_for_placeholders():
    """A kernel named like a placeholder stays as it is named."""
    spec = ReproSpec("FILL_NAMES", PLAIN.passes, "FILL_TARGET", {}, {}, None, "why FILL_EXPECT")
    text = repro.script(spec)
    assert "FILL_NAMES on kernel FILL_TARGET, rerun" in text and "\nwhy FILL_EXPECT\n" in text and "Recorded with unknown." in text
