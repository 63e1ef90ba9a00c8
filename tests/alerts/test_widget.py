"""The ``alerts`` dashboard widget (issue 23): the items a rule matches now, as the reader
may read them, with names, amounts with their unit and places as saved lists word them."""
from __future__ import annotations

from typing import Any

from flask import Flask

from tests.alerts.conftest import made, rule_body
from tests.conftest import ApiClient
from tests.dashboards.conftest import board, created, widget
from tests.entities.conftest import body_of
from tests.web.test_pages import page_login


def _data(api: ApiClient, dashboard: dict[str, Any]) -> dict[str, Any]:
    return body_of(api.get(f"/api/dashboard/{dashboard['id']}/widget/0"), 200)["data"]


def test_a_rule_lists_what_the_reader_may_read(app: Flask, lab: dict[str, Any],
                                               admin: ApiClient) -> None:
    box = body_of(admin.post("/api/storage/location", json=[
        {"name": "Box 7", "departmentID": lab["physics"], "rows": 2, "columns": 2}]), 201)[0]
    body_of(admin.post(f"/api/storage/location/{box['id']}/checkin",
                       json=[{"eClass": "Sample", "id": lab["low"], "position": "A1"}]), 200)
    rule = made(lab["alice"], rule_body("Running low", users=["alice", "bob"]))
    shared = created(lab["alice"], board("Alerts", [widget("alerts", {"ruleID": rule["id"]})],
                                         userIDs=["bob"]))
    mine = _data(lab["alice"], shared)["rules"]
    assert [(part["name"], part["count"]) for part in mine] == [("Running low", 1)]
    assert [header["label"] for header in mine[0]["headers"]][:2] == ["Name", "Amount"]
    [row] = mine[0]["cells"]
    texts = [cell["text"] for cell in row["cells"]]
    assert row["id"] == lab["low"] and texts[0] == "Tube low" and "2 mL" in texts
    assert "Box 7 · A1" in texts
    bobs = _data(lab["bob"], shared)["rules"]
    assert bobs[0]["count"] == 1 and bobs[0]["cells"][0]["id"] == lab["bobs"]

    page = app.test_client()
    page_login(page, "alice")
    html = page.get(f"/dashboards/{shared['id']}/widget/0").get_data(as_text=True)
    assert "Running low" in html and "Tube low" in html and "Bob tube" not in html


def test_without_a_rule_it_lists_the_rules_telling_the_reader(lab: dict[str, Any]) -> None:
    made(lab["alice"], rule_body("Mine", users=["alice"]))
    made(lab["alice"], rule_body("For bob", users=["bob"]))
    dashboard = created(lab["bob"], board("Mine", [widget("alerts")]))
    assert [part["name"] for part in _data(lab["bob"], dashboard)["rules"]] == ["For bob"]


def test_config_is_checked(lab: dict[str, Any]) -> None:
    response = lab["alice"].post("/api/dashboard", json=board(
        "Bad", [widget("alerts", {"ruleID": "no-such-rule"})]))
    assert response.status_code == 400
    assert response.get_json()["errors"][0]["field"] == "widgets.0.config.ruleID"
    narrow = lab["alice"].post("/api/dashboard", json=board(
        "Narrow", [widget("alerts", cols=2)]))
    assert narrow.status_code == 400


def test_the_dashboard_editor_adds_an_alerts_widget(app: Flask, lab: dict[str, Any]) -> None:
    from tests.web.test_pages import post_form

    rule = made(lab["alice"], rule_body("Running low"))
    page = app.test_client()
    page_login(page, "alice")
    saved = post_form(page, "/dashboards/new", {
        "name": "Watch", "w0-plugin": "alerts", "w0-x": "0", "w0-y": "0", "w0-cols": "6",
        "w0-rows": "4", "w0-rule": rule["id"]})
    assert saved.status_code == 303, saved.get_data(as_text=True)[:500]
    [dashboard] = [item for item in body_of(lab["alice"].get("/api/dashboard"), 200)
                   if item["name"] == "Watch"]
    assert dashboard["widgets"][0]["config"] == {"ruleID": rule["id"]}
    edit = page.get(f"/dashboards/{dashboard['id']}/edit").get_data(as_text=True)
    assert f'value="{rule["id"]}"' in edit and "every rule that tells you" in edit
