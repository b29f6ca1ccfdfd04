"""An import-linter contract type: no import cycle among the modules of a package.

``lint-imports`` (run by scripts/test.sh; pyproject.toml's ``[tool.importlinter]`` names this
type) checks it with the other contracts. The built-in ``acyclic_siblings`` compares the
children of each package only, so it misses a cycle through a package's own ``__init__``
(``integrations/adapters/tvm.py -> lower_trace -> api -> integrations`` once was one); this one looks
at every module, imports inside functions included (a lazy import hides a cycle, it does not
remove it).
"""

from __future__ import annotations

import itertools
from typing import Any

from importlinter import Contract, ContractCheck, fields, output


class NoCycles(Contract):
    type_name = "no_cycles"

    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph: Any, verbose: bool) -> ContractCheck:
        roots = tuple(str(p) for p in self.packages)  # type: ignore[attr-defined]

        def inside(module: str) -> bool:
            return any(module == root or module.startswith(root + ".") for root in roots)

        cycles: dict[frozenset[str], tuple[str, ...]] = {}
        for importer in sorted(m for m in graph.modules if inside(m)):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if imported == importer or not inside(imported):
                    continue
                back = graph.find_shortest_chain(importer=imported, imported=importer)
                if back:  # importer -> imported -> ... -> importer
                    cycle = (importer, *back)
                    cycles.setdefault(frozenset(cycle), cycle)
        found = [[_step(graph, a, b) for a, b in itertools.pairwise(cycle)] for cycle in sorted(cycles.values())]
        return ContractCheck(kept=not found, metadata={"cycles": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error("Import cycle:")
            for step in cycle:
                output.indent_cursor()
                output.print(step)
            output.new_line()


def _step(graph: Any, importer: str, imported: str) -> str:
    lines = sorted({detail["line_number"] for detail in graph.get_import_details(importer=importer, imported=imported)})
    where = f" ({', '.join(f'l.{n}' for n in lines)})" if lines else ""
    return f"{importer} -> {imported}{where}"
