"""The one place where lower-trace reads environment variables.

Everything else receives a frozen :class:`Config`. The variable names and values
are the ones TileLang users already know from TileLang's own tracer:

- ``TL_LOWER_TRACE``: ``terminal``, ``html``, ``both``, ``trace`` (the trace on disk only: no
  report, nothing printed; what ``lower-trace regress`` runs its sides with); truthy ``1/on/true/yes``
  means ``html``; falsy ``0/off/false/no`` or unset means off.
- ``TL_LOWER_TRACE_DIR``: where traces go (default ``./tmp/lower_trace_dir``).
- ``TL_LOWER_TRACE_FILTER``: what the live terminal view prints, LLVM-style
  (``-filter-print-funcs``, ``-filter-passes``, ``-print-changed``):
  ``kernel=REGEX;pass=REGEX;phase=REGEX;changed``, any subset, ``;``-separated.
  The trace on disk is never filtered.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

ENV_MODE = "TL_LOWER_TRACE"
ENV_DIR = "TL_LOWER_TRACE_DIR"
ENV_FILTER = "TL_LOWER_TRACE_FILTER"
ENV_REPLAY = "TL_LOWER_TRACE_REPLAY"
ENV_BISECT = "TL_LOWER_TRACE_BISECT"  # set by lower-trace bisect in the processes it runs
ENV_DEVICE = "TL_LOWER_TRACE_DEVICE"  # the device stage where TileLang compiles: on (default), sass, off
ENV_CONFIGS = "TL_LOWER_TRACE_CONFIGS"  # pass configs forced on every compile (JSON object; lower-trace regress's sides)
ENV_LAUNCHES = "TL_LOWER_TRACE_LAUNCHES"  # launches of traced kernels: meta (default), data or off; optionally ":N" a kernel
LAUNCH_MODES = ("meta", "data", "off")
DEFAULT_LAUNCH_LIMIT = 8  # the first launches of each kernel, not a loop's millions
ENV_LAUNCH_CAP = "TL_LOWER_TRACE_LAUNCH_CAP"  # data mode: bytes of tensors kept per launch[,per run], e.g. 64MiB,1GiB
DEFAULT_LAUNCH_CAP = 64 << 20
DEFAULT_RUN_CAP = 1 << 30
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}
DEVICE_MODES = ("on", "sass", "off")
DEFAULT_TRACE_DIR = os.path.join(".", "tmp", "lower_trace_dir")

MODES = ("terminal", "html", "both", "trace")
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


def is_truthy(value: str | None) -> bool:
    """1/on/true/yes, as the startup line (lower_trace_startup.pth) reads its switches."""
    return value is not None and value.strip().lower() in _TRUTHY


def parse_switch(name: str, value: str | None) -> bool:
    """An on/off variable: 1/on/true/yes or 0/off/false/no (unset: off); ConfigError otherwise."""
    if value is None or not value.strip():
        return False
    text = value.strip().lower()
    if text in _TRUTHY:
        return True
    if text in _FALSY:
        return False
    raise ConfigError(f"{name}={value!r} is not understood; use 1/on/true/yes or 0/off/false/no")


@dataclass(frozen=True)
class LiveFilter:
    """Which kernels and passes the live terminal view prints (TL_LOWER_TRACE_FILTER)."""

    kernel: str = ""  # regex searched in the kernel's name
    pass_: str = ""  # regex searched in the pass's name
    phase: str = ""  # regex searched in the pass's phase
    changed_only: bool = False

    @property
    def active(self) -> bool:
        return bool(self.kernel or self.pass_ or self.phase or self.changed_only)


_FILTER_KEYS = ("kernel", "pass", "phase")


def parse_filter(value: str | None) -> LiveFilter:
    """``kernel=REGEX;pass=REGEX;phase=REGEX;changed`` -> LiveFilter; ConfigError naming the syntax otherwise."""
    text = (value or "").strip()
    if not text:
        return LiveFilter()
    found: dict[str, str] = {}
    changed = False
    for item in (part.strip() for part in text.split(";")):
        if not item:
            continue
        if item == "changed":
            changed = True
            continue
        key, sep, pattern = item.partition("=")
        key = key.strip()
        if not sep or key not in _FILTER_KEYS:
            raise ConfigError(f"{ENV_FILTER}: {item!r} is not understood; use kernel=REGEX;pass=REGEX;phase=REGEX;changed")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"{ENV_FILTER}: {key}={pattern!r} is not a valid regex ({exc})") from None
        found[key] = pattern
    return LiveFilter(kernel=found.get("kernel", ""), pass_=found.get("pass", ""), phase=found.get("phase", ""), changed_only=changed)


# How the user switched tracing on, so that messages name the setting they used.
SETTINGS = {
    "env": (ENV_MODE, ENV_DIR),
    "api": ("mode=", "trace_dir="),
    "cli": ("--mode", "--dir"),
}


@dataclass(frozen=True)
class Config:
    """What to trace and where to put it."""

    mode: str | None = None
    trace_dir: str = DEFAULT_TRACE_DIR
    # True when the user named the directory; terminal mode writes to disk only then.
    trace_dir_given: bool = False
    live_filter: LiveFilter = field(default_factory=LiveFilter)
    # Keep every pass's input as TVM JSON, on disk before the pass runs (lower-trace replay; hard crashes).
    replay: bool = False
    replay_error: str = field(default="", compare=False)  # an unreadable TL_LOWER_TRACE_REPLAY: said once
    bisect: BisectPlan | None = None  # which passes to run (lower-trace bisect's children only)
    # Pass configs forced on every compile of the process (TL_LOWER_TRACE_CONFIGS, JSON object text): a side of lower-trace regress.
    configs: str = ""
    # Where TileLang runs nvcc: "on" records PTX, binary and ptxas' resources; "sass" disassembles
    # at once too (nvdisasm: 0.3 s a kernel; else `lower-trace device` does it); "off" records nothing.
    device: str = "on"
    device_error: str = field(default="", compare=False)  # an unreadable TL_LOWER_TRACE_DEVICE: said once
    # Each traced kernel's first launch_limit launches: "meta" records arguments (shape, dtype, strides, device,
    # a digest of the bytes; scalars by value), time and call site; "data" keeps the tensors too (.npy, up to
    # launch_cap bytes a launch and run_cap a run); "off" none.
    launches: str = "meta"
    launch_limit: int = DEFAULT_LAUNCH_LIMIT
    launch_cap: int = DEFAULT_LAUNCH_CAP
    run_cap: int = DEFAULT_RUN_CAP
    launches_error: str = field(default="", compare=False)  # an unreadable TL_LOWER_TRACE_LAUNCHES: said once
    script: str = ""  # the script folder's name; "" = the running script's (the pytest plugin names a test's)
    title: str = ""  # what the run is called in the report and the CLI ("": the script folder's name)
    # enable(codegen_output=...): "" = working copies in edits/ (the default), None = no working copies,
    # a path = the first kernel's working copy is kept there too (edits/alias.py).
    codegen_output: str | None = ""
    # Not settings but where they came from: enable() with the same settings is still a no-op.
    filter_error: str = field(default="", compare=False)  # an unreadable TL_LOWER_TRACE_FILTER: said once, view unfiltered
    origin: str = field(default="env", compare=False)  # env, api (enable/trace) or cli (lower-trace run)
    dir_origin: str = field(default="env", compare=False)  # where trace_dir came from, likewise

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
        return self.writes_report or self.trace_dir_given or self.mode == "trace"

    @property
    def mode_setting(self) -> str:
        """The name of the setting that chose the mode, as the user wrote it."""
        return SETTINGS.get(self.origin, SETTINGS["env"])[0]

    @property
    def dir_setting(self) -> str:
        return SETTINGS.get(self.dir_origin, SETTINGS["env"])[1]


def config_from_env(environ: Mapping[str, str] | None = None, origin: str = "env", dir_origin: str = "env") -> Config:
    """Read the configuration from the environment (raises ConfigError on a bad mode or filter)."""
    env = os.environ if environ is None else environ
    mode = parse_mode(env.get(ENV_MODE))
    raw_dir = env.get(ENV_DIR, "").strip()
    live_filter, filter_error = _filter_from(env)
    replay, replay_error = _replay_from(env)
    device, device_error = _device_from(env)
    launches, launch_limit, launches_error = _launches_from(env)
    launch_cap, run_cap, cap_error = _launch_cap_from(env.get(ENV_LAUNCH_CAP, ""))
    return Config(
        mode=mode,
        trace_dir=raw_dir or DEFAULT_TRACE_DIR,
        trace_dir_given=bool(raw_dir),
        live_filter=live_filter,
        replay=replay,
        replay_error=replay_error,
        bisect=bisect_plan(env.get(ENV_BISECT)),
        configs=forced_configs(env.get(ENV_CONFIGS)),
        device=device,
        device_error=device_error,
        launches=launches,
        launch_limit=launch_limit,
        launch_cap=launch_cap,
        run_cap=run_cap,
        launches_error="; ".join(e for e in (launches_error, cap_error) if e),
        filter_error=filter_error,
        origin=origin,
        dir_origin=dir_origin,
    )


def _device_from(env: Mapping[str, str]) -> tuple[str, str]:
    """TL_LOWER_TRACE_DEVICE: on (unset), sass, off (0/off/false/no); a bad value: said once, on."""
    raw = env.get(ENV_DEVICE, "").strip().lower()
    if raw in ("", *_TRUTHY):
        return "on", ""
    if raw in _FALSY:
        return "off", ""
    if raw in DEVICE_MODES:
        return raw, ""
    return "on", f"{ENV_DEVICE}={raw!r} is not understood (use on, sass or off); the device stage is recorded as with on"


def _launches_from(env: Mapping[str, str]) -> tuple[str, int, str]:
    """TL_LOWER_TRACE_LAUNCHES: meta (unset, or on), data, off, each optionally ":N" (launches kept per kernel);
    a bad value: said once, meta with the default limit."""
    return launches_setting(env.get(ENV_LAUNCHES, ""), ENV_LAUNCHES)


def launches_setting(value: str, setting: str) -> tuple[str, int, str]:
    """(mode, launches a kernel, "" or the one line that says the value was not understood)."""
    raw = value.strip().lower()
    mode, _, limit = raw.partition(":")
    mode = "meta" if mode in ("", *_TRUTHY) else "off" if mode in _FALSY else mode
    try:
        count = int(limit) if limit else DEFAULT_LAUNCH_LIMIT
    except ValueError:
        count = -1
    if mode not in LAUNCH_MODES or count < 0:
        return "meta", DEFAULT_LAUNCH_LIMIT, (
            f"{setting}={raw!r} is not understood (use meta, data, off, or meta:N / data:N for N launches a kernel); launches are recorded as with meta")
    return mode, count, ""


def _launch_cap_from(value: str, setting: str = ENV_LAUNCH_CAP) -> tuple[int, int, str]:
    """TL_LOWER_TRACE_LAUNCH_CAP: PER_LAUNCH[,PER_RUN] in bytes (K/M/G, KiB/MiB/GiB: powers of 1024);
    unset: 64 MiB a launch, 1 GiB a run; a bad value: said once, the defaults."""
    raw = value.strip().lower().replace(" ", "")
    if not raw:
        return DEFAULT_LAUNCH_CAP, DEFAULT_RUN_CAP, ""
    parts = [_bytes(p) for p in raw.split(",")]
    if len(parts) > 2 or any(p is None for p in parts):
        return DEFAULT_LAUNCH_CAP, DEFAULT_RUN_CAP, (
            f"{setting}={value.strip()!r} is not understood (use PER_LAUNCH[,PER_RUN], e.g. 64MiB,1GiB); tensors are kept up to 64 MiB a launch, 1 GiB a run")
    launch = parts[0] or 0
    return launch, (parts[1] or 0) if len(parts) == 2 else max(launch, DEFAULT_RUN_CAP), ""


def _bytes(text: str) -> int | None:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([a-z]*)", text)
    if match is None or match.group(2) not in _UNITS:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def _filter_from(env: Mapping[str, str]) -> tuple[LiveFilter, str]:
    """A bad filter must not cost the user their trace: it is reported and ignored."""
    try:
        return parse_filter(env.get(ENV_FILTER)), ""
    except ConfigError as exc:
        return LiveFilter(), f"{exc}; the live view is not filtered"


@dataclass(frozen=True)
class BisectPlan:
    """What TL_LOWER_TRACE_BISECT says (JSON): run passes 1..limit (None: all), and the required ones."""

    limit: int | None = None
    kernel: str = ""  # regex on kernel names (or a kernel id, k2): other kernels compile untouched, uncounted
    required: tuple[str, ...] = ()
    # Pass configs to add to every PassContext of the process (lower-trace bisect --configs); JSON text.
    configs: str = ""


def bisect_plan(value: str | None) -> BisectPlan | None:
    """TL_LOWER_TRACE_BISECT's JSON ({"limit", "kernel", "required"}); ConfigError if unreadable
    (it is written by lower-trace bisect, so a bad one is a bug to hear about, not to ignore)."""
    if not value:
        return None
    try:
        data = json.loads(value)
        limit = data.get("limit")
        configs = data.get("configs") or {}
        if not isinstance(configs, dict):
            raise TypeError("configs must be an object")
        required = tuple(str(n) for n in data.get("required") or ())
        return BisectPlan(None if limit is None else int(limit), str(data.get("kernel") or ""), required, json.dumps(configs) if configs else "")
    except (ValueError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{ENV_BISECT}={value!r} is not understood ({exc}); it is set by lower-trace bisect") from None


def forced_configs(value: str | None) -> str:
    """TL_LOWER_TRACE_CONFIGS: a JSON object of pass configs, as compact JSON text ("" for none);
    ConfigError if it is not one (lower-trace regress writes it: a bad one is a bug to hear about)."""
    if not value or not value.strip():
        return ""
    try:
        data = json.loads(value)
    except ValueError as exc:
        raise ConfigError(f"{ENV_CONFIGS}={value!r} is not JSON ({exc}); write an object such as {{\"tl.disable_tma_lower\": true}}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{ENV_CONFIGS}={value!r} is not a JSON object; write one such as {{\"tl.disable_tma_lower\": true}}")
    return json.dumps(data, sort_keys=True) if data else ""


def _replay_from(env: Mapping[str, str]) -> tuple[bool, str]:
    """A bad TL_LOWER_TRACE_REPLAY costs no trace either: reported once, replay stays off."""
    try:
        return parse_switch(ENV_REPLAY, env.get(ENV_REPLAY)), ""
    except ConfigError as exc:
        return False, f"{exc}; passes are traced without replay inputs"


def pytest_addopts() -> str:
    """PYTEST_ADDOPTS as the user set it (lower-trace regress adds its plugin's options to it for a side)."""
    return os.environ.get("PYTEST_ADDOPTS", "")


def notebook_file() -> str:
    """The notebook a Jupyter kernel runs for (JPY_SESSION_NAME, set by Jupyter Server 2 for each
    kernel it starts: the notebook's path); "" when unknown."""
    return os.environ.get("JPY_SESSION_NAME", "").strip()


def default_trace_dir() -> str:
    """TL_LOWER_TRACE_DIR, or ./tmp/lower_trace_dir."""
    return os.environ.get(ENV_DIR, "").strip() or DEFAULT_TRACE_DIR


def make_config(
    mode: str | None = "html", trace_dir: str | os.PathLike | None = None, replay: bool | None = None, script: str = "", title: str = "",
    codegen_output: str | os.PathLike | None = "", launches: str | None = None, launch_cap: str | None = None,
) -> Config:
    """Build a Config for the Python API; an unset trace_dir (or replay, launches, launch_cap) falls back to
    the environment. A launches or launch_cap value not understood raises ConfigError."""
    parsed = parse_mode(mode) if mode is not None else None
    live_filter, filter_error = _filter_from(os.environ)
    replay_error = ""
    if replay is None:
        replay, replay_error = _replay_from(os.environ)
    launches_mode, launch_limit, launches_error = launches_setting(launches, "launches") if launches is not None else _launches_from(os.environ)
    cap, run_cap, cap_error = _launch_cap_from(launch_cap, "launch_cap") if launch_cap is not None else _launch_cap_from(os.environ.get(ENV_LAUNCH_CAP, ""))
    for given, error in ((launches, launches_error), (launch_cap, cap_error)):
        if given is not None and error:
            raise ConfigError(error.split(";")[0])
    base = Config(
        mode=parsed, live_filter=live_filter, filter_error=filter_error, origin="api", replay=bool(replay), replay_error=replay_error, script=script,
        configs=forced_configs(os.environ.get(ENV_CONFIGS)),
        launches=launches_mode, launch_limit=launch_limit, launch_cap=cap, run_cap=run_cap,
        launches_error="; ".join(e for e in (launches_error, cap_error) if e),
        codegen_output=None if codegen_output is None else os.path.abspath(os.fspath(codegen_output)) if codegen_output else "",
        title=title,
    )
    if trace_dir is not None:
        return replace(base, trace_dir=os.fspath(trace_dir), trace_dir_given=True, dir_origin="api")
    # The folder comes from the environment (or the default): messages name TL_LOWER_TRACE_DIR for it.
    from_env = config_from_env({ENV_DIR: os.environ.get(ENV_DIR, "")})
    return replace(base, trace_dir=from_env.trace_dir, trace_dir_given=from_env.trace_dir_given)


def mode_variable_is_set() -> bool:
    """Whether TL_LOWER_TRACE holds anything (TileLang's own tracer reacts to any value but falsy ones)."""
    return parse_mode_loosely(os.environ.get(ENV_MODE))


def parse_mode_loosely(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in _FALSY


def seed_default_mode() -> str:
    """The mode the seed's enable() (startup/seed_shims.py) takes when given none: TL_LOWER_TRACE's
    value when it holds anything but off (TileLang's own rule), else html."""
    value = os.environ.get(ENV_MODE)
    return value if value is not None and parse_mode_loosely(value) else "html"


def switch_is_on(name: str) -> bool:
    """Whether the on/off variable `name` says on (1/on/true/yes), read now, not at import: the
    startup takeover asks for TL_LOWER_TRACE_BUILTIN, which a program may set before TileLang's import."""
    return is_truthy(os.environ.get(name))


def cuda_home_folders() -> tuple[str, ...]:
    """Where a CUDA toolkit may be installed, in the order searched: CUDA_HOME, CUDA_PATH (those set), /usr/local/cuda."""
    named = (os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""))
    return (*(folder for folder in named if folder), "/usr/local/cuda")


def hide_mode_variable() -> Callable[[], None]:
    """Remove TL_LOWER_TRACE from the environment; returns the function that puts it back."""
    saved = os.environ.pop(ENV_MODE, None)

    def restore() -> None:
        if saved is not None:
            os.environ[ENV_MODE] = saved

    return restore


def color_wanted(is_tty: bool, environ: Mapping[str, str] | None = None) -> bool:
    """Colour follows NO_COLOR (off), then FORCE_COLOR (on), then TERM=dumb (off), then whether the stream is a tty."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", ""):
        return False
    if env.get("FORCE_COLOR", ""):
        return True
    if env.get("TERM", "") == "dumb":  # a terminal that says it cannot show colour
        return False
    return is_tty
