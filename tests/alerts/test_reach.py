"""Who may address whom (decisions §16, issue 32 §2): a member's rule may address themselves,
the departments they belong to or hold Write on (and their members), the projects they hold
Write on (and their members); anything else, and any role, needs ADMIN: 403 naming each
recipient, nothing written. A rule is held to its owner's reach of the moment: recipients
the owner can no longer address are skipped at evaluation (the others are told) and named
on the rule's page; an inactive owner's rule tells nobody."""
from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import delete, func, select, update

from labapp.db import db, transaction
from labapp.model import AlertRule, User
from labapp.model.access import DepartmentAccess
from tests.alerts.conftest import NOW, alerts_of, made, rule_body, said, tick
from tests.conftest import ApiClient
from tests.entities.conftest import body_of
from tests.helpers.pages import page_login, post_form


def _count(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(AlertRule)) or 0


@pytest.fixture
def reach(lab: dict[str, Any], admin: ApiClient, member: Any, department: Any, project: Any,
          grant: Any) -> dict[str, Any]:
    """Besides alice (Physics) and bob (Chemistry): carol in Physics, dan in Biology (which
    alice holds Write on), erin in Geology (Read only for alice); a project alice holds
    Write on (erin is its member) and one she reads only."""
    biology, geology = department("Biology"), department("Geology")
    member("carol", department_id=lab["physics"])
    member("dan", department_id=biology)
    member("erin", department_id=geology)
    grant.department(biology, "Write", user="alice")
    grant.department(geology, "Read", user="alice")
    written, read = project("Written"), project("Read only")
    grant.project(written, "Write", user="alice")
    grant.project(written, "Read", user="erin")
    grant.project(read, "Read", user="alice")
    return {**lab, "admin": admin, "biology": biology, "geology": geology, "written": written,
            "read": read}


@pytest.mark.parametrize("recipients", [
    {"users": ["alice"]},
    {"users": ["carol"]},                      # of her home department
    {"users": ["dan"]},                        # of a department she holds Write on
    {"users": ["erin"]},                       # of a project she holds Write on
    {"users": [], "departments": ["physics"]},
    {"users": [], "departments": ["biology"]},
    {"users": [], "projects": ["written"]},
])
def test_a_member_may_address_what_they_belong_to_or_write(
        reach: dict[str, Any], recipients: dict[str, list[str]]) -> None:
    body = rule_body("Within reach", users=recipients.get("users", []),
                     departments=[reach[key] for key in recipients.get("departments", [])],
                     projects=[reach[key] for key in recipients.get("projects", [])])
    made(reach["alice"], body)


@pytest.mark.parametrize(("recipients", "field", "named"), [
    ({"users": ["bob"]}, "recipients.userIDs", "user 'bob'"),
    ({"departments": ["chemistry"]}, "recipients.departmentIDs", "department"),
    ({"departments": ["geology"]}, "recipients.departmentIDs", "department"),  # Read only
    ({"projects": ["read"]}, "recipients.projectIDs", "project"),
    ({"roles": ["ADMIN"]}, "recipients.userRoles", "role 'ADMIN'"),
    ({"roles": ["DATA_MANAGER"]}, "recipients.userRoles", "role 'DATA_MANAGER'"),
])
def test_anything_else_is_403_naming_the_recipient(
        app: Flask, reach: dict[str, Any], recipients: dict[str, list[str]], field: str,
        named: str) -> None:
    body = rule_body("Beyond reach", users=["alice", *recipients.get("users", [])],
                     departments=[reach[key] for key in recipients.get("departments", [])],
                     projects=[reach[key] for key in recipients.get("projects", [])],
                     roles=recipients.get("roles", []))
    response = reach["alice"].post("/api/alert-rule", json=body)
    assert response.status_code == 403, response.get_data(as_text=True)
    problem = response.get_json()
    assert problem["code"] == "recipient_out_of_reach" and named in problem["detail"]
    assert [error["field"] for error in problem["errors"]] == [field]
    assert _count(app) == 0, "nothing written"


def test_admin_addresses_anyone_but_cannot_widen_a_members_rule(
        app: Flask, reach: dict[str, Any], admin: ApiClient) -> None:
    made(admin, rule_body("Everyone", users=["bob"], departments=[reach["chemistry"]],
                          roles=["ADMIN"]))
    mine = made(reach["alice"], rule_body("Mine"))
    widened = admin.put(f"/api/alert-rule/{mine['id']}",
                        json=rule_body("Mine", users=["alice", "bob"]))
    assert widened.status_code == 403 and "user 'bob'" in widened.get_json()["detail"]
    assert body_of(reach["alice"].get(f"/api/alert-rule/{mine['id']}"), 200)[
        "recipients"]["userIDs"] == ["alice"]


def test_a_recipient_out_of_reach_since_is_skipped_and_named_on_the_page(
        app: Flask, reach: dict[str, Any]) -> None:
    rule = made(reach["alice"], rule_body("Low", users=["alice", "dan"]))
    with app.app_context(), transaction():  # the Write grant on Biology is taken back
        db.session.execute(delete(DepartmentAccess).where(
            DepartmentAccess.department_id == reach["biology"]))
    body_of(reach["admin"].post("/api/entity", json={"entities": [
        {"eClass": "Sample", "name": "Dan tube", "amount": 1.0,
         "departmentID": reach["biology"]}]}), 201)
    report = tick(app)
    assert report.notifications == 1
    assert alerts_of(app, "alice") == [said("Low: 1 sample")]
    assert alerts_of(app, "dan") == [], "out of alice's reach now: skipped"

    page = app.test_client()
    page_login(page, "alice")
    html = page.get(f"/alerts/{rule['id']}").get_data(as_text=True)
    assert 'id="skipped-recipients"' in html and "user &#39;dan&#39;" in html
    told = app.test_client()
    page_login(told, "dan")
    assert told.get(f"/alerts/{rule['id']}/items").status_code == 404, "no longer told"


def test_an_inactive_owners_rule_tells_nobody(app: Flask, lab: dict[str, Any],
                                              member: Any) -> None:
    member("carol", department_id=lab["physics"])
    made(lab["alice"], rule_body("Low", users=["alice", "carol"]))
    with app.app_context(), transaction():
        db.session.execute(update(User).where(User.id == "alice").values(is_active=False))
    report = tick(app, NOW)
    assert report.started == 2 and report.notifications == 0
    assert alerts_of(app, "carol") == []


def test_the_form_shows_the_refusal(app: Flask, lab: dict[str, Any]) -> None:
    page = app.test_client()
    page_login(page, "alice")
    response = post_form(page, "/alerts/new", {
        "name": "Tell bob", "eClass": "Sample", "filter": "amount le 5",
        "userIDs": ["alice", "bob"], "channels": "bell", "cadence": "immediate",
        "active": "true"})
    html = response.get_data(as_text=True)
    assert response.status_code == 403
    assert 'id="rule-error"' in html and "may not address user &#39;bob&#39;" in html
    assert _count(app) == 0
