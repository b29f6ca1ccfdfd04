"""Replacing module attributes so that each replacement can be undone exactly."""

from __future__ import annotations

import sys
from typing import Any


class Patches:
    """Attribute replacements, remembered so each can be undone exactly."""

    def __init__(self) -> None:
        self._done: list[tuple[Any, str, Any]] = []

    def replace(self, owner: Any, name: str, value: Any) -> None:
        self._done.append((owner, name, owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)))
        setattr(owner, name, value)

    def replace_everywhere(self, original: Any, value: Any, package: str = "tilelang") -> int:
        """Replace every reference to `original` held by a module attribute in `package`."""
        count = 0
        for module_name, module in list(sys.modules.items()):
            if module is None or not (module_name == package or module_name.startswith(package + ".")):
                continue
            for name, held in list(vars(module).items()):
                if held is original:
                    self.replace(module, name, value)
                    count += 1
        return count

    def undo(self) -> None:
        while self._done:
            owner, name, original = self._done.pop()
            setattr(owner, name, original)
