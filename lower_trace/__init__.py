"""lower-trace: see what every TileLang / TVM compiler pass does to your kernel.

    import lower_trace
    lower_trace.enable(mode="html")     # or TL_LOWER_TRACE=html python kernel.py
    ...compile kernels...
    lower_trace.disable()

    %load_ext lower_trace               # in a notebook: %%lower_trace cells; a run shows its report inline

    trace = lower_trace.load_trace("./tmp/lower_trace_dir")   # no TVM needed

(PYTEST_DONT_REWRITE: TL_LOWER_TRACE imports this package before pytest starts; it has no
assertions for pytest to rewrite, and pytest would warn that it cannot.)
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

__all__ = [
    "__version__", "current_run", "disable", "enable", "instrument", "load_ipython_extension", "load_trace", "reset", "run_passes", "show", "trace",
]  # fmt: skip
_NOTEBOOK = ("load_ipython_extension", "show")  # lower_trace/notebook.py (which imports IPython only inside the magic)

if TYPE_CHECKING:
    from lower_trace.api import current_run, disable, enable, instrument, reset, run_passes, trace
    from lower_trace.notebook import load_ipython_extension, show
    from lower_trace.store.reader import load_trace


def __getattr__(name: str) -> Any:
    """The API, imported on first use: `import lower_trace` (and the pytest plugin, which every
    pytest run loads where lower-trace is installed) stays cheap until something is called."""
    if name == "load_trace":
        from lower_trace.store.reader import load_trace

        return load_trace
    if name in _NOTEBOOK:
        from lower_trace import notebook

        return getattr(notebook, name)
    if name in __all__:
        from lower_trace import api

        return getattr(api, name)
    raise AttributeError(f"module 'lower_trace' has no attribute {name!r}")
