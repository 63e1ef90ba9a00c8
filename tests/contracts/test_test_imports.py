"""No module of the suite imports a test module (issue 33 §4): helpers shared by test modules
live in ``tests/helpers/``, shared fixtures in the directory's ``conftest.py``.

A test module imported by another lends it its fixtures and helpers under ``noqa``, and
moving or deleting one of its tests breaks a module that is not about it. The check reads
every module under ``tests/`` for ``from tests.….test_x import …``, ``import tests.….test_x``,
``from tests.… import test_x`` and their relative forms (``from .test_x import …``).
"""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def is_test_module(dotted: str) -> bool:
    """Whether the last part of the module name ``dotted`` is one pytest collects as tests
    (``test_*.py`` or ``*_test.py``)."""
    name = dotted.rsplit(".", 1)[-1]
    return name.startswith("test_") or name.endswith("_test")


def _absolute(node: ast.ImportFrom, package: list[str]) -> str:
    """The module a ``from … import`` names, a relative one resolved in ``package``."""
    if not node.level:
        return node.module or ""
    base = package[:len(package) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported_test_modules(source: str, package: list[str]) -> list[str]:
    """The test modules of the suite a module in ``package`` with ``source`` imports, each as
    ``line: module``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: {alias.name}" for alias in node.names
                      if alias.name.startswith("tests.") and is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, package)
            if module != "tests" and not module.startswith("tests."):
                continue
            if is_test_module(module):
                found.append(f"{node.lineno}: {module}")
            else:
                found += [f"{node.lineno}: {module}.{alias.name}" for alias in node.names
                          if is_test_module(alias.name)]
    return found


def test_no_module_of_the_suite_imports_a_test_module() -> None:
    offenders = {}
    for path in sorted(TESTS.rglob("*.py")):
        package = ["tests", *path.parent.relative_to(TESTS).parts]
        if imported := imported_test_modules(path.read_text(encoding="utf-8"), package):
            offenders[str(path.relative_to(TESTS.parent))] = imported
    assert offenders == {}, (
        "these modules import test modules; move the shared helper into a module of "
        "tests/helpers/ named for what it holds, or the shared fixture into the directory's "
        f"conftest.py: {offenders}")


def test_the_check_sees_each_form_of_import() -> None:
    source = ("from tests.web.test_pages import html_of\n"
              "import tests.storage.test_pages\n"
              "from tests.search import test_queue\n"
              "from .test_security_headers import world\n"
              "from . import test_pages as pages\n"
              "from ..storage.test_tree import fixture\n"
              "from tests.helpers.pages import html_of\n"
              "from tests.web.conftest import save\n"
              "from .conftest import save\n"
              "import pytest\n"
              "from tests.helpers import pages\n")
    assert imported_test_modules(source, ["tests", "web"]) == [
        "1: tests.web.test_pages", "2: tests.storage.test_pages", "3: tests.search.test_queue",
        "4: tests.web.test_security_headers", "5: tests.web.test_pages",
        "6: tests.storage.test_tree"]
