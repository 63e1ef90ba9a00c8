"""Fixtures of the OData tests: the lab of ``tests/query/lab.py`` and helpers to read feeds."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

# The lab the query tests use: department A owns everything but sample SAMB (department B).
from tests.entities.conftest import admin, department, grant, member, project  # noqa: F401
from tests.query.lab import bob, lab  # noqa: F401


def odata_error(response: Any, status: int, code: str, target: str | None = None) -> str:
    """Assert ``response`` is the OData JSON error ``code`` with ``status``; its message."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    assert response.headers["OData-Version"] == "4.0"
    body = response.get_json()
    assert set(body) == {"error"}
    error = body["error"]
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    assert error.get("target") == target, error
    assert set(error) <= {"code", "message", "target"}
    return error["message"]


def page(api: Any, url: str, **query: Any) -> dict[str, Any]:
    """One feed page as JSON (status 200 and the OData headers checked)."""
    response = api.get(url, query_string=query or None)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.headers["OData-Version"] == "4.0"
    assert response.mimetype == "application/json"
    return response.get_json()


def all_pages(api: Any, url: str, **query: Any) -> tuple[list[dict[str, Any]], int]:
    """Every row of a feed, following ``@odata.nextLink``; and how many pages it took."""
    body = page(api, url, **query)
    rows, pages = list(body["value"]), 1
    while "@odata.nextLink" in body:
        link = body["@odata.nextLink"]
        assert link.startswith("http://localhost/odata/"), link
        body = page(api, link.removeprefix("http://localhost"))
        rows.extend(body["value"])
        pages += 1
    return rows, pages


@pytest.fixture
def small_pages(app: Flask, monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """``small_pages(n)``: the feed's page size is ``n`` for this test (the setting, as an
    operator would set it)."""
    return lambda size: monkeypatch.setitem(app.config["LABAPP"], "ODATA_PAGE_SIZE", size)
