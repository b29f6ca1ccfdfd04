"""Which TileLang release turned the user's check bad (lower-trace bisect --versions).

Two jobs: the venv cache -- one venv per release, ``<cache>/tilelang-<version>`` (the naming of the
project's own .venvs, so that folder can be named as the cache), built once with pip the way
scripts/env.sh builds the project's venvs and reused while it imports -- and the search over the
releases, which asks a callable for each release's outcome so that it can be tested without pip.
A release that does not install or import is skipped (said in one line), never fatal.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TextIO

DEFAULT_CACHE = os.path.join("~", ".cache", "lower-trace", "venvs")
TORCH_PIN = "torch==2.13.0"  # the CPU-only build; unpinned pulls multi-GB CUDA wheels
# Releases whose loose apache-tvm-ffi pin resolves to one that breaks them. This table MUST agree with
# the flavors of scripts/env.sh (testing/unit/test_version_pins.py reads env.sh and checks it does).
TVM_FFI_PINS = {"0.1.13": "0.1.12", "0.1.9": "0.1.10"}
# Written last into a venv this module built: a venv without it is half-built (or someone else's).
STAMP = ".lower-trace-venv"
READY_CHECK = "import tilelang, lower_trace"

Outcome = Literal["good", "bad", "skipped"]


class VenvError(Exception):
    """A release's venv cannot be had (one line: why)."""


def venv_dir(cache: str, version: str) -> str:
    return os.path.join(cache, f"tilelang-{version}")


def venv_python(venv: str) -> str:
    return os.path.join(venv, "bin", "python")


def pins(version: str) -> list[str]:
    """What pip installs next to lower-trace for one release (scripts/env.sh's PINS for its flavor)."""
    ffi = TVM_FFI_PINS.get(version)
    return [f"tilelang=={version}", *([f"apache-tvm-ffi=={ffi}"] if ffi else []), TORCH_PIN]


def lower_trace_source() -> str:
    """What pip installs lower-trace from: this package's source folder when it runs from one (a
    checkout), else the release of lower-trace that is running (installed from a wheel)."""
    from importlib import metadata

    # this file is lower_trace/regress/releases.py (the package root is not imported: it is a layer above)
    folder = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        with open(os.path.join(folder, "pyproject.toml"), encoding="utf-8") as handle:
            if 'name = "lower-trace"' in handle.read():
                return folder
    except OSError:
        pass
    try:
        return f"lower-trace=={metadata.version('lower-trace')}"
    except metadata.PackageNotFoundError:
        return "lower-trace"


def imports(python: str) -> tuple[bool, str]:
    """Whether the venv's interpreter imports TileLang and lower-trace (run outside any checkout, so
    that a lower_trace folder in the current directory is not what answers); else its last line."""
    try:
        proc = subprocess.run([python, "-c", READY_CHECK], capture_output=True, text=True, timeout=300, cwd=os.path.dirname(python))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    return proc.returncode == 0, last_line(proc.stderr)


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]  # pip's own reason, when it gives one
    return (errors or lines or [""])[-1][:300]


def ensure_venv(cache: str, version: str, say: Callable[[str], None]) -> str:
    """The release's interpreter, from its venv in the cache: reused when it imports, else built
    (python -m venv, then pip). VenvError when it cannot be had; a venv it fails to build is removed."""
    venv = venv_dir(cache, version)
    python = venv_python(venv)
    source = lower_trace_source()
    if os.path.exists(python):
        ok, why = imports(python)
        if ok and _stamp(venv) not in ("", fingerprint(source)):
            _refresh(venv, version, source, say)  # ours, with another lower-trace than this one: that one replaced
        if ok:
            return python
        if not os.path.exists(os.path.join(venv, STAMP)) and not _half_built(venv):
            raise VenvError(f"{venv} exists but does not import tilelang and lower_trace ({why}); remove it to have it rebuilt")
    if os.path.exists(venv):
        shutil.rmtree(venv)  # ours (stamped or half-built): built anew
    os.makedirs(cache, exist_ok=True)
    wanted = [*pins(version), source]
    say(f"{version}: building {venv} (pip install {' '.join(wanted)}) ...")
    log = os.path.join(cache, f"tilelang-{version}.log")
    try:
        with open(log, "w", encoding="utf-8", errors="replace") as out:
            _step([sys.executable, "-m", "venv", venv], out, "python -m venv")
            with open(os.path.join(venv, STAMP + ".building"), "w", encoding="utf-8") as mark:
                mark.write(fingerprint(source) + "\n")
            # The release first (as env.sh does): a release pip cannot find is said as pip says it.
            _step([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *wanted[:-1]], out, "pip install")
            _step([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", wanted[-1]], out, "pip install of lower-trace")
        ok, why = imports(python)
        if not ok:
            raise VenvError(f"installed, but {READY_CHECK!r} fails: {why}")
    except VenvError:
        shutil.rmtree(venv, ignore_errors=True)
        raise
    os.replace(os.path.join(venv, STAMP + ".building"), os.path.join(venv, STAMP))
    return python


def fingerprint(source: str) -> str:
    """Which lower-trace a venv was given: the release, or the source folder and a hash of its code
    (a checkout's edits make another one, so the trace a venv writes is the running code's)."""
    if not os.path.isdir(source):
        return source
    digest = hashlib.sha256()
    for folder in ("lower_trace", "startup"):
        for root, dirs, files in sorted(os.walk(os.path.join(source, folder))):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if not name.endswith((".pyc", ".pyo")):
                    path = os.path.join(root, name)
                    digest.update(os.path.relpath(path, source).encode() + b"\0")
                    with open(path, "rb") as handle:
                        digest.update(handle.read())
    return f"{source} {digest.hexdigest()[:16]}"


def _stamp(venv: str) -> str:
    """The fingerprint a venv this module built was stamped with ("" for any other venv)."""
    try:
        with open(os.path.join(venv, STAMP), encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _refresh(venv: str, version: str, source: str, say: Callable[[str], None]) -> None:
    say(f"{version}: reinstalling lower-trace in {venv} ({source} changed)")
    with open(os.path.join(os.path.dirname(venv), f"tilelang-{version}.log"), "a", encoding="utf-8", errors="replace") as out:
        argv = [venv_python(venv), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--force-reinstall", source]
        _step(argv, out, "pip install of lower-trace")
    with open(os.path.join(venv, STAMP), "w", encoding="utf-8") as handle:
        handle.write(fingerprint(source) + "\n")


def _half_built(venv: str) -> bool:
    return os.path.exists(os.path.join(venv, STAMP + ".building"))


def _step(argv: list[str], out: TextIO, what: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    out.write(f"$ {' '.join(argv)}\n{proc.stdout}{proc.stderr}\n")
    if proc.returncode != 0:
        raise VenvError(f"{what} failed (exit {proc.returncode}): {last_line(proc.stderr or proc.stdout)}")


# A release number as PEP 440 writes the common ones: 0.1.13, 0.1.6.post1, 0.2.0rc1, 0.1.7.dev3+local.
_RELEASE = re.compile(
    r"v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?(\d*))?"  # 0.2.0, 0.2.0rc1
    r"(?:[-_.]?(?:post|rev|r)[-_.]?(\d*))?(?:[-_.]?dev[-_.]?(\d*))?(?:\+[a-z0-9.]+)?"  # .post1, .dev3, +local
)
_PHASES = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


def release_key(version: str) -> tuple:
    """What orders releases as pip does (PEP 440): 0.1.9 < 0.1.13, 0.2.0.dev1 < 0.2.0rc1 < 0.2.0 <
    0.2.0.post1. ValueError for what is not a release number."""
    match = _RELEASE.fullmatch(version.strip().lower())
    if match is None:
        raise ValueError(version)
    numbers, phase, pre, post, dev = match.groups()
    release = [int(n) for n in numbers.split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()  # 1.0 is 1.0.0
    if phase is not None:
        stage = (_PHASES[phase], int(pre or 0))
    elif dev is not None and post is None:
        stage = (-1, 0)  # 1.0.dev1 comes before 1.0a1
    else:
        stage = (3, 0)
    return (tuple(release), stage, int(post or 0) if post is not None else -1, int(dev or 0) if dev is not None else float("inf"))


def oldest_first(versions: Sequence[str]) -> list[str]:
    """The releases sorted oldest first (ValueError naming the first that is no release number)."""
    for version in versions:
        release_key(version)
    return sorted(versions, key=release_key)


@dataclass
class Search:
    """Where the search ended: kind is "found", "first bad", "all good" or "too few"."""

    kind: str
    good: str = ""  # the last good release (found), or the last one checked (all good)
    bad: str = ""  # the first bad release (found, first bad)
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # in the order they were checked
    usable: list[str] = field(default_factory=list)


def search(versions: Sequence[str], outcome: Callable[[str], Outcome]) -> Search:
    """The first bad release of versions (oldest first), given the first is good and the last bad:
    those two are checked first, then a binary search between them. A release whose outcome is
    "skipped" (it does not install or import) drops out and its neighbour is taken instead."""
    outcomes: dict[str, Outcome] = {}

    def check(version: str) -> Outcome:
        outcomes[version] = outcome(version)
        return outcomes[version]

    usable = list(versions)
    while usable and check(usable[0]) == "skipped":
        usable.pop(0)
    while len(usable) >= 2 and check(usable[-1]) == "skipped":
        usable.pop()
    if len(usable) < 2:
        return Search("too few", outcomes=outcomes, usable=usable)
    if outcomes[usable[0]] == "bad":
        return Search("first bad", bad=usable[0], outcomes=outcomes, usable=usable)
    if outcomes[usable[-1]] == "good":
        return Search("all good", good=usable[-1], outcomes=outcomes, usable=usable)
    low, high = 0, len(usable) - 1  # usable[low] is good, usable[high] bad
    while high - low > 1:
        middle = (low + high) // 2
        found = check(usable[middle])
        if found == "skipped":
            usable.pop(middle)
            high -= 1
        elif found == "good":
            low = middle
        else:
            high = middle
    return Search("found", good=usable[low], bad=usable[high], outcomes=outcomes, usable=usable)
