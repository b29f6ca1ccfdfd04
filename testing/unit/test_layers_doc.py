"""docs/architecture.md's layer line ("**Layers**, top to bottom ...") names the layers of
pyproject.toml's import-linter contract, in its order: the doc is what a reader trusts, the
contract is what lint-imports checks, and a layer added to one only must fail here."""

from __future__ import annotations

import re
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: pytest itself depends on tomli there
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
if not (ROOT / "lower_trace").is_dir():  # the tiers live one folder deeper
    ROOT = ROOT.parent


def _layer(text: str) -> frozenset[str]:
    """One layer: its siblings (`a | b`); their order means nothing."""
    return frozenset(name.strip() for name in text.split("|"))


def contract_layers() -> list[frozenset[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    layered = [c for c in data["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    assert len(layered) == 1, "one layers contract expected in pyproject.toml"
    return [_layer(entry) for entry in layered[0]["layers"]]


def documented_layers() -> list[frozenset[str]]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("- **Layers**, top to bottom")
    bullet = text[start:].split("\n- ", 1)[0]  # up to the next bullet
    flat = " ".join(bullet.split())
    # The chain: `a` → `b | c` → ...; the first and the longest chain of the bullet is the line.
    chains = re.findall(r"`[^`]+`(?:\s*→\s*`[^`]+`)+", flat)
    assert chains, f"no `a` → `b` chain in the layer line: {flat[:200]}"
    chain = max(chains, key=len)
    return [_layer(part.strip().strip("`")) for part in chain.split("→")]


def test_the_layer_line_matches_the_contract():
    contract = contract_layers()
    assert len(contract) > 5  # the real contract, not an empty list
    documented = documented_layers()
    assert documented == contract, (
        "docs/architecture.md's layer line and pyproject.toml's layers contract differ:\n"
        f"  doc:      {' → '.join(' | '.join(sorted(layer)) for layer in documented)}\n"
        f"  contract: {' → '.join(' | '.join(sorted(layer)) for layer in contract)}"
    )


def test_every_top_level_module_has_a_layer():
    """The contract is exhaustive, so the doc's line must name each top-level module and folder too."""
    package = ROOT / "lower_trace"
    top = {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
    top |= {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    named = set().union(*documented_layers())
    assert top - named == set(), f"top-level modules the layer line leaves out: {sorted(top - named)}"
