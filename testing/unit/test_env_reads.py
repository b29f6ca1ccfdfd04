"""config.py is the one place lower-trace reads an environment variable (docs/architecture.md):
any other module's os.environ.get / os.getenv / os.environ[NAME] read fails here. Handing the
environment on to a child (os.environ.items()), setting a variable for one and replacing the
whole environment (a forked child's: clear, update) are not reads."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if not (ROOT / "lower_trace").is_dir():  # the tiers live one folder deeper
    ROOT = ROOT.parent
PACKAGE = ROOT / "lower_trace"


def _is_os(node: ast.AST, attr: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name) and node.value.id == "os"


def _imports_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "os" and any(a.name in ("environ", "getenv") for a in node.names)


def env_reads(source: str) -> list[int]:
    """The lines of `source` that read an environment variable (not counting hand-ons and writes)."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    lines = []
    for node in ast.walk(tree):
        if _imports_environ(node) or _is_os(node, "getenv"):
            lines.append(getattr(node, "lineno", 0))
        elif _is_os(node, "environ"):
            parent = parents.get(node)
            handed_on = isinstance(parent, ast.Attribute) and parent.attr == "items"
            written = isinstance(parent, ast.Subscript) and isinstance(parent.ctx, (ast.Store, ast.Del))
            written = written or (isinstance(parent, ast.Attribute) and parent.attr in ("clear", "update"))  # replaced whole
            if not (handed_on or written):
                lines.append(getattr(node, "lineno", 0))
    return lines


def test_the_finder_sees_reads_and_passes_hand_ons():
    """The check itself, on texts whose answer is plain by reading them."""
    assert env_reads("import os\nx = os.environ.get('A')\n") == [2]
    assert env_reads("import os\nx = os.getenv('A')\n") == [2]
    assert env_reads("import os\nx = os.environ['A']\n") == [2]
    assert env_reads("import os\nx = 'A' in os.environ\n") == [2]
    assert env_reads("from os import environ\n") == [1]
    assert env_reads("import os\nenv = {k: v for k, v in os.environ.items() if k != 'A'}\nos.environ['B'] = '1'\n") == []
    assert env_reads("import os\nos.environ.clear()\nos.environ.update(env)\n") == []
    assert env_reads("import os\nx = os.environ.copy()\n") == [2]


def test_only_config_reads_the_environment():
    modules = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    assert len(modules) > 40  # the package itself
    found = {
        str(path.relative_to(ROOT)): lines
        for path in modules
        if path.name != "config.py" or path.parent != PACKAGE
        for lines in [env_reads(path.read_text(encoding="utf-8"))]
        if lines
    }
    assert found == {}, f"environment read outside lower_trace/config.py (move it there, see docs/architecture.md): {found}"
