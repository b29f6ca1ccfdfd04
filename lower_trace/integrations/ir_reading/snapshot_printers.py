"""The two snapshot printers ``TVMIR.snapshot_printer`` hands a compile: plain text, or text with
the statements' source spans (tir_spans.py). Both reuse the text of functions that did not
change (tvm_print.py)."""

from __future__ import annotations

import linecache
import os
from collections.abc import Callable

from lower_trace.capture.ir_adapter import Identity, Module
from lower_trace.integrations.ir_reading import tir_spans
from lower_trace.integrations.ir_reading.tvm_print import ReusingPrinter


class PlainPrinter:
    """Snapshots without spans."""

    def __init__(self, printer: ReusingPrinter) -> None:
        self._printer = printer

    def __call__(self, identity: Identity) -> tuple[str, str]:
        return self._printer(identity), ""

    def user_files(self) -> list[str]:
        return []


class SpanSnapshotPrinter:
    """Snapshots printed with span markers (pieced together by ReusingPrinter, markers and all),
    split into the plain text and its spans."""

    def __init__(self, rebuild: Callable[[Identity], Module], spans: tir_spans.SpanPrinter) -> None:
        self._rebuild = rebuild
        self._spans = spans
        self._printer = ReusingPrinter(spans.print_marked)

    def __call__(self, identity: Identity) -> tuple[str, str]:
        return self._spans.split(self._printer(identity), lambda: self._rebuild(identity))

    def user_files(self) -> list[str]:
        files = self._spans.files
        # A notebook cell's code is in linecache only (capture reads it from there).
        return [name for name in files.names if not files.is_library(name) and (os.path.isfile(name) or name in linecache.cache)]
