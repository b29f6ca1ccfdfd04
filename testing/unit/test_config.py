import pytest

from lower_trace.config import DEFAULT_TRACE_DIR, ConfigError, color_wanted, config_from_env, make_config, parse_mode


@pytest.mark.parametrize(
    "value, mode",
    [
        ("terminal", "terminal"),
        ("html", "html"),
        ("both", "both"),
        ("HTML", "html"),
        (" both ", "both"),
        ("1", "html"),
        ("on", "html"),
        ("true", "html"),
        ("Yes", "html"),
        ("0", None),
        ("off", None),
        ("false", None),
        ("no", None),
        ("", None),
        (None, None),
    ],
)
def test_mode_values_users_know(value, mode):
    assert parse_mode(value) == mode


def test_unknown_mode_names_every_valid_value():
    with pytest.raises(ConfigError) as err:
        parse_mode("htlm")
    message = str(err.value)
    assert "'htlm'" in message
    for valid in ("terminal", "html", "both", "1/on/true/yes", "0/off/false/no"):
        assert valid in message
    assert "\n" not in message


def test_env_defaults_and_dir():
    config = config_from_env({})
    assert config.mode is None and not config.enabled
    assert config.trace_dir == DEFAULT_TRACE_DIR == "./tmp/lower_trace_dir"
    config = config_from_env({"TL_LOWER_TRACE": "terminal", "TL_LOWER_TRACE_DIR": "/x/y"})
    assert config.prints_terminal and not config.writes_report
    assert config.trace_dir == "/x/y" and config.trace_dir_given and config.writes_trace


def test_terminal_mode_writes_to_disk_only_when_a_folder_is_named():
    assert not config_from_env({"TL_LOWER_TRACE": "terminal"}).writes_trace
    assert config_from_env({"TL_LOWER_TRACE": "terminal", "TL_LOWER_TRACE_DIR": "d"}).writes_trace
    assert config_from_env({"TL_LOWER_TRACE": "html"}).writes_trace
    both = config_from_env({"TL_LOWER_TRACE": "both"})
    assert both.prints_terminal and both.writes_report


def test_api_config_takes_explicit_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("TL_LOWER_TRACE_DIR", raising=False)
    assert make_config("both", tmp_path).trace_dir == str(tmp_path)
    assert make_config("html").trace_dir == DEFAULT_TRACE_DIR
    monkeypatch.setenv("TL_LOWER_TRACE_DIR", "/from/env")
    assert make_config("html").trace_dir == "/from/env"


def test_colour_rules():
    assert color_wanted(True, {}) is True
    assert color_wanted(False, {}) is False
    assert color_wanted(True, {"NO_COLOR": "1"}) is False
    assert color_wanted(False, {"FORCE_COLOR": "1"}) is True
    assert color_wanted(True, {"NO_COLOR": "1", "FORCE_COLOR": "1"}) is False  # NO_COLOR wins
