"""``/api/alert-rule`` (decisions §16): the owner and ADMIN make, read, change and delete
rules; anyone else gets 404 as for an unknown id; a bad rule is 400 naming its field and
writes nothing; ``matches`` answers what matches now for the caller."""
from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select

from labapp.db import db
from labapp.model import AlertRule
from tests.alerts.conftest import made, rule_body
from tests.conftest import ApiClient
from tests.entities.conftest import body_of


def _count(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(AlertRule)) or 0


def test_create_read_update_delete(lab: dict[str, Any]) -> None:
    alice = lab["alice"]
    rule = made(alice, rule_body("Low", eclass="sample", channels=["email", "bell"]))
    assert rule["eClass"] == "Sample" and rule["ownerID"] == "alice"
    assert rule["channels"] == ["bell", "email"] and rule["canWrite"] is True
    assert rule["recipients"] == {"userIDs": ["alice"], "departmentIDs": [],
                                  "projectIDs": [], "userRoles": []}
    assert body_of(alice.get(f"/api/alert-rule/{rule['id']}"), 200) == rule
    assert [item["id"] for item in body_of(alice.get("/api/alert-rule"), 200)] == [rule["id"]]
    # Read, changed and sent back as it is (read-only fields ignored).
    changed = body_of(alice.put(f"/api/alert-rule/{rule['id']}",
                                json={**rule, "name": "Very low", "cadence": "weekly"}), 200)
    assert (changed["name"], changed["cadence"]) == ("Very low", "weekly")
    assert alice.delete(f"/api/alert-rule/{rule['id']}").status_code == 204
    assert alice.get(f"/api/alert-rule/{rule['id']}").status_code == 404


def test_others_get_404_and_admin_sees_all(lab: dict[str, Any], admin: ApiClient) -> None:
    rule = made(lab["alice"], rule_body())
    url = f"/api/alert-rule/{rule['id']}"
    bob = lab["bob"]
    assert body_of(bob.get("/api/alert-rule"), 200) == []
    for response in (bob.get(url), bob.put(url, json=rule_body()), bob.delete(url),
                     bob.get(f"{url}/matches")):
        assert response.status_code == 404
        assert response.get_json()["detail"] == f"No alert rule {rule['id']!r}."
    assert [item["id"] for item in body_of(admin.get("/api/alert-rule"), 200)] == [rule["id"]]
    assert body_of(admin.put(url, json=rule_body("By admin")), 200)["ownerID"] == "alice"
    assert admin.delete(url).status_code == 204


def test_anonymous_is_401(client: Any) -> None:
    assert client.get("/api/alert-rule").status_code == 401


@pytest.mark.parametrize(("change", "field"), [
    ({"eClass": "NoSuchClass"}, "eClass"),
    ({"filter": "amount lt"}, "filter"),
    ({"filter": "noSuchField eq 1"}, "filter"),
    ({"recipients": {"userIDs": ["nobody"]}}, "recipients.userIDs"),
    ({"recipients": {"departmentIDs": ["NO-DEP"], "userIDs": ["alice"]}},
     "recipients.departmentIDs"),
    ({"channels": ["sms"]}, "channels.0"),
    ({"channels": []}, "channels"),
    ({"channels": ["bell", "bell"]}, "channels"),
    ({"cadence": "hourly"}, "cadence"),
    ({"name": ""}, "name"),
    ({"name": "Low\r\nBcc: mallory@evil.example"}, "name"),
    ({"name": "Low\nstock"}, "name"),
    ({"name": "Tab\there"}, "name"),
    ({"name": "Next\u0085line"}, "name"),
    ({"name": "Line\u2028separator"}, "name"),
    ({"name": "Lone \ud800 surrogate"}, "name"),
    ({"name": "x" * 256}, "name"),
    ({"surprise": 1}, "surprise"),
])
def test_bad_input_is_400_naming_the_field(app: Flask, lab: dict[str, Any],
                                           change: dict[str, Any], field: str) -> None:
    response = lab["alice"].post("/api/alert-rule", json={**rule_body(), **change})
    assert response.status_code == 400, response.get_data(as_text=True)
    problem = response.get_json()
    assert field in [error["field"] for error in problem["errors"]], problem
    assert _count(app) == 0, "nothing half-written"


def test_a_name_with_a_control_character_is_refused_on_change_too(lab: dict[str, Any]) -> None:
    rule = made(lab["alice"], rule_body("Kept"))
    url = f"/api/alert-rule/{rule['id']}"
    response = lab["alice"].put(url, json=rule_body("Kept\r\nBcc: mallory@evil.example"))
    assert response.status_code == 400
    assert response.get_json()["errors"][0] == {
        "field": "name", "message": "must not contain control characters (line breaks, "
                                    "tabs, NUL …)"}
    assert body_of(lab["alice"].get(url), 200)["name"] == "Kept"
    # Letters of any script, emoji and punctuation are names like any other.
    made(lab["alice"], rule_body("Ablauf: Proben « bald » leer 🧪 — ≤ 5 µL"))


def test_a_rule_naming_nobody_tells_its_owner(lab: dict[str, Any]) -> None:
    rule = made(lab["alice"], {**rule_body(), "recipients": {}})
    assert rule["recipients"]["userIDs"] == ["alice"]


def test_bad_update_changes_nothing(lab: dict[str, Any]) -> None:
    rule = made(lab["alice"], rule_body("Kept"))
    url = f"/api/alert-rule/{rule['id']}"
    assert lab["alice"].put(url, json=rule_body("Changed", filter="amount lt")).status_code == 400
    assert body_of(lab["alice"].get(url), 200)["name"] == "Kept"


def test_matches_answers_what_the_caller_may_read(lab: dict[str, Any],
                                                  admin: ApiClient) -> None:
    rule = made(lab["alice"], rule_body())
    mine = body_of(lab["alice"].get(f"/api/alert-rule/{rule['id']}/matches"), 200)
    assert mine["count"] == 1 and mine["message"] == "1 item matches now"
    assert [item["id"] for item in mine["items"]] == [lab["low"]]
    every = body_of(admin.get(f"/api/alert-rule/{rule['id']}/matches?top=1"), 200)
    assert every["count"] == 2 and every["message"] == "2 items match now"
    assert len(every["items"]) == 1
    assert lab["alice"].get(f"/api/alert-rule/{rule['id']}/matches?top=-1").status_code == 400


def test_the_page_an_alert_opens_shows_a_recipient_what_they_may_read(
        app: Flask, lab: dict[str, Any], member: Any, grant: Any) -> None:
    from tests.helpers.pages import page_login

    member("carol", department_id=lab["chemistry"])
    grant.department(lab["chemistry"], "Write", user="alice")  # alice may address bob
    rule = made(lab["alice"], rule_body("Low", users=["alice", "bob"]))
    bob = app.test_client()
    page_login(bob, "bob")
    html = bob.get(f"/alerts/{rule['id']}/items").get_data(as_text=True)
    assert "Bob tube" in html and "Tube low" not in html and "1 item matches now" in html
    assert "edit-rule" not in html, "a recipient may not change the rule"
    assert bob.get(f"/alerts/{rule['id']}").status_code == 404
    outsider = app.test_client()
    page_login(outsider, "carol")
    assert outsider.get(f"/alerts/{rule['id']}/items").status_code == 404
    administrator = app.test_client()
    page_login(administrator, "admin", password=_admin_password())
    assert administrator.get(f"/alerts/{rule['id']}/items").status_code == 200


def _admin_password() -> str:
    from tests.conftest import ADMIN_PASSWORD
    return ADMIN_PASSWORD
