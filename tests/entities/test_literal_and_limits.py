"""Values taken literally outside the API's notation, clone limits, and value ranges."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask

from labapp.access.actor import Actor
from labapp.access.grant_sets import actor_for
from labapp.db import db, transaction
from labapp.entities import service
from labapp.model import User
from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import fetch, next_value, save, snapshot


@pytest.mark.parametrize("name", ["#1 plate", "#looks.like.notation", "!Sample"])
def test_without_notation_names_are_literal_and_draw_nothing(app: Flask, admin: ApiClient,
                                                              name: str) -> None:
    before = next_value(app, "Sample")
    with app.app_context(), transaction():
        actor = _admin_actor()
        created = service.save_batch(actor, [{"eClass": "Sample", "name": name}],
                                     notation=False).entities[0]
    assert created["name"] == name
    assert next_value(app, "Sample") == before + 1  # only the id was drawn
    assert fetch(admin, "Sample", created["id"])["name"] == name


def test_the_api_still_reads_notation_in_names(admin: ApiClient) -> None:
    created = save(admin, {"eClass": "Sample", "name": "!Sample"})[0]
    assert created["name"].startswith("SAM") and created["name"] != "!Sample"


def test_a_clone_of_an_entity_named_like_notation_keeps_the_name(app: Flask,
                                                                  admin: ApiClient) -> None:
    with app.app_context(), transaction():
        service.save_batch(_admin_actor(), [{"eClass": "Sample", "id": "LIT-1",
                                             "name": "#1 plate"}], notation=False)
    response = admin.post("/api/entity/Sample/LIT-1", json={})
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["name"] == "#1 plate (copy)"


@pytest.mark.parametrize("eclass, item", [
    ("File", {"eClass": "Sample", "id": "WITH-FILE",
              "files": [{"name": "a.txt", "content": "aGk=", "mediaType": "text/plain"}]}),
    ("User", {"eClass": "User", "id": "cloneme", "name": "C", "password": "long-enough-pw",
              "departmentID": DEFAULT_DEPARTMENT}),
])
def test_files_and_users_cannot_be_cloned(app: Flask, admin: ApiClient, eclass: str,
                                          item: dict) -> None:
    created = save(admin, item)[0]
    target = (fetch(admin, "Sample", created["id"])["files"][0]["id"] if eclass == "File"
              else created["id"])
    before = snapshot(app)
    assert_problem(admin.post(f"/api/entity/{eclass}/{target}", json={}), 400, "not_clonable")
    assert snapshot(app) == before


def test_a_form_body_to_clone_is_415_not_an_empty_override(admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "id": "FORM-1"})
    response = admin.post("/api/entity/Sample/FORM-1", data={"name": "ignored?"})
    assert_problem(response, 415, "unsupported_media_type")


@pytest.mark.parametrize("key", ["Version", "VERSION"])
def test_the_version_condition_is_matched_case_insensitively(admin: ApiClient,
                                                             key: str) -> None:
    save(admin, {"eClass": "Sample", "id": "VER-1"})
    save(admin, {"eClass": "Sample", "id": "VER-1", "name": "second"}, status=200)
    response = admin.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": "VER-1", "name": "third", key: 1}]})
    assert_problem(response, 409, "stale_version")
    assert fetch(admin, "Sample", "VER-1")["name"] == "second"


def test_fetch_merge_save_works_when_the_parent_is_hidden(
        admin: ApiClient, department: Callable[..., str], member: Callable[..., ApiClient],
        grant) -> None:
    """A reference sent back unchanged is not re-checked against the caller's visibility."""
    hidden = department("Hidden")
    save(admin, {"eClass": "Sample", "id": "PARENT-H", "departmentID": hidden})
    save(admin, {"eClass": "Sample", "id": "CHILD-V", "parentID": "PARENT-H",
                 "departmentID": DEFAULT_DEPARTMENT})
    alice = member("alice")
    child = fetch(alice, "Sample", "CHILD-V")
    child["name"] = "renamed by alice"
    response = alice.post("/api/entity", json={"entities": [child]})
    assert response.status_code == 200, response.get_json()
    assert fetch(admin, "Sample", "CHILD-V")["name"] == "renamed by alice"
    moved = alice.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": "CHILD-V", "parentID": "PARENT-H", "name": "again"}]})
    assert moved.status_code == 200  # still the same parent: nothing to check
    changed = alice.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": "CHILD-V", "originID": "PARENT-H"}]})
    assert_problem(changed, 400, "invalid_entity", errors=True)


@pytest.mark.parametrize("field, value, ok", [
    ("stepIndex", 2**31 - 1, True), ("stepIndex", 2**31, False), ("stepIndex", -(2**31), False),
])
def test_integer_fields_respect_their_column_range(app: Flask, admin: ApiClient, field: str,
                                                   value: int, ok: bool) -> None:
    before = snapshot(app)
    response = admin.post("/api/entity", json={"entities": [{"eClass": "Step", field: value}]})
    if ok:
        assert response.status_code == 201, response.get_json()
        assert response.get_json()["entities"][0][field] == value
    else:
        body = assert_problem(response, 400, "invalid_entity", errors=True)
        assert body["errors"][0]["field"] == f"entities.0.{field}"
        assert snapshot(app) == before


def _admin_actor() -> Actor:
    """The administrator as a service call sees them (inside an app context)."""
    return actor_for(db.session.get(User, "admin"), method="bearer")
