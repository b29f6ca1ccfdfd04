"""The one place where lower-trace reads environment variables.

Everything else receives a frozen :class:`Config`. The variable names and values
are the ones TileLang users already know from TileLang's own tracer:

- ``TL_LOWER_TRACE``: ``terminal``, ``html``, ``both``; truthy ``1/on/true/yes``
  means ``html``; falsy ``0/off/false/no`` or unset means off.
- ``TL_LOWER_TRACE_DIR``: where traces go (default ``./tmp/lower_trace_dir``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

ENV_MODE = "TL_LOWER_TRACE"
ENV_DIR = "TL_LOWER_TRACE_DIR"
DEFAULT_TRACE_DIR = os.path.join(".", "tmp", "lower_trace_dir")

MODES = ("terminal", "html", "both")
_TRUTHY = ("1", "on", "true", "yes")
# Keep in step with startup/lower_trace_startup.pth, which checks these itself.
_FALSY = ("", "0", "off", "false", "no")


class ConfigError(ValueError):
    """A setting has a value lower-trace does not understand."""


def parse_mode(value: str | None) -> str | None:
    """Map a user-supplied mode to ``terminal``/``html``/``both``, or None for off.

    Raises ConfigError naming the valid values for anything else.
    """
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in _FALSY:
        return None
    if text in _TRUTHY:
        return "html"
    if text in MODES:
        return text
    raise ConfigError(
        f"{ENV_MODE}={value!r} is not a valid mode; use one of "
        f"{', '.join(MODES)}, 1/on/true/yes (= html) or 0/off/false/no (off)"
    )


@dataclass(frozen=True)
class Config:
    """What to trace and where to put it."""

    mode: str | None = None
    trace_dir: str = DEFAULT_TRACE_DIR
    # True when the user named the directory; terminal mode writes to disk only then.
    trace_dir_given: bool = False

    @property
    def enabled(self) -> bool:
        return self.mode is not None

    @property
    def prints_terminal(self) -> bool:
        return self.mode in ("terminal", "both")

    @property
    def writes_report(self) -> bool:
        return self.mode in ("html", "both")

    @property
    def writes_trace(self) -> bool:
        return self.writes_report or self.trace_dir_given


def config_from_env(environ: Mapping[str, str] | None = None) -> Config:
    """Read the configuration from the environment (raises ConfigError on a bad mode)."""
    env = os.environ if environ is None else environ
    mode = parse_mode(env.get(ENV_MODE))
    raw_dir = env.get(ENV_DIR, "").strip()
    return Config(mode=mode, trace_dir=raw_dir or DEFAULT_TRACE_DIR, trace_dir_given=bool(raw_dir))


def default_trace_dir() -> str:
    """TL_LOWER_TRACE_DIR, or ./tmp/lower_trace_dir."""
    return os.environ.get(ENV_DIR, "").strip() or DEFAULT_TRACE_DIR


def make_config(mode: str | None = "html", trace_dir: str | os.PathLike | None = None) -> Config:
    """Build a Config for the Python API; an unset trace_dir falls back to the environment."""
    parsed = parse_mode(mode) if mode is not None else None
    if trace_dir is not None:
        return Config(mode=parsed, trace_dir=os.fspath(trace_dir), trace_dir_given=True)
    from_env = config_from_env({ENV_DIR: os.environ.get(ENV_DIR, "")})
    return Config(mode=parsed, trace_dir=from_env.trace_dir, trace_dir_given=from_env.trace_dir_given)


def mode_variable_is_set() -> bool:
    """Whether TL_LOWER_TRACE holds anything (TileLang's own tracer reacts to any value but falsy ones)."""
    return parse_mode_loosely(os.environ.get(ENV_MODE))


def parse_mode_loosely(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in _FALSY


def hide_mode_variable() -> Callable[[], None]:
    """Remove TL_LOWER_TRACE from the environment; returns the function that puts it back."""
    saved = os.environ.pop(ENV_MODE, None)

    def restore() -> None:
        if saved is not None:
            os.environ[ENV_MODE] = saved

    return restore


def color_wanted(is_tty: bool, environ: Mapping[str, str] | None = None) -> bool:
    """Colour follows NO_COLOR (off), then FORCE_COLOR (on), then whether the stream is a tty."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", ""):
        return False
    if env.get("FORCE_COLOR", ""):
        return True
    return is_tty
