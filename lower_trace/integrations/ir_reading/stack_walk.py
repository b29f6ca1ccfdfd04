"""Where a pass was run from, found by walking the Python stack.

Used to name passes that were defined without a name (TileLang's ``pass_fn``)
and to place passes that ran outside any named pipeline phase. Only a handful
of frames are looked at, so this stays cheap.
"""

from __future__ import annotations

import ast
import linecache
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import NamedTuple

_FACTORY_CALL = re.compile(r"([A-Za-z_]\w*)\s*\([^()]*\)\s*\(")
_CALLED = re.compile(r"=\s*([A-Za-z_][\w.]*)\s*\(\s*\w+\s*\)\s*$")
_MAX_FRAMES = 24


class FactoryRef(NamedTuple):
    """A pass factory by where an import finds it: ``module.name`` (tilelang.transform, ThreadSync)."""

    module: str
    name: str


class CallSite:
    """A frame that called into the compiler (a plain class: one is made per pass, on the hot path)."""

    __slots__ = ("filename", "frame", "function", "lineno")

    def __init__(self, function: str, filename: str, lineno: int, frame: FrameType | None = None) -> None:
        self.function = function  # qualified name, e.g. "CUDAPassPipelineBody"
        self.filename = filename
        self.lineno = lineno
        self.frame = frame  # the frame itself (only while the pass starts)

    def __eq__(self, other: object) -> bool:  # as a frozen dataclass compared them: not by frame
        if not isinstance(other, CallSite):
            return NotImplemented
        return (self.function, self.filename, self.lineno) == (other.function, other.filename, other.lineno)

    def __hash__(self) -> int:
        return hash((self.function, self.filename, self.lineno))

    def __repr__(self) -> str:
        return f"CallSite(function={self.function!r}, filename={self.filename!r}, lineno={self.lineno!r})"

    def source_line(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()


_PREFIXES: dict[tuple[str, ...], tuple[str, ...]] = {}


def call_sites(skip_dirs: Sequence[str], marker: CodeType | None = None, limit: int = 8) -> tuple[list[CallSite], int]:
    """Python frames that called into the compiler, innermost first, skipping library internals.

    With a `marker` code object (e.g. ``Pass.__call__``) the whole stack is walked
    and the frames running it are counted: that tells how many nested passes were
    called from Python rather than C++. Without one, the walk stops at `limit` sites.
    """
    prefixes = _PREFIXES.get(skip_dirs if isinstance(skip_dirs, tuple) else tuple(skip_dirs))
    if prefixes is None:
        prefixes = _PREFIXES[tuple(skip_dirs)] = tuple(os.path.join(d, "") for d in skip_dirs)
    sites: list[CallSite] = []
    marked = 0
    frame: FrameType | None = sys._getframe(1)
    seen = 0
    while frame is not None and seen < _MAX_FRAMES:
        code = frame.f_code
        if code is marker:
            marked += 1
        elif len(sites) < limit and not code.co_filename.startswith(prefixes):
            sites.append(CallSite(getattr(code, "co_qualname", code.co_name), code.co_filename, frame.f_lineno, frame))
        elif marker is None and len(sites) >= limit:
            break
        frame = frame.f_back
        seen += 1
    return sites, marked


def factory_name(site: CallSite) -> str | None:
    """For ``Factory()(mod)`` on the caller's line, the name ``Factory``; for
    ``mod = pipeline(mod)``, the name ``pipeline``."""
    line = site.source_line()
    matches = _FACTORY_CALL.findall(line)
    if matches:
        return matches[-1]
    called = _CALLED.search(line)
    return called.group(1).rsplit(".", 1)[-1] if called else None


class CallArg(NamedTuple):
    """One argument of a factory call, as written on the line."""

    keyword: str  # "" for a positional one
    source: str
    code: CodeType  # the expression, compiled


@dataclass(frozen=True)
class CallShape:
    """``Factory(args)(mod)`` on a line: the factory as written and each argument, compiled.
    simple: no argument calls anything (only names, attributes, literals, operators)."""

    factory: str
    factory_code: CodeType
    args: tuple[CallArg, ...]
    simple: bool


_SHAPES: dict[tuple[str, int], CallShape | None] = {}
_MAX_STATEMENT_LINES = 6


def call_shape(site: CallSite, short_name: str) -> CallShape | None:
    """The factory call on the site's line whose factory is named short_name (as TVM names the
    pass, without namespace), when its factory takes arguments there; None otherwise. Parsed once
    per line."""
    key = (site.filename, site.lineno)
    if key not in _SHAPES:
        _SHAPES[key] = _parse_call(site.filename, site.lineno)
    shape = _SHAPES[key]
    if shape is None or shape.factory.rsplit(".", 1)[-1] != short_name:
        return None
    return shape


def _parse_call(filename: str, lineno: int) -> CallShape | None:
    tree = None
    lines = []
    for offset in range(_MAX_STATEMENT_LINES):  # a statement may continue over the next lines
        lines.append(linecache.getline(filename, lineno + offset))
        if not lines[-1]:
            break
        try:
            tree = ast.parse("".join(lines).strip())
            break
        except SyntaxError:
            continue
    if tree is None:
        return None
    for node in ast.walk(tree):
        # Factory(args)(mod): a call whose function is itself a call of a (dotted) name.
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Call)):
            continue
        inner = node.func
        if not isinstance(inner.func, (ast.Name, ast.Attribute)) or not (inner.args or inner.keywords):
            return None
        if any(isinstance(arg, ast.Starred) for arg in inner.args) or any(kw.arg is None for kw in inner.keywords):
            return None  # *args / **kwargs: not written down here
        pairs = [("", arg) for arg in inner.args] + [(str(kw.arg), kw.value) for kw in inner.keywords]
        args = tuple(CallArg(key, ast.unparse(expr), compile(ast.Expression(expr), filename, "eval")) for key, expr in pairs)
        simple = not any(isinstance(sub, (ast.Call, ast.Lambda, ast.NamedExpr, ast.Yield, ast.Await)) for _, expr in pairs for sub in ast.walk(expr))
        factory = ast.unparse(inner.func)
        return CallShape(factory, compile(ast.Expression(inner.func), filename, "eval"), args, simple)
    return None
