"""lower-trace regress across two TileLang releases: 0.1.13 (this interpreter: scripts/test.sh runs
this file with the 0.1.13 venv once every flavor is built and tested) against 0.1.15,
on the same kernels. A kernel is called changed exactly when the two releases' own sources for it
differ (their device sources, as TileLang gives them here); where the inputs differ already, the
pass named is one both pipelines ran."""

import json
import os
import subprocess
import textwrap

import pytest

tilelang = pytest.importorskip("tilelang")
if tilelang.__version__ != "0.1.13":
    pytest.skip("runs in the tilelang-0.1.13 flavor (base), against .venvs/tilelang-0.1.15 (head)", allow_module_level=True)

from support import lower_trace_cli, pythonpath  # noqa: E402

TESTING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = f"""
import sys
sys.path.insert(0, {TESTING!r})
import kernels, tilelang
from tilelang import tvm
target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
for build in (lambda: kernels.gemm(), lambda: kernels.elementwise_add(M=16, N=16, block_M=8, block_N=8), lambda: kernels.row_sum()):
    with target:
        tilelang.lower(build(), target=target)
"""
SOURCES = textwrap.dedent(f"""
    import sys, json
    sys.path.insert(0, {TESTING!r})
    import kernels, tilelang
    from tilelang import tvm
    t = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
    builds = {{
        "gemm": lambda: kernels.gemm(),
        "elementwise_add": lambda: kernels.elementwise_add(M=16, N=16, block_M=8, block_N=8),
        "row_sum": lambda: kernels.row_sum(),
    }}
    out = {{}}
    for name, build in builds.items():
        with t:
            out[name] = tilelang.lower(build(), target=t).kernel_source
    print(json.dumps(out))
""")


def test_two_tilelang_releases_on_the_same_kernels(tmp_path):
    import sys

    head = os.path.join(os.path.dirname(TESTING), ".venvs", "tilelang-0.1.15", "bin", "python")
    if not os.path.isfile(head):
        pytest.skip("needs .venvs/tilelang-0.1.15 (scripts/env.sh builds it)")
    (tmp_path / "corpus.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TL_LOWER_TRACE")}
    env["PYTHONPATH"] = pythonpath()
    proc = subprocess.run(
        [lower_trace_cli(), "regress", "--dir", str(tmp_path / "out"), "--base", sys.executable, "--head", head, "--json", "--", "python", "corpus.py"],
        cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    found = json.loads(proc.stdout)
    assert (found["base"]["tilelang"], found["head"]["tilelang"]) == ("0.1.13", "0.1.15")
    run = lambda python: subprocess.run([python, "-c", SOURCES], capture_output=True, text=True, check=True, env={**env, "TILELANG_DISABLE_CACHE": "1"})  # noqa: E731
    sources = [json.loads(run(python).stdout.splitlines()[-1]) for python in (sys.executable, head)]
    assert {k["kernel"] for k in found["kernels"]} == set(sources[0])
    for kernel in found["kernels"]:
        name = kernel["kernel"]
        if sources[0][name] == sources[1][name]:  # the same device code: host code or IR may differ, the code does not
            assert kernel["verdict"] in ("identical", "same code, other IR", "host code differs"), name
        else:
            assert kernel["verdict"] in ("code differs", "only renamed"), name
        effect = kernel.get("first_effect")
        if effect is not None:
            with open(os.path.join(kernel["base"]["trace"], "trace.jsonl")) as manifest:
                ran = [record["name"] for record in map(json.loads, manifest) if record.get("type") == "pass"]
            assert effect["base"]["pass"] in ran
