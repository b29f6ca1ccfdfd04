"""Pass configs read for `lower-trace device`'s nvcc flags, as a trace from before typed configs
holds them: the text TVM printed. Each printed form must read as the value that was set (the
values below are the ones a real 0.1.15 lowering under those configs printed; the typed value
beside each is the one it was set to). Against TileLang's own nvcc call on real compiles:
testing/integration/test_device_flags.py."""

import pytest

from lower_trace.analysis.configs import typed_configs
from lower_trace.integrations.nvcc.tilelang_flags import config_options, extra_flags, is_on, register_level
from lower_trace.model import KernelTrace

# (printed by TVM 0.1.15 / by older TVMs, the value set)
SWITCHES = [("T.bool(True)", True), ("T.bool(False)", False), ("True", True), ("False", False), ("1", True), ("0", False), ("true", True)]
LEVELS = [("0", 0), ("T.int32(2)", 2), ("T.int64(10)", 10), ("None", None), ("", None)]


@pytest.mark.parametrize("printed, value", SWITCHES)
def test_a_printed_switch_reads_as_the_value_set(printed, value):
    assert is_on(printed) is value
    assert is_on(value) is value


@pytest.mark.parametrize("printed, value", LEVELS)
def test_a_printed_register_level_reads_as_the_value_set(printed, value):
    assert register_level(printed) == value
    assert register_level(value) == value


def test_printed_device_flags_read_as_the_list_set_each_string_split_as_a_shell_would():
    printed, value = '("-Xptxas -O1", "-DX=1")', ["-Xptxas -O1", "-DX=1"]
    assert extra_flags(printed) == extra_flags(value) == ["-Xptxas", "-O1", "-DX=1"]
    assert extra_flags("-DA='a b' -O2") == ["-DA=a b", "-O2"]  # a string: one shell line
    assert extra_flags(None) == extra_flags([]) == extra_flags("") == []


def test_an_old_kernel_record_gives_the_flags_of_the_typed_one():
    printed = {"tl.enable_fast_math": "T.bool(True)", "tl.ptxas_register_usage_level": "0", "tl.device_compile_flags": '("-Xptxas -O1", "-DX=1")'}
    typed = {"tl.enable_fast_math": True, "tl.ptxas_register_usage_level": 0, "tl.device_compile_flags": ["-Xptxas -O1", "-DX=1"]}
    old = KernelTrace("k1", "main", pass_configs=printed)
    new = KernelTrace("k1", "main", pass_configs=printed, context={"configs": typed})
    assert config_options(typed_configs(old)) == config_options(typed_configs(new)) == config_options(typed)
    assert config_options(printed) == config_options(typed)  # the raw text too, without typed_configs
    options = config_options(typed)
    assert "--use_fast_math" in options and "--ptxas-options=--register-usage-level=0" in options
    # Fast math is off unless asked for; a level of 0 is a level, not "unset".
    assert config_options({}) == []
    assert config_options({"tl.enable_fast_math": "T.bool(False)", "tl.ptxas_register_usage_level": "None"}) == []


def test_a_register_level_nvcc_cannot_take_says_which_config():
    with pytest.raises(ValueError, match=r"tl\.ptxas_register_usage_level"):
        register_level("high")
