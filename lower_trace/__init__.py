"""lower-trace: see what every TileLang / TVM compiler pass does to your kernel.

    import lower_trace
    lower_trace.enable(mode="html")     # or TL_LOWER_TRACE=html python kernel.py
    ...compile kernels...
    lower_trace.disable()

    trace = lower_trace.load_trace("./tmp/lower_trace_dir")   # no TVM needed
"""

from __future__ import annotations

__version__ = "0.1.0"

from .api import current_run, disable, enable, instrument, reset, trace
from .store import load_trace

__all__ = ["__version__", "current_run", "disable", "enable", "instrument", "load_trace", "reset", "trace"]
