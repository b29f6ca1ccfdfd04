"""Running NVIDIA's tools on a kernel: nvcc on a source (on demand), ptxas' resource report on
its PTX, nvdisasm on its cubin. Each call is one child process; nothing here touches TileLang."""
from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

from lower_trace.integrations.nvcc.toolchain import require

TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Built:
    """What a compile left: the PTX, the cubin, and the compiler's own output."""

    ptx: str
    binary: bytes
    output: str  # everything nvcc and its stages printed
    command: tuple[str, ...]  # nvcc and its flags; the (temporary) output and input files left out


class BuildFailed(RuntimeError):
    """The compiler rejected the source; the message is its output."""


def keep_flags(folder: str) -> list[str]:
    """What makes nvcc leave its intermediate files (the PTX) in folder; the binary it writes is
    byte for byte the one it writes without them (testing/integration/test_device.py)."""
    return ["--keep", "--keep-dir", folder]


def kept_ptx(folder: str) -> str:
    """The PTX nvcc left in a --keep folder ("" if none)."""
    for path in sorted(glob.glob(os.path.join(folder, "*.ptx"))):
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    return ""


def compile_source(source: str, name: str, arch_flags: list[str], flags: list[str]) -> Built:
    """nvcc --cubin of one generated source, as TileLang compiles it (flags: its options)."""
    nvcc = require("nvcc", "lower-trace device")
    with _folder("lower-trace-device-") as folder:
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(source)
        binary_path = os.path.join(folder, "kernel.cubin")
        keep = os.path.join(folder, "keep")
        os.mkdir(keep)
        command = [nvcc, "--cubin", "-O3", "-lineinfo", *arch_flags, *flags, "-o", binary_path, path]
        proc = subprocess.run([*command[:-3], *keep_flags(keep), *command[-3:]], capture_output=True, text=True, timeout=TIMEOUT_S, cwd=folder)
        output = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            raise BuildFailed(output or f"nvcc exited with {proc.returncode}")
        with open(binary_path, "rb") as handle:
            binary = handle.read()
        return Built(kept_ptx(keep), binary, output, tuple(command[:-3]))  # as a capture records it: no temporary files


def ptxas_flags(nvcc_flags: list[str]) -> list[str]:
    """The flags of an nvcc command that change what ptxas makes (-Xptxas, --ptxas-options,
    --maxrregcount), as ptxas takes them."""
    out: list[str] = []
    items = iter(nvcc_flags)
    for flag in items:
        for prefix in ("--ptxas-options=", "-Xptxas=", "-Xptxas ", "--ptxas-options "):
            if flag.startswith(prefix):
                out += flag[len(prefix):].split(",")
        if flag in ("-Xptxas", "--ptxas-options"):
            out += next(items, "").split(",")
        elif flag.startswith(("--maxrregcount=", "-maxrregcount=")):
            out.append("--maxrregcount=" + flag.split("=", 1)[1])
        elif flag in ("-maxrregcount", "--maxrregcount"):
            out.append("--maxrregcount=" + next(items, ""))
    return [flag for flag in out if flag and flag not in ("-v", "--verbose")]


def resource_report(ptx: str, arch: str, nvcc_flags: list[str], background: bool = False) -> str:
    """ptxas --verbose's report on the PTX nvcc made, with nvcc's ptxas flags (ptxas is
    deterministic: the same PTX and flags give the binary's numbers; -v itself changes only a
    note in its output, so the user's compile runs without it). background: at the lowest CPU
    priority (while a traced program compiles)."""
    ptxas = require("ptxas", "the resource report")
    with _folder("lower-trace-ptxas-") as folder:
        path = os.path.join(folder, "kernel.ptx")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(ptx)
        command = [ptxas, f"-arch={arch}", "-m64", "--generate-line-info", "--verbose", *ptxas_flags(nvcc_flags), path, "-o", os.path.join(folder, "k.cubin")]
        proc = _run(command, background)
    if proc.returncode != 0:
        raise BuildFailed((proc.stdout + proc.stderr).strip())
    return proc.stdout + proc.stderr


def _run(command: list[str], background: bool) -> subprocess.CompletedProcess[str]:
    """The command's output. In the background it runs at nice 19: a traced program's own
    compiles (TileLang's nvcc, the passes) come first wherever they compete for a core, and the
    device stage's tools use what they leave (benchmarks/device.py, on one core)."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True) as proc:
        if background:
            with contextlib.suppress(OSError):  # it may have ended already
                os.setpriority(os.PRIO_PROCESS, proc.pid, 19)
        try:
            out, err = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise BuildFailed(f"{os.path.basename(command[0])} took over {TIMEOUT_S:.0f} s") from None
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


@contextlib.contextmanager
def _folder(prefix: str) -> Iterator[str]:
    """A private temporary folder, removed on leaving. Not tempfile.TemporaryDirectory: its
    finalizer runs at interpreter exit, and removed the folder under the worker thread's
    last jobs (a traced script's last kernel)."""
    folder = tempfile.mkdtemp(prefix=prefix)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def disassemble(binary: bytes, background: bool = False) -> str:
    """nvdisasm -c -gi of a cubin: its code sections as SASS, with line records and inlining chains."""
    nvdisasm = require("nvdisasm", "SASS")
    with _folder("lower-trace-sass-") as folder:
        path = os.path.join(folder, "kernel.cubin")
        with open(path, "wb") as handle:
            handle.write(binary)
        proc = _run([nvdisasm, "--print-code", "-gi", path], background)
    if proc.returncode != 0:
        raise BuildFailed(proc.stderr.strip() or f"nvdisasm exited with {proc.returncode}")
    return proc.stdout


def remove_later(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)
