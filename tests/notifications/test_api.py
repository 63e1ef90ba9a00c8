"""The inbox: only the owner sees, changes or deletes a notification; bad input is 400."""
from __future__ import annotations

from collections.abc import Callable

from flask import Flask

from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import save
from tests.notifications.conftest import unread


def _assigned(alice: ApiClient, assignee: str, count: int = 1) -> None:
    save(alice, *({"eClass": "Request", "name": f"R{i}", "assigneeID": assignee}
                  for i in range(count)))


def test_mark_all_as_seen_counts_and_keeps_them_listed(
        member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    _assigned(alice, "bob", 3)
    response = bob.get("/api/notification/markAllAsSeen")
    assert response.status_code == 200 and response.get_json() == {"updated": 3}
    assert {n["status"] for n in unread(bob)} == {"Seen"}
    assert bob.get("/api/notification/markAllAsSeen").get_json() == {"updated": 0}


def test_status_is_set_by_the_owner_and_read_leaves_the_unread_list(
        member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    _assigned(alice, "bob", 2)
    first, second = unread(bob)
    response = bob.post("/api/notification", json={"id": first["id"], "status": "Read"})
    assert response.status_code == 200
    assert response.get_json() == {**first, "status": "Read"}
    assert [n["id"] for n in unread(bob)] == [second["id"]]
    response = bob.post("/api/notification", json={"id": first["id"], "status": "Unread"})
    assert response.get_json()["status"] == "Unread"
    assert len(unread(bob)) == 2


def test_bad_status_and_bad_bodies_are_400_naming_the_field(
        member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    _assigned(alice, "bob")
    [note] = unread(bob)
    for body, field in (({"id": note["id"], "status": "Done"}, "status"),
                        ({"id": note["id"], "status": 3}, "status"),
                        ({"status": "Read"}, "id"),
                        ({"id": note["id"], "status": "Read", "extra": 1}, "extra")):
        response = bob.post("/api/notification", json=body)
        problem = assert_problem(response, 400, "validation_failed", errors=True)
        assert field in {error["field"] for error in problem["errors"]}, problem
    assert unread(bob)[0]["status"] == "Unread"


def test_others_get_404_as_for_an_unknown_id(member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    _assigned(alice, "bob")
    [note] = unread(bob)
    for caller in (alice, bob):
        missing = caller.post("/api/notification", json={"id": "nope", "status": "Read"})
        assert_problem(missing, 404, "not_found")
    assert_problem(alice.post("/api/notification", json={"id": note["id"], "status": "Read"}),
                   404, "not_found")
    assert_problem(alice.delete(f"/api/notification/{note['id']}"), 404, "not_found")
    assert unread(bob) == [note]


def test_the_owner_deletes(member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    _assigned(alice, "bob")
    [note] = unread(bob)
    assert bob.delete(f"/api/notification/{note['id']}").status_code == 204
    assert unread(bob) == []
    assert_problem(bob.delete(f"/api/notification/{note['id']}"), 404, "not_found")


def test_anonymous_callers_get_401(app: Flask) -> None:
    client = app.test_client()
    assert client.get("/api/notification/unread").status_code == 401
    assert client.get("/api/notification/markAllAsSeen").status_code == 401
    assert client.post("/api/notification", json={"id": "x", "status": "Read"}
                       ).status_code == 401
    assert client.delete(f"/api/notification/{'a' * 32}").status_code == 401


def test_every_auth_method_reaches_the_inbox(member: Callable[..., ApiClient],
                                             api_as: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    member("bob")
    _assigned(alice, "bob")
    for method in ("basic", "pat", "cookie"):
        assert len(unread(api_as("bob", method))) == 1
    cookie = api_as("bob", "cookie")
    [note] = unread(cookie)
    assert cookie.post("/api/notification", json={"id": note["id"], "status": "Seen"}
                       ).status_code == 200
