"""Which tests touch a database: they carry the ``db`` mark, and only they run in the
PostgreSQL pass (``make test``'s second pass selects ``-m db``).

A test is marked when a fixture it uses (directly or through other fixtures) is one of
:data:`DATABASE_FIXTURES`, or when its module's source names a way to reach a database
(:data:`DATABASE_WORDS`). ``tests/contracts/test_database_mark.py`` checks the rule from the
other side: no unmarked test uses a fixture whose source names a way to reach a database.
A false "db" costs a test run on PostgreSQL; a missing one loses a test there, so when in
doubt a word goes in.
"""
from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

MARK = "db"

# The fixtures every database of the suite comes from; fixtures built on them
# (client, make_user, api_as, live_server ...) are in a test's closure with them. ``extended``
# (tests/datamodel) and ``lab`` (tests/sync) make databases of their own.
DATABASE_FIXTURES = frozenset({"app", "fresh_app", "initialised_template", "extended", "lab"})

# Words in a source that reach a database without those fixtures.
DATABASE_WORDS = re.compile(
    r"\b(new_database|build_app|create_app|fresh_app|initialised_template|create_engine"
    r"|psycopg|sqlite3|transaction|db\.session|db\.engine|DATABASE_URL"
    r"|LABAPP_TEST_POSTGRES_URL|serving)\b")


@cache
def _names_a_database(source: str) -> bool:
    return DATABASE_WORDS.search(source) is not None


@cache
def _file_names_a_database(path: Path) -> bool:
    return _names_a_database(path.read_text(encoding="utf-8"))


def function_names_a_database(function: Callable[..., Any]) -> bool:
    """Whether the source of ``function`` names a way to reach a database."""
    try:
        return _names_a_database(inspect.getsource(function))
    except (OSError, TypeError):
        return False


def touches_database(item: pytest.Item) -> bool:
    """Whether ``item`` uses a database fixture or its module names a database."""
    if DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    return _file_names_a_database(Path(item.path))


def mark_database_tests(items: list[pytest.Item]) -> None:
    """Add the ``db`` mark to every item that touches a database."""
    for item in items:
        if item.get_closest_marker(MARK) is None and touches_database(item):
            item.add_marker(MARK)
