"""Inlined lets: which user assignment a ``condval`` block of the generated source is the code of.

TileLang substitutes a scalar the user assigned (``num_steps = T.if_then_else(c, a, b)``) into every
statement that reads it, and the C printer writes each ``T.if_then_else`` as a block in front of
that statement::

    int condval_1;
    if (c) { condval_1 = a; } else { condval_1 = b; }

The line map gives the block the reading statement's line; the user wrote it on the assignment's.
Which assignment: the reading statement's expressions with every inlined name replaced by the value
assigned to it, walked in the order the printer opens blocks (those of a condition first, then its
own, then those of either value, codegen_c.cc's ``if_then_else``). A plain Python helper the kernel
calls is expanded in place, on the caller's line, as TileLang's parser does.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass

from lower_trace.analysis.origin_rules import GUESS, LET, Origin, Origins, SourceOf, parsed

_DECLARED = re.compile(r"\s*[A-Za-z_][\w:<>, ]*[\s*]+condval(?:_\d+)?;\s*$")
_OPENS = re.compile(r"\s*if \(.*\{\s*$")
_DEPTH = 32  # nested lets deeper than this are no user's: stop rather than recurse without end


def let_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """(declaration, closing brace) of every ``condval`` block, 0-based, in text order."""
    blocks = []
    for first, text in enumerate(lines):
        if not _DECLARED.match(text) or first + 1 >= len(lines) or not _OPENS.match(lines[first + 1]):
            continue
        depth, last = 0, first + 1
        for last in range(first + 1, len(lines)):
            depth += lines[last].count("{") - lines[last].count("}")
            if depth <= 0:
                break
        blocks.append((first, last))
    return blocks


def place_inlined_lets(lines: list[str], origins: Origins, tir_lines: list[int], tir: list[str], source_of: SourceOf) -> None:
    """Give every ``condval`` block the line of the user's assignment it prints (in place). When the
    reading statement's text does not account for the blocks one to one, they are a guess on it."""
    groups: dict[int, list[tuple[int, int]]] = {}
    for first, last in let_blocks(lines):
        k = tir_lines[first] - 1 if first < len(tir_lines) else -1
        if 0 <= k < len(tir) and origins[first] is not None:
            groups.setdefault(k, []).append((first, last))
    for k, blocks in groups.items():
        reader = origins[blocks[0][0]]
        assert reader is not None
        source = source_of(reader.file)
        opened = if_then_else_lines(tuple(source), reader.line, tir[k]) if source else None
        if opened is not None and set(opened) <= {reader.line}:
            continue  # the statement's own T.if_then_else: its line is right
        for n, (first, last) in enumerate(blocks):
            if opened is not None and len(opened) == len(blocks):
                origin = Origin(reader.file, opened[n], LET if reader.certain else GUESS)
            else:
                origin = Origin(reader.file, reader.line, GUESS, reader.library)
            for i in range(first, last + 1):
                if origins[i] is not None and (i >= len(tir_lines) or tir_lines[i] - 1 == k):
                    origins[i] = origin


@functools.lru_cache(maxsize=256)
def if_then_else_lines(source: tuple[str, ...], line: int, tir_line: str) -> tuple[int, ...] | None:
    """The line of each ``T.if_then_else`` the statement on ``line`` prints, in the printer's order:
    its own on ``line``, those of a name it reads on the line that assigns the name (when the name
    is gone from the TIR statement, i.e. inlined). None when the file does not parse there."""
    index = _index(source)
    if index is None or line not in index.statements:
        return None
    statement = index.statements[line]
    inside = [f for f in index.functions if f.lineno <= line <= (f.end_lineno or f.lineno)]
    if not inside:
        return None
    kernel = min(inside, key=lambda f: (f.end_lineno or f.lineno) - f.lineno)
    helpers = {f.name: f for f in index.functions if f is not kernel}
    present = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", re.sub(r"_\d+\b", "", tir_line)))
    opened: list[int] = []

    def walk(node: ast.AST, here: int, scope: dict[str, tuple[ast.expr, int, dict]], depth: int) -> None:
        if depth > _DEPTH:
            return
        if isinstance(node, ast.Call) and _called(node.func) == "if_then_else" and len(node.args) == 3:
            walk(node.args[0], here, scope, depth + 1)
            opened.append(here)
            walk(node.args[1], here, scope, depth + 1)
            walk(node.args[2], here, scope, depth + 1)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in scope:
            value, at, outer = scope[node.id]
            walk(value, at, outer, depth + 1)
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
            helper = helpers[node.func.id]
            inner = {param.arg: (arg, here, scope) for param, arg in zip(helper.args.args, node.args, strict=False)}
            inner.update({k.arg: (k.value, here, scope) for k in node.keywords if k.arg})
            inner.update({name: (value, here, inner) for name, (value, _) in index.assigned[helper.lineno].items() if name not in present})
            returned = [s.value for s in helper.body if isinstance(s, ast.Return) and s.value is not None]
            for value in returned[-1:]:
                walk(value, here, inner, depth + 1)
            return
        for child in ast.iter_child_nodes(node):
            walk(child, here, scope, depth + 1)

    scope: dict[str, tuple[ast.expr, int, dict]] = {}
    for name, (value, at) in index.assigned[kernel.lineno].items():
        if name not in present:
            scope[name] = (value, at, scope)
    for part in _expressions(statement):
        walk(part, line, scope, 0)
    return tuple(opened)


@dataclass(frozen=True)
class _Index:
    """What the walk reads of the user's file, found once per file."""

    statements: dict[int, ast.stmt]  # line -> the outermost statement that starts there
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef]
    assigned: dict[int, dict[str, tuple[ast.expr, int]]]  # function's line -> its single assignments


@functools.lru_cache(maxsize=64)
def _index(source: tuple[str, ...]) -> _Index | None:
    tree = parsed(source)
    if tree is None:
        return None
    statements: dict[int, ast.stmt] = {}
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in ast.walk(tree):  # breadth first: an outer statement before one nested on its line
        if isinstance(node, ast.stmt):
            statements.setdefault(node.lineno, node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.append(node)
    return _Index(statements, functions, {f.lineno: _single_assignments(f) for f in functions})


def _single_assignments(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, tuple[ast.expr, int]]:
    """name -> (value, line) of every name the function assigns exactly once (those the TIR
    statement no longer names are the ones TileLang inlined)."""
    found: dict[str, list[tuple[ast.expr, int]]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, value = node.target.id, node.value
        else:
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                found.setdefault(node.target.id, []).append((node.value, node.lineno))  # no single value
            continue
        found.setdefault(name, []).append((value, node.lineno))
    return {name: values[0] for name, values in found.items() if len(values) == 1}


def _expressions(statement: ast.stmt) -> list[ast.AST]:
    """The expressions of a statement the printer prints with it (not a loop's or branch's body)."""
    if isinstance(statement, ast.For | ast.AsyncFor):
        return [statement.iter]
    if isinstance(statement, ast.If | ast.While):
        return [statement.test]
    if isinstance(statement, ast.With | ast.AsyncWith):
        return [item.context_expr for item in statement.items]
    return [statement]


def _called(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
