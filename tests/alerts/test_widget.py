"""The ``alerts`` dashboard widget (issue 23): the items a rule matches now, as the reader
may read them, with names, amounts with their unit and places as saved lists word them.
Issue 32: it names only a rule the caller may read (its owner, ADMIN, the users it tells);
any other is refused and shown exactly as a rule that does not exist."""
from __future__ import annotations

from typing import Any

from flask import Flask

from tests.alerts.conftest import made, rule_body
from tests.conftest import ApiClient
from tests.dashboards.conftest import board, created, widget
from tests.entities.conftest import body_of
from tests.helpers.pages import page_login


def _data(api: ApiClient, dashboard: dict[str, Any]) -> dict[str, Any]:
    return body_of(api.get(f"/api/dashboard/{dashboard['id']}/widget/0"), 200)["data"]


def test_a_rule_lists_what_the_reader_may_read(app: Flask, lab: dict[str, Any],
                                               admin: ApiClient) -> None:
    box = body_of(admin.post("/api/storage/location", json=[
        {"name": "Box 7", "departmentID": lab["physics"], "rows": 2, "columns": 2}]), 201)[0]
    body_of(admin.post(f"/api/storage/location/{box['id']}/checkin",
                       json=[{"eClass": "Sample", "id": lab["low"], "position": "A1"}]), 200)
    rule = made(admin, rule_body("Running low", users=["alice", "bob"]))
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


def test_without_a_rule_it_lists_the_rules_telling_the_reader(lab: dict[str, Any],
                                                              admin: ApiClient) -> None:
    made(lab["alice"], rule_body("Mine", users=["alice"]))
    made(admin, rule_body("For bob", users=["bob"]))
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
    from tests.helpers.pages import post_form

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


def test_a_widget_names_only_a_rule_the_caller_may_read(lab: dict[str, Any],
                                                        admin: ApiClient) -> None:
    private = made(lab["alice"], rule_body("Alice's secret plan", users=["alice"]))
    told = made(admin, rule_body("Told to bob", users=["bob"]))

    def refused(rule_id: str) -> dict[str, Any]:
        response = lab["bob"].post("/api/dashboard", json=board(
            "Peek", [widget("alerts", {"ruleID": rule_id})]))
        assert response.status_code == 400, response.get_data(as_text=True)
        return response.get_json()

    invisible, unknown = refused(private["id"]), refused("no-such-rule")
    assert invisible["errors"] == [{"field": "widgets.0.config.ruleID",
                                    "message": f"unknown alert rule {private['id']!r}"}]
    assert unknown["errors"] == [{"field": "widgets.0.config.ruleID",
                                  "message": "unknown alert rule 'no-such-rule'"}]
    assert invisible["detail"] == unknown["detail"], "the same answer for both"
    assert "secret" not in str(invisible)
    # The rules bob may read: one that tells him; its owner and ADMIN may use any.
    created(lab["bob"], board("Mine", [widget("alerts", {"ruleID": told["id"]})]))
    created(lab["alice"], board("Mine", [widget("alerts", {"ruleID": private["id"]})]))
    created(admin, board("All", [widget("alerts", {"ruleID": private["id"]})]))


def test_a_shared_dashboard_shows_nothing_of_a_rule_the_reader_may_not_read(
        app: Flask, lab: dict[str, Any]) -> None:
    private = made(lab["alice"], rule_body("Alice's secret plan", users=["alice"]))
    gone = made(lab["alice"], rule_body("Deleted since", users=["alice"]))
    shared = created(lab["alice"], board("Shared", [
        widget("alerts", {"ruleID": private["id"]}), widget("alerts", {"ruleID": gone["id"]},
                                                            y=4)],
        userIDs=["bob"]))
    assert lab["alice"].delete(f"/api/alert-rule/{gone['id']}").status_code == 204
    assert [part["name"] for part in _data(lab["alice"], shared)["rules"]] == [
        "Alice's secret plan"]
    hidden = lab["bob"].get(f"/api/dashboard/{shared['id']}/widget/0")
    deleted = lab["bob"].get(f"/api/dashboard/{shared['id']}/widget/1")
    assert hidden.get_json()["data"] == deleted.get_json()["data"] == {"rules": []}
    text = hidden.get_data(as_text=True)
    assert private["id"] not in text and "secret" not in text and "Sample" not in text
    page = app.test_client()
    page_login(page, "bob")
    html = page.get(f"/dashboards/{shared['id']}").get_data(as_text=True)
    assert "secret" not in html and private["id"] not in html
