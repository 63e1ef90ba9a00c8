"""Saved views: shape, visibility through shares, who may change and delete, bad input."""
from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.savedviews.conftest import created, listed, view


def test_create_answers_the_stored_view(member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    stored = created(alice, view("Recent", "sample", filter=" createdUtc ge now() sub "
                                 "duration'P7D' ", columns=["Name", "attributes.ph"],
                                 orderby="name desc"))
    assert (stored["userID"], stored["name"], stored["eClass"]) == ("alice", "Recent", "Sample")
    # The filter stays relative; names are the model's.
    assert stored["filter"] == "createdUtc ge now() sub duration'P7D'"
    assert stored["columns"] == ["name", "attributes.ph"]
    assert stored["orderby"] == "name desc" and stored["canWrite"] is True
    assert stored["shares"] == {"userIDs": [], "departmentIDs": [], "projectIDs": [],
                                "userRoles": []}
    assert alice.get(f"/api/saved-view/{stored['id']}").get_json() == stored
    assert alice.get("/api/saved-view").get_json() == [stored]
    assert listed(alice, "?eClass=Sample") == ["Recent"]
    assert listed(alice, "?eClass=Plate") == []


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
    private = created(alice, view("Private"))
    created(alice, view("To carol", userIDs=["carol"]))
    created(alice, view("To physics", departmentIDs=[physics]))
    created(alice, view("To vaccine", projectIDs=[vaccine]))
    created(alice, view("To managers", userRoles=["DATA_MANAGER"]))
    assert listed(alice) == ["Private", "To carol", "To managers", "To physics", "To vaccine"]
    assert listed(bob) == ["To physics"]
    assert listed(carol) == ["To carol"]
    assert listed(dave) == ["To managers"]
    assert listed(erin) == ["To vaccine"]
    hidden = bob.get(f"/api/saved-view/{private['id']}")
    assert_problem(hidden, 404, "not_found")
    unknown = bob.get("/api/saved-view/no-such-id")
    assert hidden.get_json()["detail"].replace(private["id"], "no-such-id") == \
        unknown.get_json()["detail"]


def test_only_owner_or_admin_update_and_only_owner_deletes(
        admin: ApiClient, member: Callable[..., ApiClient]) -> None:
    alice, bob, carol = member("alice"), member("bob"), member("carol")
    stored = created(alice, view("Shared", userIDs=["bob"]))
    url = f"/api/saved-view/{stored['id']}"
    assert bob.get(url).get_json()["canWrite"] is False
    assert_problem(bob.put(url, json=view("Mine now")), 403, "forbidden")
    assert_problem(bob.delete(url), 403, "forbidden")
    assert_problem(carol.put(url, json=view("x")), 404, "not_found")
    assert_problem(carol.delete(url), 404, "not_found")
    renamed = admin.put(url, json={**view("By admin", userIDs=["bob"]), "id": stored["id"],
                                   "userID": "admin"})
    assert renamed.status_code == 200
    assert (renamed.get_json()["name"], renamed.get_json()["userID"]) == ("By admin", "alice")
    assert_problem(admin.delete(url), 403, "forbidden")
    assert alice.get(url).get_json()["name"] == "By admin"
    assert alice.delete(url).status_code == 204
    assert listed(alice) == [] and listed(bob) == []
    assert_problem(alice.delete(url), 404, "not_found")


def test_the_owner_renames_and_unshares(member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    stored = created(alice, view("First", userIDs=["bob"], filter="status eq 'Initial'"))
    url = f"/api/saved-view/{stored['id']}"
    answer = alice.put(url, json={**stored, "name": "Second", "shares": {}})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert answer.get_json()["name"] == "Second"
    assert answer.get_json()["filter"] == "status eq 'Initial'"
    assert listed(bob) == []


@pytest.mark.parametrize(("change", "code", "field", "words"), [
    ({"eClass": "Unicorn"}, "unknown_class", "eClass", "Unknown entity class 'Unicorn'"),
    ({"filter": "name eq"}, "invalid_filter", "filter", "at position 7"),
    ({"filter": "colour eq 'red'"}, "invalid_filter", "filter", "colour"),
    ({"columns": ["name", "colour"]}, "invalid_select", "columns.1", "colour"),
    ({"orderby": "name sideways"}, "invalid_orderby", "orderby", "name sideways"),
    ({"orderby": "colour"}, "invalid_orderby", "orderby", "colour"),
    ({"name": ""}, "validation_failed", "name", ""),
    ({"shares": {"userIDs": ["nobody"]}}, "invalid_input", "shares.userIDs", "nobody"),
])
def test_bad_input_is_400_naming_the_field_and_writes_nothing(
        member: Callable[..., ApiClient], change: dict, code: str, field: str,
        words: str) -> None:
    alice = member("alice")
    body = {**view("Bad", filter="status eq 'Initial'", columns=["name"]), **change}
    answer = alice.post("/api/saved-view", json=body)
    assert_problem(answer, 400, code, errors=True)
    errors = answer.get_json()["errors"]
    assert any(error["field"] == field and words in error["message"] for error in errors), \
        answer.get_json()
    assert listed(alice) == []
    stored = created(alice, view("Good"))
    answer = alice.put(f"/api/saved-view/{stored['id']}",
                       json={**view("Good", filter="status eq 'Initial'"), **change})
    assert_problem(answer, 400, code, errors=True)
    assert alice.get(f"/api/saved-view/{stored['id']}").get_json() == stored


def test_missing_name_is_400(member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    body = view("x")
    del body["name"]
    answer = alice.post("/api/saved-view", json=body)
    assert_problem(answer, 400, "validation_failed", errors=True)
    assert [error["field"] for error in answer.get_json()["errors"]] == ["name"]
    assert listed(alice) == []
