"""One-line messages to the user on stderr: each kind said once, per-kernel kinds summarised.

A sweep compiles hundreds of kernels; a line per kernel would bury what matters.
Messages of one *group* (e.g. "working copy created") are said for the first
few kernels; the rest are counted and summarised in one line when the run
closes (``flush_groups``).
"""

from __future__ import annotations

import re
import sys
import threading
from dataclasses import dataclass, field
from typing import TextIO

from lower_trace.text_safety import plural, printable_lines

_COUNTED = re.compile(r"\{n:([^/{}]+)/([^{}]+)\}")  # "{n:copy/copies}" in a group's summary

GROUP_LIMIT = 3  # lines said per group before the rest are only counted


@dataclass
class _Group:
    said: int = 0
    counted: int = 0
    summary: str = ""
    labels: dict[str, int] = field(default_factory=dict)  # what the counted messages were about


class Messages:
    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._said: set[str] = set()
        self._groups: dict[str, _Group] = {}
        self._lock = threading.Lock()

    @property
    def stream(self) -> TextIO:
        return self._stream or sys.stderr

    def say(self, text: str, once: str | None = None, group: str | None = None, more: str = "", label: str = "") -> None:
        """Say text (once per `once` key). With a group, only the first GROUP_LIMIT of the
        group are said; the others are counted, and `more` is said for them by flush_groups():
        "{n}" is their number ("{n:copy/copies}": with the word that agrees), "{by}" what they were
        about (their labels, with counts)."""
        with self._lock:
            if once is not None:
                if once in self._said:
                    return
                self._said.add(once)
            if group is not None:
                entry = self._groups.setdefault(group, _Group())
                entry.summary = more or entry.summary
                if entry.said >= GROUP_LIMIT:
                    entry.counted += 1
                    entry.labels[label] = entry.labels.get(label, 0) + 1
                    return
                entry.said += 1
        self._write(text)

    def flush_groups(self) -> None:
        """One line for each group's messages that were counted but not said; groups start afresh."""
        with self._lock:
            groups, self._groups = self._groups, {}
        for entry in groups.values():
            if entry.counted and entry.summary:
                labels = [label for label in entry.labels if label]
                by = labels[0] if len(labels) == 1 else ", ".join(f"{label} {entry.labels[label]}" for label in labels)
                text = _COUNTED.sub(lambda w, n=entry.counted: plural(n, w.group(1), w.group(2)), entry.summary)
                self._write(text.replace("{n}", str(entry.counted)).replace("{by}", by or "kernels"))

    def _write(self, text: str) -> None:
        try:  # kernel names and paths may hold controls (bidi, ANSI): shown escaped, never obeyed
            self.stream.write("lower-trace: " + "\n".join(printable_lines(text)) + "\n")
            self.stream.flush()
        except Exception:
            pass  # a closed stderr must not break the compile either
