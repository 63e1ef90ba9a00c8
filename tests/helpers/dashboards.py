"""Dashboards and their widgets, through the API."""
from __future__ import annotations

from typing import Any

from tests.conftest import ApiClient


def widget_data(api: ApiClient, dashboard: dict[str, Any], index: int, **query: Any) -> Any:
    """The data of widget ``index`` of ``dashboard`` as ``api`` sees it, asserting 200 and that
    the answer names that widget; ``query`` goes in the query string."""
    response = api.get(f"/api/dashboard/{dashboard['id']}/widget/{index}", query_string=query)
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.get_json()
    assert body["index"] == index
    assert body["plugin"] == dashboard["widgets"][index]["plugin"]
    return body["data"]


def grid_widget(plugin: str, x: int, y: int, cols: int, config: dict[str, Any]
                ) -> dict[str, Any]:
    """A widget of a dashboard body at column ``x``, row ``y``, ``cols`` wide, 4 rows high."""
    return {"plugin": {"app": "labapp", "plugin": plugin},
            "gridster": {"x": x, "y": y, "cols": cols, "rows": 4}, "config": config,
            "header": None}
