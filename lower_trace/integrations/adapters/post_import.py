"""Run a callback once a module has been imported, without importing it ourselves.

Used by the startup hook: tracing is switched on before the user's script
imports TileLang, and must attach right after TileLang's own ``__init__`` has
run (which is also when TileLang's built-in tracer switches itself on).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable
from typing import Any

Callback = Callable[[Any], None]


class _PostImportFinder(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.callbacks: dict[str, list[Callback]] = {}
        self.preparations: dict[str, list[Callable[[], Callable[[], None]]]] = {}
        self._busy = threading.local()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in self.callbacks or getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
            if spec is None:
                for finder in sys.meta_path:
                    if finder is self or not hasattr(finder, "find_spec"):
                        continue
                    spec = finder.find_spec(fullname, path, target)
                    if spec is not None:
                        break
        finally:
            self._busy.on = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _NotifyingLoader(spec.loader, self)
        return spec

    def prepare(self, name: str) -> list[Callable[[], None]]:
        return [prepare() for prepare in self.preparations.pop(name, [])]

    def fire(self, name: str, module: Any) -> None:
        for callback in self.callbacks.pop(name, []):
            callback(module)
        if not self.callbacks and self in sys.meta_path:
            sys.meta_path.remove(self)


class _NotifyingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, finder: _PostImportFinder) -> None:
        self._loader = loader
        self._finder = finder

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        undo = self._finder.prepare(module.__name__)
        try:
            self._loader.exec_module(module)
        finally:
            for step in reversed(undo):
                step()
        self._finder.fire(module.__name__, module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


_finder = _PostImportFinder()


def when_imported(name: str, callback: Callback) -> None:
    """Call callback(module) now if name is imported, else right after its import completes."""
    module = sys.modules.get(name)
    if module is not None and not _is_initializing(module):
        callback(module)
        return
    _finder.callbacks.setdefault(name, []).append(callback)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def while_importing(name: str, prepare: Callable[[], Callable[[], None]]) -> None:
    """Call prepare() right before name's module code runs, and what it returns right after.

    Needs a when_imported() callback for the same name to be registered too.
    """
    _finder.preparations.setdefault(name, []).append(prepare)


def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
    """The spec of name with the callbacks registered for it wired to its loader (for a finder
    that must answer for the import already under way)."""
    return _finder.find_spec(name, path, target)


def cancel(name: str) -> None:
    _finder.callbacks.pop(name, None)
    _finder.preparations.pop(name, None)
    if not _finder.callbacks and _finder in sys.meta_path:
        sys.meta_path.remove(_finder)


def _is_initializing(module: Any) -> bool:
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))
