"""Dashboards: shape, visibility through shares, who may change and delete, bad input."""
from __future__ import annotations

from collections.abc import Callable

from flask import Flask

from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.dashboards.conftest import board, created, listed, widget
from tests.notifications.conftest import unread


def test_create_answers_the_stored_dashboard(member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    body = board("Lab", [widget("status-counts", {"eClass": "sample"}, header="Samples"),
                         widget("note", {"markdown": "*hi*"}, x=6, cols=6)])
    stored = created(alice, body)
    assert stored["userID"] == "alice" and stored["name"] == "Lab" and stored["canWrite"]
    assert stored["widgets"][0]["config"] == {"eClass": "Sample"}  # class name normalised
    assert stored["widgets"][1]["gridster"] == {"x": 6, "y": 0, "cols": 6, "rows": 4}
    assert stored["shares"] == {"userIDs": [], "departmentIDs": [], "projectIDs": [],
                                "userRoles": []}
    assert alice.get("/api/dashboard").get_json() == [stored]


def test_shares_decide_who_sees_it(member: Callable[..., ApiClient],
                                   department: Callable[..., str],
                                   project: Callable[..., str], grant) -> None:
    physics, chemistry = department("Physics"), department("Chemistry")
    alice = member("alice", department_id=physics)
    bob = member("bob", department_id=physics)
    carol = member("carol", department_id=chemistry)
    dave = member("dave", department_id=chemistry, roles=["DATA_MANAGER"])
    erin = member("erin", department_id=chemistry)
    vaccine = project("Vaccine")
    grant.project(vaccine, "Read", user="erin")
    grant.project(vaccine, "Read", user="alice")  # one shares only projects one can read
    created(alice, board("Private"))
    created(alice, board("To carol", userIDs=["carol"]))
    created(alice, board("To physics", departmentIDs=[physics]))
    created(alice, board("To vaccine", projectIDs=[vaccine]))
    created(alice, board("To managers", userRoles=["DATA_MANAGER"]))
    assert listed(alice) == ["Private", "To carol", "To managers", "To physics", "To vaccine"]
    assert listed(bob) == ["To physics"]
    assert listed(carol) == ["To carol"]
    assert listed(dave) == ["To managers"]
    assert listed(erin) == ["To vaccine"]


def test_only_owner_or_admin_update_and_only_owner_deletes(
        admin: ApiClient, member: Callable[..., ApiClient]) -> None:
    alice, bob, carol = member("alice"), member("bob"), member("carol")
    stored = created(alice, board("Shared", userIDs=["bob"]))
    url = f"/api/dashboard/{stored['id']}"
    assert bob.get("/api/dashboard").get_json()[0]["canWrite"] is False
    assert_problem(bob.put(url, json=board("Mine now")), 403, "forbidden")
    assert_problem(bob.delete(url), 403, "forbidden")
    unknown = carol.put("/api/dashboard/no-such-id", json=board("x"))
    hidden = carol.put(url, json=board("x"))
    assert_problem(hidden, 404, "not_found")
    assert hidden.get_json()["detail"].replace(stored["id"], "no-such-id") == \
        unknown.get_json()["detail"]
    assert_problem(carol.delete(url), 404, "not_found")
    renamed = admin.put(url, json={**board("By admin", userIDs=["bob"]), "id": stored["id"],
                                   "userID": "admin"})
    assert renamed.status_code == 200
    assert (renamed.get_json()["name"], renamed.get_json()["userID"]) == ("By admin", "alice")
    assert_problem(admin.delete(url), 403, "forbidden")
    assert alice.delete(url).status_code == 204
    assert listed(alice) == [] and listed(bob) == []
    assert_problem(alice.delete(url), 404, "not_found")


def test_sharing_with_a_user_notifies_them_once(member: Callable[..., ApiClient]) -> None:
    alice, bob, carol = member("alice"), member("bob"), member("carol")
    stored = created(alice, board("Plan", userIDs=["bob"]))
    [note] = unread(bob)
    assert (note["kind"], note["subjectClass"], note["subjectID"]) == (
        "DashboardShared", "Dashboard", stored["id"])
    alice.put(f"/api/dashboard/{stored['id']}", json=board("Plan", userIDs=["bob", "carol"]))
    assert len(unread(bob)) == 1 and len(unread(carol)) == 1
    assert unread(alice) == []


def test_bad_input_is_400_naming_the_field(member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    cases = [
        ({"description": "no name"}, "name"),
        (board("x", [widget("no-such-widget")]), "widgets.0.plugin.plugin"),
        (board("x", [widget("note", {"markdown": "a"}),
                     widget("status-counts", {"eClass": "Nope"})]), "widgets.1.config.eClass"),
        (board("x", [widget("status-counts", {})]), "widgets.0.config.eClass"),
        (board("x", [widget("note", {"markdown": "a", "extra": 1})]),
         "widgets.0.config.extra"),
        (board("x", [widget("note", {"markdown": "a"}, x=-1)]), "widgets.0.gridster.x"),
        (board("x", [widget("note", {"markdown": "a"}, rows=-2)]), "widgets.0.gridster.rows"),
        (board("x", [widget("note", {"markdown": "a"}, x=8, cols=6)]),
         "widgets.0.gridster.cols"),
        (board("x", [widget("created-per-week", {"eClass": "Sample", "weeks": "3"})]),
         "widgets.0.config.weeks"),
        (board("x", [widget("saved-list", {"eClass": "Sample", "filter": "name eq"})]),
         "widgets.0.config.filter"),
        (board("x", [widget("saved-list", {"eClass": "Sample", "columns": ["nope"]})]),
         "widgets.0.config.columns"),
        ({**board("x"), "widgets": "many"}, "widgets"),
        ({**board("x"), "shares": {"userIDs": "bob"}}, "shares.userIDs"),
        ({**board("x"), "owner": "bob"}, "owner"),
    ]
    for body, field in cases:
        response = alice.post("/api/dashboard", json=body)
        problem = assert_problem(response, 400, "validation_failed", errors=True)
        assert field in {error["field"] for error in problem["errors"]}, (field, problem)
    for shares, field in (({"userIDs": ["ghost"]}, "shares.userIDs"),
                          ({"departmentIDs": ["NO-DEP"]}, "shares.departmentIDs"),
                          ({"projectIDs": ["NO-PRJ"]}, "shares.projectIDs"),
                          ({"userRoles": ["WIZARD"]}, "shares.userRoles")):
        response = alice.post("/api/dashboard", json=board("x", **shares))
        problem = assert_problem(response, 400, "invalid_input", errors=True)
        assert [error["field"] for error in problem["errors"]] == [field]
    assert listed(alice) == []


def test_a_rejected_update_changes_nothing(member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    stored = created(alice, board("Keep", [widget("note", {"markdown": "a"})]))
    response = alice.put(f"/api/dashboard/{stored['id']}",
                         json=board("Changed", userIDs=["ghost"]))
    assert response.status_code == 400
    assert alice.get("/api/dashboard").get_json() == [stored]


def test_anonymous_callers_get_401(app: Flask) -> None:
    client = app.test_client()
    assert client.get("/api/dashboard").status_code == 401
    assert client.post("/api/dashboard", json=board()).status_code == 401
    assert client.put("/api/dashboard/x", json=board()).status_code == 401
    assert client.delete("/api/dashboard/x").status_code == 401
    assert client.get("/api/dashboard/x/widget/0").status_code == 401
