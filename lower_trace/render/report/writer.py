"""The append-only HTML report: the page head once, then one block per finished kernel.

The file is one offline page at every moment: browsers accept elements after
the last one, and the page's script runs once everything is parsed and gathers
the blocks. So a traced run appends a kernel's block as soon as the kernel is
finished, and a process killed at any point leaves a report that opens and
shows every kernel finished before it. ``close()`` appends an end marker, so
the page can tell a finished run from one still running (or killed).

A kernel's block is a small JSON summary (what the index shows; read for every
kernel when the page opens) and one gzip+base64 payload -- the kernel's steps
and the snapshot texts no earlier block carried -- inflated only when the
kernel is opened. Each snapshot text is written once per run: the writer
remembers which block carried each digest (digests only, never texts), and a
block names the earlier blocks holding the rest. Memory stays flat however
many kernels a run compiles.

The source map (origins_data.py) is derived data: it is not computed while the program
compiles. A kernel's block says whether its snapshots carry source spans ("spans"); its source
map is appended later as a block of its own (``add_source_map``: ``lt-o<block>``, which the page
attaches to kernel block <block>) -- when the run closes (render/live.py) or when
``lower-trace report`` rebuilds the file (from_trace.py). A kernel left without one (a killed
run, the time budget at exit) says in the page how to add it.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import threading
import time
from collections.abc import Callable, Iterable

from lower_trace.analysis.device.summary import summarize
from lower_trace.analysis.timing import kernel_timing
from lower_trace.model import KernelTrace, RunInfo, spans_key
from lower_trace.model_json import to_json
from lower_trace.render.report.origins_data import origins_payload
from lower_trace.render.report.page import block as data_block
from lower_trace.render.report.page import (
    device_index,
    device_payload,
    json_for_script,
    kernel_steps,
    kernel_summary,
    launches_index,
    page_head,
    pointer_page,
    snapshot_digests,
)
from lower_trace.store.files import write_atomically


def write_pointer(path: str, target: str) -> None:
    """The pointer page at path that opens target (page.pointer_page), written atomically."""
    write_atomically(path, pointer_page(path, target))


def has_spans(kernel: KernelTrace, text_of: Callable[[str], str]) -> bool:
    """Whether any snapshot of the kernel has source spans stored beside it: then it has a source map."""
    for digest in snapshot_digests(kernel):
        try:
            if text_of(spans_key(digest)):
                return True
        except LookupError:  # a text_of that knows snapshots only
            return False
    return False


def add_source_maps(writer: ReportWriter, kernels: Iterable[KernelTrace], text_of: Callable[[str], str], budget_s: float | None = None) -> int:
    """The source maps of the kernels writer wrote a block for, in turn, until budget_s seconds
    have gone (None: no limit); how many kernels with spans were left without one. A kernel whose
    map fails to be made does not stop the others: the first such error is raised at the end."""
    deadline = None if budget_s is None else time.perf_counter() + budget_s
    left = 0
    failed: Exception | None = None
    for kernel in kernels:
        if not writer.wrote(kernel.kernel_id):
            continue
        if deadline is not None and time.perf_counter() > deadline:
            left += has_spans(kernel, text_of)
            continue
        try:
            writer.add_source_map(kernel, text_of)
        except OSError:
            raise  # the disk: no later block would be written either
        except Exception as exc:  # the analysis on this kernel: its page keeps the hint
            failed = failed or exc
    if failed is not None:
        raise failed
    return left


def pack(data: object) -> str:
    """base64 of gzip of JSON (level 3: a third of level 6's time, 30% larger): the page inflates it."""
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return base64.b64encode(gzip.compress(raw, compresslevel=3, mtime=0)).decode("ascii")


class ReportWriter:
    """Appends a run's report kernel by kernel. Thread-safe; raises OSError on disk faults.

    Creates nothing until the first ``add_kernel`` (or ``start``); notes added
    before that go into the page head, later ones are appended as note blocks.
    """

    def __init__(self, path: str, run: RunInfo, latest_link: str | None = None) -> None:
        self.path = os.path.abspath(path)
        self.run = run
        self.latest_link = latest_link
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._good = 0  # bytes in the file up to the end of the last complete block
        self._notes: list[str] = []  # notes waiting for the head
        self._holder: dict[str, int] = {}  # digest -> the block that carries its text
        self._block_of: dict[str, int] = {}  # kernel id -> its block (for its source map, added later)
        self._without_device: set[str] = set()  # kernels whose block had no device stage (it may come late)
        self._blocks = 0
        self._closed = False

    @property
    def kernels(self) -> int:
        """Kernel blocks written so far."""
        return self._blocks

    def wrote(self, kernel_id: str) -> bool:
        """Whether this writer wrote the block of that kernel."""
        return kernel_id in self._block_of

    def start(self) -> None:
        """Write the page head now (a report of a run with no kernel); add_kernel does it itself."""
        with self._lock:
            self._open()

    def add_kernel(self, kernel: KernelTrace, text_of: Callable[[str], str]) -> None:
        """Append the block of one finished kernel and flush it to the file.

        text_of(digest) gives the text of every snapshot the kernel's records
        name; it is asked only for those no earlier block carried.
        """
        with self._lock:
            if self._closed:
                raise ValueError(f"{self.path}: the report is closed")
            block = self._blocks
            new: dict[str, str] = {}
            refs: set[int] = set()
            for digest in snapshot_digests(kernel):
                holder = self._holder.get(digest)
                if holder is None:
                    new[digest] = text_of(digest) or ""
                else:
                    refs.add(holder)
            times = kernel_timing(kernel)  # once, for the steps and the summary's totals
            payload = {"steps": kernel_steps(times, text_of), "snapshots": new, "error": to_json(kernel.error) if kernel.error else None}
            device = summarize(kernel, lambda digest: text_of(digest) or "")
            if device is not None:
                payload["device"] = device_payload(device, lambda digest: text_of(digest) or "")
            else:
                self._without_device.add(kernel.kernel_id)
            if has_spans(kernel, text_of):  # a fact, looked up: the source map itself is computed later
                payload["spans"] = True
            summary = kernel_summary(kernel, block, sorted(refs), times, device)
            chunk = (
                data_block(pack(payload), "application/octet-stream", "lt-payload", f"lt-p{block}")
                + data_block(json_for_script(summary), "application/json", "lt-kernel")
            )
            self._open()
            self._append(chunk)
            for digest in new:
                self._holder[digest] = block
            self._block_of[kernel.kernel_id] = block
            self._blocks += 1

    def add_source_map(self, kernel: KernelTrace, text_of: Callable[[str], str]) -> bool:
        """Append the source map of a kernel whose block this writer wrote, as a block of its own
        (``lt-o<block>``; JSON null when no line has an origin after all). False, and nothing
        written, for a kernel it wrote no block for or one without spans (whose block says so).
        Computed outside the lock: the listener's close calls it, while nothing else writes."""
        block = self._block_of.get(kernel.kernel_id)
        if block is None or not has_spans(kernel, text_of):
            return False
        origins = origins_payload(kernel, text_of, snapshot_digests(kernel))
        chunk = data_block(pack(origins), "application/octet-stream", "lt-origins", f"lt-o{block}")
        with self._lock:
            if self._closed:
                raise ValueError(f"{self.path}: the report is closed")
            self._append(chunk)
        return True

    def add_device(self, kernel: KernelTrace, text_of: Callable[[str], str]) -> bool:
        """Append the device stage of a kernel whose block was written before it had one (one core:
        ptxas' report waits for the run's close), as blocks of its own: ``lt-d<block>`` (the
        payload's device part) and an ``lt-device`` summary for the index. False, and nothing
        written, for a kernel whose block had its device stage or that still has none."""
        block = self._block_of.get(kernel.kernel_id)
        if block is None or kernel.kernel_id not in self._without_device:
            return False
        device = summarize(kernel, lambda digest: text_of(digest) or "")
        if device is None:
            return False
        chunk = data_block(pack(device_payload(device, lambda digest: text_of(digest) or "")), "application/octet-stream", "lt-device-payload", f"lt-d{block}")
        chunk += data_block(json_for_script({"block": block, "device": device_index(device)}), "application/json", "lt-device")
        with self._lock:
            if self._closed:
                raise ValueError(f"{self.path}: the report is closed")
            self._append(chunk)
            self._without_device.discard(kernel.kernel_id)
        return True

    def add_launches(self, kernel: KernelTrace, run_path: str) -> bool:
        """Append a kernel's recorded launches (they come after its compile, so after its block) as a block
        of its own, ``lt-launches``. False, and nothing written, for a kernel it wrote no block for or
        without launches."""
        block = self._block_of.get(kernel.kernel_id)
        if block is None or not kernel.launches:
            return False
        chunk = data_block(json_for_script({"block": block, "launches": launches_index(kernel, run_path)}), "application/json", "lt-launches")
        with self._lock:
            if self._closed:
                raise ValueError(f"{self.path}: the report is closed")
            self._append(chunk)
        return True

    def add_note(self, text: str) -> None:
        """A note for the run header (kernel cache bypassed, ...)."""
        with self._lock:
            if self._closed:
                return
            if self._fd is None:
                self._notes.append(text)
                return
            self._append(data_block(json_for_script(text), "application/json", "lt-note"))

    def close(self) -> str:
        """Append the end marker (if anything was written) and close the file; returns its absolute path."""
        with self._lock:
            if self._closed:
                return self.path
            self._closed = True
            if self._fd is None:
                return self.path
            try:
                self._append(data_block(json_for_script({"kernels": self._blocks}), "application/json", ident="lt-end"))
            finally:
                self._release_fd()
        return self.path

    # --- the file --------------------------------------------------------------------

    def _open(self) -> None:
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._fd, self._good = fd, 0
        try:
            self._append(page_head(self.run, self._notes))
        except BaseException:
            self._release_fd()
            raise
        self._notes = []
        if self.latest_link:
            write_pointer(self.latest_link, self.path)

    def _append(self, text: str) -> None:
        """Write text whole, or put the file back as it was after the last complete block."""
        data = memoryview(text.encode("utf-8", "surrogatepass"))
        assert self._fd is not None
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except BaseException:
            try:
                os.ftruncate(self._fd, self._good)
                os.lseek(self._fd, self._good, os.SEEK_SET)
            except OSError:
                pass
            raise
        self._good = os.lseek(self._fd, 0, os.SEEK_CUR)

    def _release_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def discard(self) -> None:
        """Close the file without an end marker, for a caller that throws the file away."""
        with self._lock:
            self._closed = True
            self._release_fd()
