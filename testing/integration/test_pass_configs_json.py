"""Pass configs as JSON values in list, show and diff --json, on real compiles under configs of
each kind (the other --json views, on a stored trace: unit/test_json_output.py)."""

import json
import os
import shutil

import pytest

from lower_trace.cli.main import main


def run_json(capsys, *args):
    assert main(list(args)) in (0, 1)
    return json.loads(capsys.readouterr().out)


# Pass configs as JSON values, on a real compile under configs of each kind (the values set are the truth).
CONFIGS = {
    "tl.disable_shuffle_elect": True,
    "tl.config_index_bitwidth": 32,
    "tl.device_compile_flags": ["-O3", "--use_fast_math"],
    "tl.dump_ir_path": "ir dumps",  # only read with tl.enable_dump_ir
}


@pytest.fixture
def configured(tmp_path, tilelang, cuda_target):
    """(plain, configured): elementwise_add lowered without and with CONFIGS, each its own run."""
    from tilelang import tvm

    import kernels
    import lower_trace

    runs = []
    for name, config in (("plain", {}), ("configured", CONFIGS)):
        with lower_trace.trace(mode="html", trace_dir=str(tmp_path / name)) as run, tvm.transform.PassContext(config=config), cuda_target:
            tilelang.lower(kernels.elementwise_add(), target=cuda_target)
        runs.append(run.run_dir)
    return runs


def old_trace(run_dir, path):
    """The run as traces before typed configs were recorded: the kernel record without its context."""
    shutil.copytree(run_dir, path)
    with open(os.path.join(path, "trace.jsonl")) as records:
        lines = [json.loads(line) for line in records]
    for record in lines:
        if record["type"] == "kernel":
            record.pop("context", None)
    with open(os.path.join(path, "trace.jsonl"), "w") as out:
        out.writelines(json.dumps(record) + "\n" for record in lines)
    return path


def test_pass_configs_are_json_values_in_list_show_and_diff(configured, tmp_path, capsys):
    plain, run = configured
    with open(os.path.join(run, "trace.jsonl")) as records:
        (kernel,) = [r for r in map(json.loads, records) if r["type"] == "kernel"]
    assert kernel["pass_configs"]["tl.disable_shuffle_elect"] == "T.bool(True)"  # the record keeps TVM's text
    old = old_trace(run, str(tmp_path / "old"))
    for path in (run, old):  # an old trace has only the text: read back as the same values
        for args in (["list", path], ["list", path, "--passes"], ["show", path], ["show", path, "--timing"]):
            (item,) = run_json(capsys, *args, "--json")["kernels"]
            assert item["pass_configs"] == CONFIGS, (path, args)
            assert item["pass_configs"]["tl.disable_shuffle_elect"] is True  # true, not 1 or "T.bool(True)"
    expected = {key: {"a": None, "b": value} for key, value in sorted(CONFIGS.items())}
    assert run_json(capsys, "diff", plain, run, "--json")["configs"] == expected
    assert run_json(capsys, "diff", plain, old, "--json")["configs"] == expected
    assert run_json(capsys, "diff", run, old, "--json")["configs"] == {}  # the same configs, however recorded
