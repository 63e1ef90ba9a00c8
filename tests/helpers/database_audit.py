"""A pytest plugin for ``tests/contracts/test_database_mark.py``: after collection, write to
the file named by ``LABAPP_DATABASE_AUDIT`` the tests without the ``db`` mark whose own
source, or the source of a fixture they use, names a way to reach a database."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.database_marker import MARK, function_names_a_database

# Fixtures every test has that reach a database only for tests that already use ``app``.
ONLY_WITH_APP = frozenset({"_rolled_back"})


def unmarked_database_users(item: pytest.Item) -> list[str]:
    """What in ``item`` names a database although the item is not marked: its function or
    the names of the fixtures it uses."""
    if item.get_closest_marker(MARK) is not None:
        return []
    found = []
    function = getattr(item, "function", None)
    if function is not None and function_names_a_database(function):
        found.append(item.name)
    fixture_info = getattr(item, "_fixtureinfo", None)
    definitions = fixture_info.name2fixturedefs if fixture_info is not None else {}
    for name, fixture_defs in sorted(definitions.items()):
        if name in ONLY_WITH_APP:
            continue
        if any(function_names_a_database(definition.func) for definition in fixture_defs):
            found.append(f"fixture {name}")
    return found


def pytest_collection_finish(session: pytest.Session) -> None:
    findings = {item.nodeid: found for item in session.items
                if (found := unmarked_database_users(item))}
    Path(os.environ["LABAPP_DATABASE_AUDIT"]).write_text(json.dumps(findings, indent=1))
