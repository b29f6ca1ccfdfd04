"""lower-trace bisect --versions without TileLang: the pins it installs each release with agree with
scripts/env.sh (read here, not restated), the search checks the ends first and then halves, a
release that does not install drops out, and bad combinations of options are one line, exit 2."""

import os
import re
import subprocess

import pytest

from lower_trace.regress.releases import TORCH_PIN, TVM_FFI_PINS, pins, search
from support import ROOT, lower_trace_cli


def env_sh_flavors():
    """{tilelang version: its PINS} as scripts/env.sh's case statement spells them."""
    with open(os.path.join(ROOT, "scripts", "env.sh"), encoding="utf-8") as handle:
        text = handle.read()
    return {m.group(1): m.group(2).split() for m in re.finditer(r'^\s*tilelang-([\d.]+)\)\s*PINS="([^"]*)"', text, re.M)}


def test_the_pins_agree_with_env_sh():
    flavors = env_sh_flavors()
    assert len(flavors) >= 3, f"env.sh's tilelang flavors were not found: {flavors}"
    for version, wanted in flavors.items():
        ffi = [p.split("==")[1] for p in wanted if p.startswith("apache-tvm-ffi==")]
        assert TVM_FFI_PINS.get(version) == (ffi[0] if ffi else None), f"tilelang {version}: env.sh pins {wanted}"
        assert TORCH_PIN in wanted
        assert sorted(pins(version)) == sorted(wanted)
    # and no pin here for a release env.sh does not build
    assert set(TVM_FFI_PINS) <= set(flavors)


def run_search(versions, truth):
    asked = []

    def outcome(version):
        asked.append(version)
        return truth[version]

    return search(versions, outcome), asked


def test_the_ends_first_then_halving():
    versions = [f"0.1.{n}" for n in range(1, 10)]
    first_bad = 6
    truth = {v: "good" if n < first_bad else "bad" for n, v in enumerate(versions, start=1)}
    found, asked = run_search(versions, truth)
    assert (found.kind, found.good, found.bad) == ("found", "0.1.5", "0.1.6")
    assert asked[:2] == ["0.1.1", "0.1.9"]
    assert len(asked) == 2 + 3  # the two ends, then 8 releases between them halved three times
    assert len(set(asked)) == len(asked)  # no release run twice


@pytest.mark.parametrize("first_bad", range(2, 8))
def test_every_position_is_found(first_bad):
    versions = [str(n) for n in range(1, 8)]
    truth = {v: "good" if int(v) < first_bad else "bad" for v in versions}
    found, _ = run_search(versions, truth)
    assert (found.good, found.bad) == (str(first_bad - 1), str(first_bad))


def test_a_release_that_does_not_install_drops_out():
    truth = {"1": "skipped", "2": "good", "3": "skipped", "4": "bad", "5": "bad", "6": "skipped"}
    found, asked = run_search(list(truth), truth)
    assert (found.kind, found.good, found.bad) == ("found", "2", "4")
    assert asked[:4] == ["1", "2", "6", "5"]  # the ends move inwards past the skipped ones
    assert found.usable == ["2", "4", "5"]


def test_the_ends_decide_alone():
    found, asked = run_search(["a", "b", "c"], {"a": "bad", "b": "good", "c": "bad"})
    assert (found.kind, found.bad, asked) == ("first bad", "a", ["a", "c"])
    found, asked = run_search(["a", "b", "c"], {"a": "good", "b": "bad", "c": "good"})
    assert (found.kind, found.good, asked) == ("all good", "c", ["a", "c"])
    found, _ = run_search(["a", "b"], {"a": "skipped", "b": "good"})
    assert found.kind == "too few"


@pytest.mark.parametrize(
    "args, said",
    [
        (["--versions", "0.1.15", "--", "true"], "two releases or more"),
        (["--versions", "0.1.13", "0.1.13", "--", "true"], "named twice"),
        (["--versions", "0.1.13", "0.1.15", "--kernel", "gemm", "--", "true"], "--kernel chooses passes"),
        (["--versions", "0.1.13", "0.1.15", "--configs", "--", "true"], "--configs chooses passes"),
        (["--venvs", "/tmp", "--", "true"], "give the releases too"),
    ],
)
def test_bad_combinations_are_one_line(args, said, tmp_path):
    proc = subprocess.run(
        [lower_trace_cli(), "bisect", *args], cwd=tmp_path, capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": ROOT}
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert said in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not any(name.startswith("tilelang-") for name in os.listdir(tmp_path))
