"""The page's ES modules (assets/*.js) as one classic script, so a page opens from a single offline file.

A browser loads no module from a file: file:// module loading is blocked, and a notebook's srcdoc
iframe has no files at all. So the page's scripts are ES modules for their readers and checkers
(eslint, tsc), and :func:`bundle` inlines them:

- each module says what it uses, at the start of a line: ``import { a, b as c } from "./x.js";``,
  and what it gives: ``export const`` / ``function`` / ``class``, ``export { a, b as c };`` or
  ``export { a } from "./x.js";``. Any other import or export form is an error naming its line;
- the order is the import graph's: each module after the ones it imports, depth first from the
  entries in import order -- the order a browser evaluates modules in. A cycle is an error that
  names it;
- each module's body runs in a function of its own, so its top-level names stay its own. An import
  becomes ``const { a, b: c } = ltModules["x.js"];`` where it stood, the exports the object the
  function returns: read once, when the module has run (an export is a const, function or class,
  never reassigned, so this is the value a live binding would have);
- only the entries' exports become globals (``globalThis``): what a page chooses to expose.

Deterministic: the same assets give the same text. No JS parser: statements are found by line, so
a template literal must not start a line with ``import`` or ``export``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

REGISTRY = "ltModules"  # the bundle's one name for every module's exports; no module may use it

_NAME = r"[A-Za-z_$][\w$]*"
_FROM = r'\s*from\s*"\./(?P<file>[\w.-]+\.js)"'
IMPORT = re.compile(rf"^import\s*\{{(?P<names>[^}}]*)\}}{_FROM}\s*;?[ \t]*$", re.M)
EXPORT_LIST = re.compile(rf"^export\s*\{{(?P<names>[^}}]*)\}}(?:{_FROM})?\s*;?[ \t]*$", re.M)
EXPORT_DECLARATION = re.compile(rf"^export\s+(?=(?:async\s+)?(?:const|function|class)\s+(?P<name>{_NAME}))", re.M)
ANY_STATEMENT = re.compile(r"^(?:import|export)\b", re.M)
SPECIFIER = re.compile(rf"^({_NAME})(?:\s+as\s+({_NAME}))?$")
UNSAFE_IN_SCRIPT = re.compile(r"</script|<!--", re.I)  # the bundle is inlined in a script element


class BundleError(ValueError):
    """The modules cannot be bundled; the message is one line that says where and why."""


@dataclass
class Module:
    name: str  # its file, as imports name it: "diff.js"
    body: str = ""  # its source, imports and exports rewritten for the bundle
    imports: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # file -> [(exported, local)]
    exports: dict[str, str] = field(default_factory=dict)  # exported name -> the expression of its value


def _line(source: str, at: int) -> int:
    return source.count("\n", 0, at) + 1


def _specifiers(module: str, source: str, at: int, text: str) -> list[tuple[str, str]]:
    """`a, b as c` -> [("a", "a"), ("b", "c")]."""
    pairs = []
    for part in (p.strip() for p in text.split(",")):
        found = SPECIFIER.match(part) if part else None
        if part and not found:
            raise BundleError(f"{module}:{_line(source, at)}: cannot read {part!r} (write name or name as other)")
        if found:
            pairs.append((found.group(1), found.group(2) or found.group(1)))
    return pairs


def parse(name: str, source: str) -> Module:
    """A module's imports and exports, and its body with them rewritten (see the module's docstring)."""
    if re.search(rf"\b{REGISTRY}\b", source):
        raise BundleError(f"{name}: uses the name {REGISTRY}, which the bundle keeps for itself")
    unsafe = UNSAFE_IN_SCRIPT.search(source)
    if unsafe:
        raise BundleError(f"{name}:{_line(source, unsafe.start())}: {unsafe.group()!r} would end the page's script element")
    module = Module(name)
    edits: dict[int, tuple[int, str]] = {}  # where a statement starts -> (where it ends, what replaces it)
    for match in IMPORT.finditer(source):
        pairs = _specifiers(name, source, match.start(), match.group("names"))
        module.imports.setdefault(match.group("file"), []).extend(pairs)
        fields = ", ".join(local if exported == local else f"{exported}: {local}" for exported, local in pairs)
        edits[match.start()] = (match.end(), f'const {{ {fields} }} = {REGISTRY}["{match.group("file")}"];')
    for match in EXPORT_LIST.finditer(source):
        origin = match.group("file")
        for local, exported in _specifiers(name, source, match.start(), match.group("names")):
            if origin:  # a re-export: checked like an import, bound to nothing here
                module.imports.setdefault(origin, []).append((local, local))
            module.exports[exported] = f'{REGISTRY}["{origin}"].{local}' if origin else local
        edits[match.start()] = (match.end(), "")
    for match in EXPORT_DECLARATION.finditer(source):
        module.exports[match.group("name")] = match.group("name")
        edits[match.start()] = (match.end(), "")  # "export " goes; the declaration stays
    for match in ANY_STATEMENT.finditer(source):
        if match.start() not in edits:
            statement = source[match.start() :].split("\n", 1)[0].strip()
            raise BundleError(
                f"{name}:{_line(source, match.start())}: cannot bundle {statement!r} "
                '(write import { name } from "./file.js", export const/function/class, or export { name })'
            )
    body: list[str] = []
    done = 0
    for start in sorted(edits):
        end, text = edits[start]
        body += [source[done:start], text]
        done = end
    module.body = "".join([*body, source[done:]])
    return module


def module_order(entries: Iterable[str], read: Callable[[str], str]) -> list[Module]:
    """Every module the entries import, each after what it imports (depth first, in import order)."""
    done: dict[str, Module] = {}
    path: list[str] = []  # the imports being followed, outermost first

    def visit(name: str, importer: str | None) -> None:
        if name in done:
            return
        if name in path:
            cycle = [*path[path.index(name) :], name]
            raise BundleError(f"import cycle: {' -> '.join(cycle)}")
        try:
            source = read(name)
        except FileNotFoundError:
            where = f'{importer} imports "./{name}"' if importer else f"the entry {name}"
            raise BundleError(f"{where}, which does not exist") from None
        module = parse(name, source)
        path.append(name)
        for dependency in module.imports:
            visit(dependency, name)
        path.pop()
        for dependency, pairs in module.imports.items():
            for exported, _ in pairs:
                if exported not in done[dependency].exports:
                    raise BundleError(f'{name} imports {exported} from "./{dependency}", which does not export it')
        done[name] = module

    for entry in entries:
        visit(entry, None)
    return list(done.values())


def exposed(modules: list[Module], entries: list[str]) -> list[str]:
    """The names the bundle sets on globalThis: the entries' exports (two entries may not give one name)."""
    by_name = {module.name: module for module in modules}
    seen: dict[str, str] = {}
    for entry in dict.fromkeys(entries):
        for exported in by_name[entry].exports:
            if exported in seen:
                raise BundleError(f"{exported} is exported by two entries, {seen[exported]} and {entry}")
            seen[exported] = entry
    return list(seen)


def bundle(entries: Iterable[str], read: Callable[[str], str]) -> str:
    """One classic script that runs the entries and all they import; read(name) is a module's source
    (FileNotFoundError: there is none). The entries' exports are the only globals it makes."""
    entries = list(entries)
    modules = module_order(entries, read)
    parts = [f'(() => {{\n"use strict";\nconst {REGISTRY} = {{}};']
    for module in modules:
        values = ", ".join(name if value == name else f"{name}: {value}" for name, value in module.exports.items())
        parts.append(f'// --- {module.name}\n{REGISTRY}["{module.name}"] = (() => {{\n{module.body.strip()}\nreturn {{ {values} }};\n}})();')
    if exposed(modules, entries):
        parts.extend(f'Object.assign(globalThis, {REGISTRY}["{entry}"]);' for entry in dict.fromkeys(entries))
    parts.append("})();")
    return "\n".join(parts)
