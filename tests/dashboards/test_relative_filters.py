"""Saved-list widgets with relative dates: the filter is stored as written and evaluated at
each refresh (decisions §7).

Expiry dates lie whole days from today and never within a day of the filter's bound, so a
refresh just after midnight UTC lists the same samples.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.dashboards.conftest import board, created, widget
from tests.entities.conftest import save

EXPIRING = "startswith(name, 'DashRel') and expiryDate lt now() add duration'P14D'"


def _rows(api: ApiClient, dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    response = api.get(f"/api/dashboard/{dashboard['id']}/widget/0")
    assert response.status_code == 200, response.get_data(as_text=True)
    rows: list[dict[str, Any]] = response.get_json()["data"]["rows"]
    return rows


def test_an_expiring_soon_list_follows_today(member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    today = datetime.now(UTC).date()

    def expiring_in(days: int) -> str:
        return (today + timedelta(days=days)).isoformat()

    stored = save(alice, *({"eClass": "Sample", "name": f"DashRel {days:+d}",
                            "expiryDate": expiring_in(days)} for days in (-3, 5, 30)))
    dashboard = created(alice, board("Cold storage", [widget("saved-list", {
        "eClass": "Sample", "filter": EXPIRING, "columns": ["id", "name", "expiryDate"],
        "orderby": "expiryDate", "top": 20})]))
    [shown] = [item for item in alice.get("/api/dashboard").get_json()
               if item["id"] == dashboard["id"]]
    assert shown["widgets"][0]["config"]["filter"] == EXPIRING
    assert [row["name"] for row in _rows(alice, dashboard)] == ["DashRel -3", "DashRel +5"]
    # A refresh evaluates the stored text again: a sample now expiring soon joins the list.
    save(alice, {"eClass": "Sample", "id": stored[2]["id"], "expiryDate": expiring_in(2)},
         status=200)
    assert {row["name"] for row in _rows(alice, dashboard)} == {
        "DashRel -3", "DashRel +5", "DashRel +30"}


def test_a_bad_relative_filter_is_refused_with_its_position(
        member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    for text, message in (
            ("expiryDate lt now() add duration'P1M'", "counts years, months or weeks"),
            ("expiryDate lt today()", "Unknown function 'today' at position 14")):
        response = alice.post("/api/dashboard", json=board("Bad", [widget("saved-list", {
            "eClass": "Sample", "filter": text})]))
        problem = assert_problem(response, 400, "validation_failed", errors=True)
        errors = [error for error in problem["errors"]
                  if error["field"] == "widgets.0.config.filter"]
        assert len(errors) == 1 and message in errors[0]["message"], problem
