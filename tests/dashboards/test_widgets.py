"""Widget data: live, through the visibility rule of the viewer (not of the owner)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask

from labapp.db import transaction
from labapp.model import Location
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.dashboards.conftest import board, created, widget
from tests.entities.conftest import save
from tests.helpers.dashboards import widget_data


def _two_labs(member: Callable[..., ApiClient], department: Callable[..., str]):
    physics, chemistry = department("Physics"), department("Chemistry")
    alice = member("alice", department_id=physics)
    bob = member("bob", department_id=chemistry)
    save(alice, *({"eClass": "Sample", "name": f"P{i}"} for i in range(3)))
    save(bob, {"eClass": "Sample", "name": "C0"})
    return physics, chemistry, alice, bob


def test_each_viewer_sees_only_their_rows(member: Callable[..., ApiClient],
                                          department: Callable[..., str]) -> None:
    physics, chemistry, alice, bob = _two_labs(member, department)
    stored = created(alice, board("Shared", [
        widget("status-counts", {"eClass": "Sample"}),
        widget("created-per-week", {"eClass": "Sample", "weeks": 4}),
        widget("saved-list", {"eClass": "Sample", "columns": ["id", "name"], "top": 2}),
        widget("recent-activity", {"limit": 5}),
    ], departmentIDs=[chemistry]))
    bars = widget_data(alice, stored, 0)["bars"]
    assert bars[0] == {"label": "Initial", "value": 3}
    assert sum(bar["value"] for bar in bars) == 3
    assert widget_data(bob, stored, 0)["bars"][0] == {"label": "Initial", "value": 1}
    points = widget_data(alice, stored, 1)["points"]
    assert len(points) == 4 and points[-1]["value"] == 3
    assert sum(point["value"] for point in widget_data(bob, stored, 1)["points"]) == 1
    listing = widget_data(alice, stored, 2)
    assert (listing["hasMore"], listing["page"], listing["columns"]) == (True, 0, ["id", "name"])
    assert [row["name"] for row in listing["rows"]] == ["P0", "P1"]
    last = widget_data(alice, stored, 2, page=1)
    assert [row["name"] for row in last["rows"]] == ["P2"] and last["hasMore"] is False
    assert [row["name"] for row in widget_data(bob, stored, 2)["rows"]] == ["C0"]
    def samples(rows: list[dict[str, Any]]) -> set[str]:
        return {row["name"] for row in rows if row["eClass"] == "Sample"}
    assert samples(widget_data(bob, stored, 3)["rows"]) == {"C0"}
    assert samples(widget_data(alice, stored, 3)["rows"]) == {"P0", "P1", "P2"}


def test_saved_list_filter_applies(member: Callable[..., ApiClient],
                                   department: Callable[..., str]) -> None:
    _, _, alice, _ = _two_labs(member, department)
    stored = created(alice, board("F", [widget("saved-list", {
        "eClass": "Sample", "filter": "name eq 'P1'"})]))
    assert [row["name"] for row in widget_data(alice, stored, 0)["rows"]] == ["P1"]


def test_my_requests_and_note(member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    save(alice, {"eClass": "Request", "name": "Open", "assigneeID": "bob"},
         {"eClass": "Request", "name": "Done", "assigneeID": "bob", "status": "Completed"},
         {"eClass": "Request", "name": "Alice's", "assigneeID": "alice"})
    stored = created(bob, board("B", [
        widget("my-requests"),
        widget("note", {"markdown": "# Hi\n<script>alert(1)</script> [x](javascript:y)"})]))
    assert [row["name"] for row in widget_data(bob, stored, 0)["rows"]] == ["Open"]
    html = widget_data(bob, stored, 1)["html"]
    assert "<h1>Hi</h1>" in html
    assert "<script>" not in html and 'href="javascript' not in html


def test_storage_usage_counts_what_is_stored(app: Flask, admin: ApiClient) -> None:
    save(admin, {"eClass": "Location", "id": "FRZ-1", "name": "Freezer 1", "capacity": 10},
         {"eClass": "Location", "id": "FRZ-2", "name": "Freezer 2"})
    save(admin, *({"eClass": "Sample", "locationID": "FRZ-1"} for _ in range(4)))
    stored = created(admin, board("S", [widget("storage-usage")]))
    assert widget_data(admin, stored, 0)["bars"] == [
        {"label": "Freezer 1", "id": "FRZ-1", "value": 4, "capacity": 10}]
    with app.app_context(), transaction() as session:
        assert session.get(Location, "FRZ-2").capacity is None  # unlimited: not drawn


def test_widget_data_access(member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    stored = created(alice, board("Mine", [widget("note", {"markdown": "x"})]))
    assert_problem(bob.get(f"/api/dashboard/{stored['id']}/widget/0"), 404, "not_found")
    assert_problem(alice.get(f"/api/dashboard/{stored['id']}/widget/1"), 404, "not_found")
    response = alice.get(f"/api/dashboard/{stored['id']}/widget/0?page=-1")
    assert_problem(response, 400, "validation_failed", errors=True)
