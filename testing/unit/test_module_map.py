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


# Names of other projects (and of the report page's JS) the docs cite in `a.b` form: not ours to check.
_THEIRS = {"tvm", "tl", "tilelang", "T", "tirx", "os", "sys", "tempfile", "ffi", "Pass", "PassContext", "Module", "Target", "el"}


def _our_names() -> tuple[dict[str, list[str]], dict[str, list[tuple[str, str]]]]:
    """Our modules by their last name (``statements`` -> lower_trace/analysis/statements.py) and
    our classes by name (``Worker`` -> (module file, its text))."""
    modules: dict[str, list[str]] = {}
    classes: dict[str, list[tuple[str, str]]] = {}
    package = ROOT / "lower_trace"
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        name = path.parent.name if path.name == "__init__.py" else path.stem
        modules.setdefault(name, []).append(str(path))
        for match in re.finditer(r"^class (\w+)", text, flags=re.M):
            classes.setdefault(match.group(1), []).append((str(path), text))
    modules.setdefault("lower_trace", []).append(str(package / "__init__.py"))
    return modules, classes


def _defines(path: str, name: str) -> bool:
    """The module (or the package folder) at `path` has `name`: a function, class, assignment, import or submodule."""
    file = Path(path)
    if file.name == "__init__.py" and ((file.parent / f"{name}.py").exists() or (file.parent / name).is_dir()):
        return True
    text, word = file.read_text(encoding="utf-8"), re.escape(name)
    return bool(re.search(rf"^\s*(?:def|class|async def) {word}\b|^\s*{word}\s*[:=]|\bimport .*\b{word}\b|\"{word}\"", text, flags=re.M))


def test_the_names_architecture_md_cites_exist():
    """Every `module.name` / `Class.member` of ours that architecture.md cites names something
    that exists (a renamed module or a moved function leaves a stale claim: this catches it)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules, classes = _our_names()
    stale = []
    for cited in sorted(set(re.findall(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?`", text))):
        head, *rest = cited.split(".")
        if head in _THEIRS or head.startswith("LT") or rest[-1] in {"py", "js", "json", "jsonl", "toml", "log", "pth", "md"}:
            continue
        if head == "lower_trace":
            head, rest = (rest[0], rest[1:]) if len(rest) > 1 else ("lower_trace", rest)
        if head in classes:
            if not any(re.search(rf"\b(?:def |self\.){re.escape(rest[0])}\b|^\s+{re.escape(rest[0])}\s*:", body, flags=re.M) for _, body in classes[head]):
                stale.append(cited)
        elif head in modules:
            if not any(_defines(path, rest[0]) for path in modules[head]):
                stale.append(cited)
        else:
            stale.append(cited)  # neither a module nor a class of ours, nor another project's name
    assert not stale, f"docs/architecture.md cites names that do not exist (renamed or moved?): {', '.join(stale)}"


def test_the_names_docstrings_cross_reference_exist():
    """Sphinx-style references in the package (``:class:`~lower_trace.capture.ir_adapter.IRAdapter```)
    name a module and a name in it that exist."""
    package = ROOT / "lower_trace"
    stale = []
    for path in sorted(package.rglob("*.py")):
        for cited in re.findall(r":(?:class|func|mod|meth|data):`~?(lower_trace(?:\.\w+)+)`", path.read_text(encoding="utf-8")):
            parts = cited.split(".")[1:]
            for split in range(len(parts), 0, -1):  # the longest prefix that is a module or a package of ours
                base = package.joinpath(*parts[:split])
                module = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py" if base.is_dir() else None
                if module is not None:
                    if split < len(parts) and not _defines(str(module), parts[split]):
                        stale.append(f"{path.relative_to(ROOT)}: {cited}")
                    break
            else:
                stale.append(f"{path.relative_to(ROOT)}: {cited}")
    assert not stale, f"references to names that do not exist: {', '.join(stale)}"
