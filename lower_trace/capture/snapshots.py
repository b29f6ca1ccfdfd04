"""The snapshot decision of one compile: which modules need printing, and the texts printed.

The compiler's thread only decides *whether* a module needs a snapshot: content already seen
is recognised by identity (a few pointer compares). Printing, hashing and storing happen as a
job on the run's worker, in submission order, while the compile goes on; the printer is the
integration's (it may reuse the text of functions it printed before, never changing a character).
"""

from __future__ import annotations

from collections.abc import Callable

from lower_trace.capture.ir_adapter import Identity, IRAdapter, Module
from lower_trace.capture.worker import SnapshotRef, Worker
from lower_trace.model import spans_key
from lower_trace.store.layout import digest_of

RECENT = 8  # recent contents remembered; covers nested passes and the host/device split


class Snapshots:
    def __init__(self, ir: IRAdapter, worker: Worker, store: Callable[[str, str], None]) -> None:
        self.ir = ir
        self.worker = worker
        self._store = store  # into the trace: (digest, text)
        self._recent: list[tuple[Identity, SnapshotRef]] = []
        self._printer = ir.snapshot_printer()
        # Filled on the worker; handed to the run's listeners with the kernel, then None.
        self.texts: dict[str, str] | None = {}

    def of(self, mod: Module, identity: Identity | None = None) -> SnapshotRef:
        """The snapshot of mod's content now: a recent one when the content is the same, else a
        new one whose text the worker prints (urgent: printing is the work worth starting now)."""
        if identity is None:
            identity = self.ir.identity(mod)
        same = self.ir.same
        for seen, ref in self._recent:
            if same(seen, identity):
                return ref
        ref = SnapshotRef()
        self.worker.submit(lambda: self._print(ref, identity), urgent=True)
        self.remember(identity, ref)
        return ref

    def remember(self, identity: Identity, ref: SnapshotRef) -> None:
        """Content known to print as ref does (a pass's output structurally equal to its input)."""
        recent = self._recent
        recent.insert(0, (identity, ref))
        del recent[RECENT:]

    def _print(self, ref: SnapshotRef, identity: Identity) -> None:
        text, spans = self._printer(identity)
        ref.digest = self.store_text(text)
        if spans:
            self.store_text(spans, spans_key(ref.digest))

    def user_files(self) -> list[str]:
        """The user's files this compile's spans name (on the worker, once the prints are done)."""
        return self._printer.user_files()

    def store_text(self, text: str, key: str = "") -> str:
        """Keep a text of this compile (a snapshot, a generated source) under its digest (or key)."""
        digest = key or digest_of(text)
        if self.texts is not None:  # None once the kernel was handed over
            self.texts[digest] = text
        self._store(digest, text)
        return digest

    def forget(self) -> None:
        """The compile ended: no new snapshots (prints still queued hold their own identities)."""
        self._recent.clear()

    def hand_over(self) -> dict[str, str]:
        """On the worker, after every job of the compile: its texts, for the run's listeners. The
        printer's memory (texts and functions it may reuse) goes with them."""
        texts, self.texts = self.texts or {}, None
        ir = self.ir
        self._printer = _Plain(ir)
        return texts


class _Plain:
    """After the hand-over: whole prints, no spans (a late snapshot is rare and shown without)."""

    def __init__(self, ir: IRAdapter) -> None:
        self._ir = ir

    def __call__(self, identity: Identity) -> tuple[str, str]:
        return self._ir.print_ir(self._ir.rebuild(identity)), ""

    def user_files(self) -> list[str]:
        return []
