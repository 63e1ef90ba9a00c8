"""Fixtures of the saved view tests: the entity tests' callers, and view builders."""
from __future__ import annotations

from typing import Any

from tests.conftest import ApiClient
from tests.entities.conftest import admin, department, grant, member, project  # noqa: F401


def view(name: str = "View", eclass: str = "Sample", *, filter: str | None = None,
         columns: list[str] | None = None, orderby: str | None = None,
         **shares: list[str]) -> dict[str, Any]:
    """A saved view body; ``shares`` are userIDs=[...], departmentIDs=[...], ..."""
    return {"name": name, "eClass": eclass, "filter": filter, "columns": columns or [],
            "orderby": orderby, "shares": shares}


def created(api: ApiClient, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /api/saved-view`` asserting 201; returns the stored view."""
    response = api.post("/api/saved-view", json=body)
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()


def listed(api: ApiClient, query: str = "") -> list[str]:
    """The names of the saved views ``GET /api/saved-view`` shows."""
    response = api.get(f"/api/saved-view{query}")
    assert response.status_code == 200, response.get_data(as_text=True)
    return sorted(item["name"] for item in response.get_json())
