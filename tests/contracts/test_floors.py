"""Every module of labapp/ stands on exactly one floor of the import-linter contracts.

``lint-imports`` checks the imports between the modules a contract names; a module no layer
names would be checked by nothing. So every module must be named by one layer of the floors
contract (itself or through a package), and the package whose modules are spread over
floors must be empty, importing nothing. The model contract must forbid every other module
of the lowest floor.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import grimp
import pytest

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _contract(contract_id: str) -> dict:
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    return next(c for c in config["contracts"] if c.get("id") == contract_id)


def _layers() -> list[list[str]]:
    """The floors contract's layers, each a list of full module names."""
    contract = _contract("floors")
    container = contract["containers"][0]
    return [[f"{container}.{tail.strip()}" for tail in layer.replace("|", ":").split(":")]
            for layer in contract["layers"]]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("labapp")


def _named_by(module: str, layers: list[list[str]]) -> list[str]:
    return [entry for layer in layers for entry in layer
            if module == entry or module.startswith(entry + ".")]


def test_every_module_stands_on_exactly_one_floor(graph: grimp.ImportGraph) -> None:
    layers = _layers()
    named = {entry for layer in layers for entry in layer}
    spread = {entry.rsplit(".", 1)[0] for entry in named if entry.count(".") > 1}
    unplaced, twice = [], []
    for module in sorted(graph.modules):
        if module == "labapp" or module in spread:
            continue
        entries = _named_by(module, layers)
        if not entries:
            unplaced.append(module)
        elif len(entries) > 1:
            twice.append(f"{module}: {entries}")
    assert not unplaced, ("Modules on no floor; name each in a layer of the floors contract "
                          f"in pyproject.toml: {unplaced}")
    assert not twice, f"Modules on more than one floor: {twice}"


def test_packages_spread_over_floors_import_nothing(graph: grimp.ImportGraph) -> None:
    named = {entry for layer in _layers() for entry in layer}
    spread = sorted({entry.rsplit(".", 1)[0] for entry in named if entry.count(".") > 1})
    assert spread, "the floors contract names no module inside a package"
    importing = {package: sorted(graph.find_modules_directly_imported_by(package))
                 for package in spread}
    assert not any(importing.values()), importing


def test_the_model_contract_forbids_the_rest_of_the_lowest_floor() -> None:
    lowest = set(_layers()[-1])
    forbidden = set(_contract("model")["forbidden_modules"])
    assert forbidden == lowest - {"labapp.model", "labapp.db"}
