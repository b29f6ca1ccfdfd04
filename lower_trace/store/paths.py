"""Turning names that come from kernels, passes and scripts into safe path parts.

This is how nothing is written outside the trace folder: every name that becomes part of a
path (the script's folder, a working copy, a reproducer's folder, a test's folder) is one
safe_component, which cannot climb out (no separator, never '.' or '..'); names read back
from the edit index are held to the same rule (edits/entries.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys

from lower_trace.config import notebook_file

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_COMPONENT = 80
# What a Jupyter kernel's sys.argv[0] is (python -m ipykernel_launcher; -m ipykernel; Colab's own).
NOTEBOOK_LAUNCHERS = ("ipykernel_launcher", "ipykernel", "colab_kernel_launcher")


def safe_component(name: str, fallback: str = "unnamed") -> str:
    """One path component made only of [A-Za-z0-9._-], never '.', '..' or empty.

    Long or rewritten names keep a short hash of the original, so two different
    names never collapse into the same file.
    """
    text = str(name)
    cleaned = _UNSAFE.sub("_", text).strip("._-")
    if not cleaned:
        cleaned = fallback
    if cleaned != text or len(cleaned) > MAX_COMPONENT:
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
        cleaned = f"{cleaned[: MAX_COMPONENT - 9]}-{digest}"
    return cleaned


def script_name(argv: list[str] | None = None) -> str:
    """The folder name for the running program: its script's stem; in a Jupyter kernel the notebook's
    stem (or 'notebook' when Jupyter does not say which); 'python' when interactive."""
    args = sys.argv if argv is None else argv
    first = args[0] if args else ""
    if not first or first in ("-c", "-"):
        return "python"
    stem = os.path.splitext(os.path.basename(first))[0]
    if stem == "__main__":  # python -m package: name it after the package
        stem = os.path.basename(os.path.dirname(first)) or stem
    if stem in NOTEBOOK_LAUNCHERS:  # a notebook's kernel: its runs (and working copies) are the notebook's
        notebook = os.path.splitext(os.path.basename(notebook_file()))[0]
        return safe_component(notebook, fallback="notebook") if notebook else "notebook"
    return safe_component(stem, fallback="python")
