"""A progress bar on a terminal: `lower-trace report` on a run of hundreds of kernels says how far
it is. Drawn on stderr only when it is a TTY (a pipe or a log gets nothing), at most ten times a
second, and erased when done so the answer (the report's path) stands alone."""

from __future__ import annotations

import time
from typing import TextIO

WIDTH = 30  # characters of the bar


class Progress:
    def __init__(self, stream: TextIO, total: int, label: str, unit: str = "kernels") -> None:
        self.stream, self.total, self.label, self.unit = stream, total, label, unit
        self.shown = _is_tty(stream) and total > 0
        self._started = time.monotonic()
        self._last = 0.0
        self._width = 0

    def update(self, done: int) -> None:
        if not self.shown:
            return
        now = time.monotonic()
        if 0 < done < self.total and now - self._last < 0.1:
            return  # the first and the last frame always; in between, ten a second
        self._last = now
        filled = WIDTH * done // self.total
        line = f"{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{self.total} {self.unit}  {now - self._started:.1f} s"
        self._write("\r" + line.ljust(self._width))
        self._width = len(line)

    def close(self) -> None:
        if self.shown and self._width:
            self._write("\r" + " " * self._width + "\r")
            self._width = 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.shown = False  # a closed or broken terminal: the work goes on without the bar


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
