"""TL_LOWER_TRACE_LAUNCHES as config.py reads it: meta by default, off, meta:N for N launches a kernel;
anything else is said once and read as meta (a bad setting costs no trace)."""

import pytest

from lower_trace.config import DEFAULT_LAUNCH_LIMIT, config_from_env


@pytest.mark.parametrize(
    ("value", "mode", "limit"),
    [(None, "meta", DEFAULT_LAUNCH_LIMIT), ("", "meta", DEFAULT_LAUNCH_LIMIT), ("meta", "meta", DEFAULT_LAUNCH_LIMIT), ("1", "meta", DEFAULT_LAUNCH_LIMIT),
     ("off", "off", DEFAULT_LAUNCH_LIMIT), ("0", "off", DEFAULT_LAUNCH_LIMIT), ("meta:2", "meta", 2), (" Meta:100 ", "meta", 100), ("meta:0", "meta", 0)],
)
def test_a_setting_is_read_as_written(value, mode, limit):
    config = config_from_env({} if value is None else {"TL_LOWER_TRACE_LAUNCHES": value})
    assert (config.launches, config.launch_limit, config.launches_error) == (mode, limit, "")


@pytest.mark.parametrize("value", ["data", "meta:x", "meta:-1", "everything"])
def test_a_setting_not_understood_is_said_and_read_as_meta(value):
    config = config_from_env({"TL_LOWER_TRACE_LAUNCHES": value})
    assert (config.launches, config.launch_limit) == ("meta", DEFAULT_LAUNCH_LIMIT)
    assert config.launches_error.startswith("TL_LOWER_TRACE_LAUNCHES=") and "meta:N" in config.launches_error
    assert "\n" not in config.launches_error
