"""docs/architecture.md's module map names every module of the package, in its folder: a module
added without a line there fails here (the map is how a newcomer finds a feature)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if not (ROOT / "lower_trace").is_dir():  # the tiers live one folder deeper
    ROOT = ROOT.parent


def mapped_modules() -> dict[str, str]:
    """module file (relative to lower_trace/) -> the map's line that names it."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("## Where each feature lives", 1)[1].split("```", 2)[1]
    found: dict[str, str] = {}
    folders: list[tuple[int, str]] = []  # (indent, folder) from the outermost in
    for line in block.splitlines():
        header = re.match(r"^( +)(\w+)/(\s|$)", line)
        if header:
            indent = len(header.group(1))
            folders = [(i, f) for i, f in folders if i < indent] + [(indent, header.group(2))]
        elif line.strip() and len(line) - len(line.lstrip()) <= 2:
            folders = []  # a top-level module's line
        prefix = "/".join(f for _, f in folders)
        for name in re.findall(r"(?<![\w/])(\w+\.py)\b", line):
            found.setdefault(f"{prefix}/{name}" if prefix else name, line.strip())
    return found


def _only_a_docstring(path: Path) -> bool:
    """A folder's __init__.py that holds no code is the folder itself, not a module to map."""
    import ast

    body = ast.parse(path.read_text(encoding="utf-8")).body
    return all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body)


def test_the_module_map_names_every_module_in_its_folder():
    package = ROOT / "lower_trace"
    modules = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "__pycache__" not in path.parts and not (path.name == "__init__.py" and path.parent != package and _only_a_docstring(path))
    }
    assert len(modules) > 40  # the package itself, not an empty folder
    mapped = mapped_modules()
    missing = sorted(modules - set(mapped))
    assert not missing, f"docs/architecture.md's module map lacks: {', '.join(missing)}"
    gone = sorted(set(mapped) - modules)
    assert not gone, f"docs/architecture.md's module map names modules that do not exist: {', '.join(gone)}"
