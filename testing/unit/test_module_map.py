"""docs/architecture.md is how a newcomer finds a feature: a one-screen overview whose command table
names each front end's modules, then the module map, which names every module of the package in its
folder (a module added without a line there fails here). The names it and docs/decisions.md cite, and
the links into either, must exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
_THEIRS = {
    "tvm", "tl", "tilelang", "T", "tirx", "os", "sys", "tempfile", "ffi", "Pass", "PassContext", "Module", "Target", "el", "JITKernel", "JITImpl", "torch",
}


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


@pytest.mark.parametrize("doc", ["architecture.md", "decisions.md"])
def test_the_names_the_docs_cite_exist(doc: str):
    """Every `module.name` / `Class.member` of ours that architecture.md or decisions.md cites names
    something that exists (a renamed module or a moved function leaves a stale claim: this catches it)."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
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
    assert not stale, f"docs/{doc} cites names that do not exist (renamed or moved?): {', '.join(stale)}"


_OVERVIEW_LINES = 60  # one screen


def _overview() -> str:
    """architecture.md up to its full module map: what a newcomer reads first."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "\n## Where each feature lives\n" in text, "architecture.md has lost its module map's heading"
    return text.split("\n## Where each feature lives\n", 1)[0]


def test_the_overview_fits_one_screen():
    lines = _overview().rstrip("\n").splitlines()
    assert len(lines) > 20  # the overview itself, not a heading alone
    assert len(lines) <= _OVERVIEW_LINES, (
        f"architecture.md's overview (before '## Where each feature lives') is {len(lines)} lines; "
        f"one screen is {_OVERVIEW_LINES}: move detail into the map, the layer rules or decisions.md"
    )


def _command_table() -> list[list[str]]:
    """The overview's table "front end | front-end module | core modules", its rows as cells."""
    rows = [line for line in _overview().splitlines() if line.startswith("|")]
    assert rows and "front-end module" in rows[0], "architecture.md's overview has no command table"
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def _paths_in(cell: str) -> list[str]:
    """Module files (a/b.py) and folders (a/b/) a table cell names, relative to lower_trace/."""
    return re.findall(r"(?<![\w./])((?:\w+/)*\w+\.py|(?:\w+/)+)(?![\w/])", cell.replace("`", ""))


def test_the_command_table_names_modules_that_exist():
    package = ROOT / "lower_trace"
    rows = _command_table()
    assert len(rows) > 10
    missing = []
    for front_end, modules, core in rows:
        named = _paths_in(modules) + _paths_in(core)
        assert _paths_in(modules), f"the command table's row {front_end!r} names no front-end module"
        missing += [f"{front_end}: {path}" for path in named if not (package / path).exists()]
    assert not missing, f"architecture.md's command table names modules that do not exist: {', '.join(missing)}"


def test_the_command_table_has_every_command_and_its_module():
    """Each subcommand of lower-trace (read off the cli modules that add a parser) is a row, naming
    the module that adds it: a command's files are findable from its name."""
    rows = _command_table()
    commands = [
        (command, f"cli/{path.name}")
        for path in sorted((ROOT / "lower_trace" / "cli").glob("*.py"))
        for command in re.findall(r"\.add_parser\(\s*\"([\w-]+)\"", path.read_text(encoding="utf-8"))
    ]
    assert len(commands) > 10  # the scan found the commands
    lacking = [
        f"{command} ({module})"
        for command, module in commands
        if not any(f"`{command}`" in front_end and module in _paths_in(modules) for front_end, modules, _ in rows)
    ]
    assert not lacking, f"architecture.md's command table lacks a row for: {', '.join(lacking)}"


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (heading := re.match(r"#{1,6} (.+)", line)):
            slug = _slug(heading.group(1))
            anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return anchors


def test_links_into_architecture_and_decisions_land_on_a_heading():
    """A link to architecture.md#x or decisions.md#x (or #x inside either) names a heading that is
    there: text moved between the two must take its links along."""
    docs = ROOT / "docs"
    targets = {name: _anchors(docs / name) for name in ("architecture.md", "decisions.md")}
    assert "the-hot-path" in targets["decisions.md"] and "where-each-feature-lives" in targets["architecture.md"]
    broken = []
    for source in [*sorted(docs.glob("*.md")), ROOT / "README.md"]:
        text = source.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\((?:(?:docs/)?((?:architecture|decisions)\.md))?#([^)\s]+)\)", text):
            name = target or (source.name if source.name in targets else "")
            if name and anchor not in targets[name]:
                broken.append(f"{source.name}: {name}#{anchor}")
    assert not broken, f"links to headings that are not there: {', '.join(broken)}"


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
