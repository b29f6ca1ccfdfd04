"""TL_LOWER_TRACE_LAUNCHES as config.py reads it: meta by default, off, meta:N for N launches a kernel;
anything else is said once and read as meta (a bad setting costs no trace)."""

import pytest

from lower_trace.config import DEFAULT_LAUNCH_LIMIT, config_from_env, make_config


@pytest.mark.parametrize(
    ("value", "mode", "limit"),
    [(None, "meta", DEFAULT_LAUNCH_LIMIT), ("", "meta", DEFAULT_LAUNCH_LIMIT), ("meta", "meta", DEFAULT_LAUNCH_LIMIT), ("1", "meta", DEFAULT_LAUNCH_LIMIT),
     ("off", "off", DEFAULT_LAUNCH_LIMIT), ("0", "off", DEFAULT_LAUNCH_LIMIT), ("meta:2", "meta", 2), (" Meta:100 ", "meta", 100), ("meta:0", "meta", 0),
     ("data", "data", DEFAULT_LAUNCH_LIMIT), ("DATA:3", "data", 3)],
)
def test_a_setting_is_read_as_written(value, mode, limit):
    config = config_from_env({} if value is None else {"TL_LOWER_TRACE_LAUNCHES": value})
    assert (config.launches, config.launch_limit, config.launches_error) == (mode, limit, "")


@pytest.mark.parametrize("value", ["tensors", "data:x", "meta:x", "meta:-1", "everything"])
def test_a_setting_not_understood_is_said_and_read_as_meta(value):
    config = config_from_env({"TL_LOWER_TRACE_LAUNCHES": value})
    assert (config.launches, config.launch_limit) == ("meta", DEFAULT_LAUNCH_LIMIT)
    assert config.launches_error.startswith("TL_LOWER_TRACE_LAUNCHES=") and "meta:N" in config.launches_error
    assert "\n" not in config.launches_error


@pytest.mark.parametrize(
    ("value", "per_launch", "per_run"),
    [(None, 64 << 20, 1 << 30), ("1000", 1000, 1 << 30), ("2MiB,10MiB", 2 << 20, 10 << 20), ("1.5k, 3 G", 1536, 3 << 30), ("4gb", 4 << 30, 4 << 30),
     ("0,0", 0, 0)],
)
def test_the_data_caps_are_read_in_bytes(value, per_launch, per_run):
    config = config_from_env({"TL_LOWER_TRACE_LAUNCHES": "data"} | ({} if value is None else {"TL_LOWER_TRACE_LAUNCH_CAP": value}))
    assert (config.launches, config.launch_cap, config.run_cap, config.launches_error) == ("data", per_launch, per_run, "")


@pytest.mark.parametrize("value", ["lots", "1,2,3", "-5", "5 parsecs"])
def test_a_cap_not_understood_is_said_once_and_the_defaults_hold(value):
    config = config_from_env({"TL_LOWER_TRACE_LAUNCHES": "data", "TL_LOWER_TRACE_LAUNCH_CAP": value})
    assert (config.launch_cap, config.run_cap) == (64 << 20, 1 << 30)
    assert config.launches_error.startswith("TL_LOWER_TRACE_LAUNCH_CAP=") and "64MiB,1GiB" in config.launches_error and "\n" not in config.launches_error


def test_the_api_refuses_what_it_does_not_understand():
    with pytest.raises(ValueError, match=r"launches='tensors' is not understood"):
        make_config("html", launches="tensors")
    with pytest.raises(ValueError, match=r"launch_cap='big' is not understood"):
        make_config("html", launch_cap="big")
    config = make_config("html", launches="data:2", launch_cap="1MiB")
    assert (config.launches, config.launch_limit, config.launch_cap, config.run_cap) == ("data", 2, 1 << 20, 1 << 30)
