"""Fixtures of the dashboard tests: the entity tests' callers, and dashboard builders."""
from __future__ import annotations

from typing import Any

from tests.conftest import ApiClient
from tests.entities.conftest import admin, department, grant, member, project  # noqa: F401


def widget(plugin: str, config: dict[str, Any] | None = None, *, x: int = 0, y: int = 0,
           cols: int = 6, rows: int = 4, header: str | None = None) -> dict[str, Any]:
    """One widget of a dashboard body."""
    return {"plugin": {"app": "labapp", "plugin": plugin},
            "gridster": {"x": x, "y": y, "cols": cols, "rows": rows},
            "config": config or {}, "header": header}


def board(name: str = "Board", widgets: list[dict[str, Any]] | None = None,
          **shares: list[str]) -> dict[str, Any]:
    """A dashboard body; ``shares`` are userIDs=[...], departmentIDs=[...], ..."""
    return {"name": name, "description": None, "widgets": widgets or [], "shares": shares}


def created(api: ApiClient, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /api/dashboard`` asserting 201; returns the stored dashboard."""
    response = api.post("/api/dashboard", json=body)
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()


def listed(api: ApiClient) -> list[str]:
    """The names of the dashboards ``GET /api/dashboard`` shows."""
    response = api.get("/api/dashboard")
    assert response.status_code == 200, response.get_data(as_text=True)
    return sorted(item["name"] for item in response.get_json())
