"""``GET /api/entity/{eClass}/{id}``: every property plus accessType, canWrite, files, events
and auditEvents."""
from __future__ import annotations

import base64

import pytest

from labapp.model.registry import find_class
from tests.auth.checks import secret_keys
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import fetch, save

EXTRAS = {"accessType", "canWrite", "files", "events", "auditEvents"}


def test_one_entity_with_everything_about_it(admin: ApiClient) -> None:
    (created,) = save(admin, {"eClass": "Sample", "id": "GET-1", "name": "One",
                              "amount": 2, "attributes": {"k": "v"},
                              "notes": [{"content": "n"}],
                              "files": [{"name": "a.txt", "content": base64.b64encode(b"a")
                                         .decode(), "mediaType": "text/plain"}]})
    detail = fetch(admin, "Sample", "GET-1")

    stored_fields = {name for name, field in find_class("Sample").fields.items()
                     if field.attr is not None}
    assert set(detail) == stored_fields | EXTRAS
    assert {key: detail[key] for key in created} == created
    assert detail["accessType"] == "Write" and detail["canWrite"] is True
    (file,) = detail["files"]
    assert (file["name"], file["size"], file["mediaType"]) == ("a.txt", 1, "text/plain")
    assert [event["kind"] for event in detail["events"]] == ["FileAdded", "NoteAdded",
                                                             "Created"]
    for event in detail["events"]:
        assert set(event) == {"id", "kind", "userID", "timestampUtc", "data"}
        assert event["userID"] == "admin" and event["timestampUtc"].endswith("Z")
    (audit,) = detail["auditEvents"]
    assert set(audit) == {"id", "action", "version", "userID", "timestampUtc", "changes"}


def test_events_and_audit_events_are_newest_first(admin: ApiClient) -> None:
    save(admin, {"eClass": "Experiment", "id": "GET-E"})
    for status in ("InProgress", "Completed", "InProgress"):
        save(admin, {"eClass": "Experiment", "id": "GET-E", "status": status}, status=200)
    detail = fetch(admin, "Experiment", "GET-E")

    assert [audit["version"] for audit in detail["auditEvents"]] == [4, 3, 2, 1]
    assert [audit["action"] for audit in detail["auditEvents"]] == ["update"] * 3 + ["create"]
    ids = [audit["id"] for audit in detail["auditEvents"]]
    assert ids == sorted(ids, reverse=True)
    assert [event["data"].get("to") for event in detail["events"]] == [
        "InProgress", "Completed", "InProgress", None]
    stamps = [event["timestampUtc"] for event in detail["events"]]
    assert stamps == sorted(stamps, reverse=True)


def test_the_class_in_the_url_is_case_insensitive(admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "id": "GET-2"})
    assert fetch(admin, "sAmPlE", "GET-2")["eClass"] == "Sample"


def test_an_id_with_a_slash(admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "id": "box/7"})
    assert fetch(admin, "Sample", "box/7")["id"] == "box/7"


def test_a_user_shows_roles_and_no_secret(admin: ApiClient) -> None:
    detail = fetch(admin, "User", "admin")
    assert detail["roles"] == ["ADMIN"] and detail["isActive"] is True
    assert not secret_keys(detail)
    assert "settings" not in detail


@pytest.mark.parametrize(("path", "code"), [
    ("Sample/GET-NOPE", "not_found"),
    ("Experiment/GET-3", "not_found"),
    ("Entity/GET-3", "unknown_class"),
    ("Gadget/GET-3", "unknown_class"),
])
def test_what_does_not_exist_is_404(admin: ApiClient, path: str, code: str) -> None:
    save(admin, {"eClass": "Sample", "id": "GET-3"})
    assert_problem(admin.get(f"/api/entity/{path}"), 404, code)


def test_reading_needs_authentication(client, admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "id": "GET-4"})
    assert_problem(client.get("/api/entity/Sample/GET-4"), 401, "not_authenticated")
