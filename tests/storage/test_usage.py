"""``storage_usage``: the public summary of how full each location is (for dashboards)."""
from __future__ import annotations

from collections.abc import Callable

from flask import Flask

from labapp.access.grant_sets import actor_for
from labapp.db import db
from labapp.model import User
from labapp.storage.service import storage_usage
from tests.conftest import ApiClient
from tests.storage.conftest import check_in, make_items, make_locations, refs


def test_usage_lists_visible_locations_with_true_counts(
        app: Flask, admin: ApiClient, department: Callable[..., str],
        member: Callable[..., ApiClient]) -> None:
    other = department("Other")
    freezer, box, hidden = make_locations(
        admin, {"id": "#f", "name": "Freezer"},
        {"name": "Box", "parentID": "#f", "rows": 2, "columns": 2},
        {"name": "Hidden", "departmentID": other})
    member("alice")
    theirs = make_items(admin, "Sample", 1, departmentID=other)
    check_in(admin, box["id"], refs("Sample", theirs + make_items(admin, "Sample", 1)))
    with app.app_context():
        alice = actor_for(db.session.get(User, "alice"), method="bearer")
        usage = {row["id"]: row for row in storage_usage(alice)}
        narrowed = storage_usage(alice, [box["id"], hidden["id"]])
    assert hidden["id"] not in usage
    assert usage[box["id"]] == {"id": box["id"], "name": "Box", "hierarchy": "Freezer / Box",
                                "locationType": "Other", "parentID": freezer["id"],
                                "capacity": 4, "stored": 2, "available": 2}
    assert usage[freezer["id"]]["capacity"] is None
    assert [row["id"] for row in narrowed] == [box["id"]]


def test_usage_lists_locations_with_their_numbers_in_order(app: Flask, admin: ApiClient) -> None:
    make_locations(admin, {"id": "#r", "name": "Rack"},
                   *({"name": f"Box {number}", "parentID": "#r", "capacity": 3}
                     for number in (10, 9, 1, 2)))
    with app.app_context():
        reader = actor_for(db.session.get(User, "admin"), method="bearer")
        names = [row["name"] for row in storage_usage(reader) if row["name"].startswith("Box")]
    assert names == ["Box 1", "Box 2", "Box 9", "Box 10"]
