"""Fixtures of the search tests: a fresh index per test, and the entity factories.

The suite's application is shared and every test's data is rolled back, but the index lives
in files: each search test starts by rebuilding it from the (rolled-back) database, so it
holds exactly what the test's database holds, and indexes after every commit (the suite's
application otherwise indexes at the start of the next request).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask

from labapp.search import backend
from labapp.search.rebuild import rebuild_index
from tests.conftest import ApiClient
from tests.databases import BACKEND
from tests.entities.conftest import (  # noqa: F401  (fixtures)
    admin,
    body_of,
    department,
    grant,
    member,
    project,
)

# The search backends a test of the search's behaviour runs on: Whoosh always, PostgreSQL's
# full text in the PostgreSQL pass (issue 34 §1).
SEARCH_BACKENDS = ("whoosh", "postgresql") if BACKEND == "postgresql" else ("whoosh",)


@pytest.fixture(params=SEARCH_BACKENDS)
def search_backend(request: pytest.FixtureRequest, app: Flask) -> Iterator[str]:
    """The suite's application searching with the backend of the parameter (a module's
    ``pytestmark = pytest.mark.usefixtures("search_backend")`` runs its tests on each)."""
    if request.param == "whoosh":
        yield request.param
        return
    from labapp.search.postgresql import PostgresBackend

    previous = app.extensions[backend.BACKEND]
    backend.bind(app, PostgresBackend())
    try:
        yield request.param
    finally:
        backend.bind(app, previous)


@pytest.fixture(autouse=True)
def _fresh_index(request: pytest.FixtureRequest) -> None:
    """Tests on the suite's application start from an index of exactly their database, of
    their search backend when they have one, and index after every commit, as an install
    without a worker does (tests that bring their own application and server skip this)."""
    if "app" not in request.fixturenames:
        return
    request.getfixturevalue("drain_after_commit")
    app: Flask = request.getfixturevalue("app")
    if "search_backend" in request.fixturenames:
        request.getfixturevalue("search_backend")
    with app.app_context():
        rebuild_index()


@pytest.fixture
def served_app(fresh_app: Callable[..., Flask]) -> Flask:
    """An application of its own (a fresh, initialised database and instance), for tests
    that start gunicorn or the indexer worker on it."""
    return fresh_app(initialised=True)


def search(api: ApiClient, path: str, status: int = 200, **options: Any) -> Any:
    """``GET /api/search/{path}`` (or another full path) with OData options without ``$``."""
    url = path if path.startswith("/api/") else f"/api/search/{path}"
    query = {f"${name}": value for name, value in options.items()}
    return body_of(api.get(url, query_string=query), status)


def found(api: ApiClient, path: str, **options: Any) -> list[str]:
    """The ids a search answers, in order."""
    return [item["id"] for item in search(api, path, **options)["data"]]
