"""Compiler integrations: the only modules that import tvm or tilelang.

``attach(get_run)`` picks the integration that fits what is installed and
attaches it as soon as TileLang is imported (now, if it already is).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Protocol

from lower_trace.capture.sink import GetRun, TraceSink
from lower_trace.config import hide_mode_variable
from lower_trace.integrations.adapters import post_import


class Integration(Protocol):
    """An adapter to one compiler (tilelang.TileLangIntegration, tilelang_legacy.LegacyTileLangIntegration,
    tvm.TVMIntegration), made with the run's getter once that compiler is imported."""

    def install(self) -> None:
        """Attach: from now on the compiler's compiles are traced (while a run is on)."""
        ...

    def uninstall(self) -> None:
        """Detach: everything install changed in the compiler is as it was."""
        ...


_installed: list[Integration] = []


def attach(get_run: GetRun) -> None:
    if "tilelang" not in sys.modules:
        post_import.while_importing("tilelang", _builtin_tracer_stays_off)
    post_import.when_imported("tilelang", lambda module: _attach_tilelang(get_run))
    post_import.when_imported("tvm", lambda module: _attach_tvm(get_run, module))


def _attach_tvm(get_run: GetRun, module: ModuleType) -> None:
    """Plain Apache TVM only: TileLang's bundled TVM is traced through TileLang."""
    run = get_run()
    if run is None or "tilelang" in sys.modules or "tilelang" in str(getattr(module, "__file__", "")):
        return
    if not hasattr(module, "compile"):
        version = getattr(module, "__version__", "?")
        run.note(f"TVM {version} is not supported; lower-trace supports {SUPPORTED}. Your program runs on untraced", once="unsupported")
        return
    try:
        from lower_trace.integrations.adapters.tvm import TVMIntegration

        integration: Integration = TVMIntegration(get_run)
        integration.install()
        _probe_json_if_replaying(run)
        _apply_bisect_configs(run)
    except Exception as exc:
        run.tracer_fault(exc)
        return
    _installed.append(integration)


_forced: list[str] = []  # the TL_LOWER_TRACE_CONFIGS applied in this process (once: the patch stays)


def _apply_bisect_configs(run: TraceSink) -> None:
    """In a child of lower-trace bisect --configs: the config being tried, in every PassContext. In a
    side of lower-trace regress (TL_LOWER_TRACE_CONFIGS): its configs, forced on every compile."""
    plan = run.config.bisect
    if plan is not None and plan.configs:
        from lower_trace.integrations.reruns.extra_configs import apply

        apply(plan.configs)
    if run.config.configs and run.config.configs not in _forced:
        from lower_trace.integrations.reruns.extra_configs import apply

        apply(run.config.configs, override=True)
        _forced.append(run.config.configs)


def _probe_json_if_replaying(run: TraceSink) -> None:
    """Replay mode needs TVM's JSON at the first pass: check it works now, on a thread."""
    if run.config.replay and run.config.writes_trace:
        from lower_trace.integrations.reruns.replay import probe_soon

        probe_soon()


def _builtin_tracer_stays_off() -> Callable[[], None]:
    """TileLang's __init__ switches its own tracer on when it sees TL_LOWER_TRACE (and
    announces it on stdout). Our variable, our tracer: TileLang does not see it while
    its __init__ runs, so its tracer never starts. Put back right after."""
    return hide_mode_variable()


SUPPORTED = "TileLang 0.1.9 and later (0.1.15+ through tilelang.instrumentation), or Apache TVM 0.27"
_OLDEST_TILELANG = (0, 1, 9)


def _attach_tilelang(get_run: GetRun) -> None:
    run = get_run()
    if run is None:
        return
    try:
        integration = _tilelang_integration(get_run, run)
        if integration is None:
            return
        integration.install()
        _probe_json_if_replaying(run)
        _apply_bisect_configs(run)
    except Exception as exc:
        run.tracer_fault(exc)
        return
    _installed.append(integration)


def _tilelang_integration(get_run: GetRun, run: TraceSink) -> Integration | None:
    """The adapter for the installed TileLang, or None (after saying why) when there is none."""
    import tilelang

    version = str(getattr(tilelang, "__version__", "0"))
    try:
        from lower_trace.integrations.adapters.tilelang import TileLangIntegration

        return TileLangIntegration(get_run)
    except ImportError:
        pass
    from lower_trace.integrations.adapters import tilelang_legacy

    if _version_tuple(version) >= _OLDEST_TILELANG and tilelang_legacy.supported():
        return tilelang_legacy.LegacyTileLangIntegration(get_run)
    run.note(f"TileLang {version} is not supported; lower-trace supports {SUPPORTED}. Your program runs on untraced", once="unsupported")
    return None


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def keep_builtin_off() -> None:
    """With an invalid TL_LOWER_TRACE, TileLang's own tracer would fall back to html; keep it off too."""
    if "tilelang" in sys.modules:
        return
    post_import.while_importing("tilelang", _builtin_tracer_stays_off)
    post_import.when_imported("tilelang", lambda module: None)


def detach() -> None:
    post_import.cancel("tilelang")
    post_import.cancel("tvm")
    while _installed:
        integration = _installed.pop()
        try:
            integration.uninstall()
        except Exception:
            pass
