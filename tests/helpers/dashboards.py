"""Dashboards and their widgets, through the API, and the entity tallies behind them."""
from __future__ import annotations

from collections import Counter
from typing import Any

from flask import Flask
from sqlalchemy import select

from labapp.db import db
from labapp.model import Entity, EntityCount, EntityCountChange
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


def true_counts(app: Flask) -> Counter[tuple[Any, ...]]:
    """Entities per (class, creation day, status, department, project), counted directly."""
    with app.app_context():
        rows = db.session.execute(select(Entity.eclass, Entity.created_utc, Entity.status,
                                         Entity.department_id, Entity.project_id)).all()
    return Counter((eclass, created_utc.date(), status, department or "", project or "")
                   for eclass, created_utc, status, department, project in rows)


def tallied(app: Flask) -> Counter[tuple[Any, ...]]:
    """What the tallies say: folded counts plus pending changes, zeros left out."""
    sums: Counter[tuple[Any, ...]] = Counter()
    with app.app_context():
        for table in (EntityCount, EntityCountChange):
            for row in db.session.execute(select(
                    table.eclass, table.day, table.status, table.department_id,
                    table.project_id, table.n)):
                sums[tuple(row[:-1])] += row.n
    return Counter({key: n for key, n in sums.items() if n})
