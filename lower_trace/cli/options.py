"""What the commands share: the trace argument, -k, -U, --color, and how --json answers are printed."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from lower_trace.config import DEFAULT_TRACE_DIR, ENV_DIR, default_trace_dir

TRACE_HELP = f"a run folder, a script folder or the trace root; the latest run is taken (default: ${ENV_DIR} or {DEFAULT_TRACE_DIR})"


def add_trace(parser: Any, help: str = TRACE_HELP) -> None:
    """The optional TRACE positional (default: the trace folder the environment names)."""
    parser.add_argument("trace", nargs="?", default=default_trace_dir(), help=help)


def add_kernel(parser: Any) -> None:
    parser.add_argument("-k", "--kernel", help="kernel id (k1), name or number")


def add_context(parser: Any) -> None:
    """-U, for the commands that print diffs."""
    parser.add_argument("-U", "--context", type=int, default=3, help="lines of context around changes (default 3)")


def add_color(parser: Any) -> None:
    parser.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto",
        help="colour: always, never, or auto (default): as NO_COLOR / FORCE_COLOR say, else on a terminal",
    )


def color_wanted_by(args: argparse.Namespace) -> bool | None:
    """--color as the renderers take it: True, False, or None (decide from the stream)."""
    return {"always": True, "never": False}.get(args.color)


def print_json(data: object) -> None:
    """An answer for tools (every --json of the CLI)."""
    json.dump(data, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
