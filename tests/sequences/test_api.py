"""``GET /api/sequence`` and ``POST /api/sequence``: success, access and bad input."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.conftest import ADMIN_PASSWORD, ApiClient
from tests.contracts.problem import assert_problem

Stored = Callable[[], list[dict[str, Any]]]


def by_id(sequences: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {sequence["id"]: sequence for sequence in sequences}


def test_list_is_sorted_with_the_pattern_of_the_next_value(admin: ApiClient) -> None:
    response = admin.get("/api/sequence")
    assert response.status_code == 200
    sequences = response.get_json()
    ids = [sequence["id"] for sequence in sequences]
    assert ids == sorted(ids)
    sample = by_id(sequences)["Sample"]
    assert sample == {"id": "Sample", "prefix": "SAM", "minDigits": 5, "nextValue": 1,
                      "type": None, "pattern": "SAM00001"}


def test_any_user_may_list(make_user: Callable[..., str],
                           api_as: Callable[..., ApiClient], admin: ApiClient) -> None:
    make_user("carol")
    response = api_as("carol").get("/api/sequence")
    assert response.status_code == 200
    assert response.get_json() == admin.get("/api/sequence").get_json()


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_anonymous_callers_are_refused(client: FlaskClient, stored: Stored,
                                       method: str) -> None:
    before = stored()
    response = client.open("/api/sequence", method=method, json={"id": "ANON"})
    assert_problem(response, 401, "not_authenticated")
    assert stored() == before


def test_non_admin_may_not_save(make_user: Callable[..., str],
                                api_as: Callable[..., ApiClient], stored: Stored) -> None:
    make_user("dave", roles=["DATA_MANAGER"])
    before = stored()
    for body in ({"id": "DAVE", "prefix": "D"}, {"id": "Sample", "nextValue": 50}):
        response = api_as("dave").post("/api/sequence", json=body)
        assert_problem(response, 403, "missing_scope")
    assert stored() == before


def test_create_takes_the_defaults(admin: ApiClient, stored: Stored) -> None:
    response = admin.post("/api/sequence", json={"id": "MY.seq-1_x"})
    assert response.status_code == 201
    created = {"id": "MY.seq-1_x", "prefix": "", "minDigits": 5, "nextValue": 1,
               "type": None, "pattern": "00001"}
    assert response.get_json() == created
    assert by_id(stored())["MY.seq-1_x"] == created


def test_create_with_every_field(admin: ApiClient, stored: Stored) -> None:
    body = {"id": "P", "prefix": "PRJ-", "minDigits": 3, "nextValue": 42, "type": "Project"}
    response = admin.post("/api/sequence", json=body)
    assert response.status_code == 201
    assert response.get_json() == body | {"pattern": "PRJ-042"}
    assert by_id(stored())["P"] == body | {"pattern": "PRJ-042"}


def test_update_changes_only_the_given_fields(admin: ApiClient, stored: Stored) -> None:
    admin.post("/api/sequence", json={"id": "U", "prefix": "U", "minDigits": 4,
                                      "nextValue": 7, "type": "t"})
    response = admin.post("/api/sequence", json={"id": "U", "minDigits": 6})
    assert response.status_code == 200
    updated = {"id": "U", "prefix": "U", "minDigits": 6, "nextValue": 7, "type": "t",
               "pattern": "U000007"}
    assert response.get_json() == updated
    response = admin.post("/api/sequence", json={"id": "U", "nextValue": 7, "type": None,
                                                 "prefix": ""})
    assert response.status_code == 200
    assert response.get_json() == updated | {"type": None, "prefix": "", "pattern": "000007"}


def test_update_raises_next_value_of_a_default_sequence(admin: ApiClient) -> None:
    response = admin.post("/api/sequence", json={"id": "Sample", "nextValue": 1000})
    assert response.status_code == 200
    assert response.get_json()["pattern"] == "SAM01000"
    created = admin.post("/api/entity", json={"entities": [{"eClass": "Sample"}]})
    assert created.status_code == 201, created.get_json()
    assert created.get_json()["entities"][0]["id"] == "SAM01000"


def test_lowering_next_value_is_a_conflict(admin: ApiClient, stored: Stored) -> None:
    admin.post("/api/sequence", json={"id": "L", "prefix": "L", "nextValue": 10})
    before = stored()
    response = admin.post("/api/sequence", json={"id": "L", "nextValue": 9, "prefix": "X"})
    assert_problem(response, 409, "sequence_value_issued")
    assert stored() == before


def test_lowering_below_drawn_values_is_a_conflict(admin: ApiClient, stored: Stored) -> None:
    """Values drawn by entity creation count as issued: going back would repeat them."""
    created = admin.post("/api/entity", json={"entities": [{"eClass": "Sample"}] * 3})
    assert [item["id"] for item in created.get_json()["entities"]] == [
        "SAM00001", "SAM00002", "SAM00003"]
    before = stored()
    response = admin.post("/api/sequence", json={"id": "Sample", "nextValue": 3})
    assert_problem(response, 409, "sequence_value_issued")
    assert stored() == before
    assert admin.post("/api/sequence", json={"id": "Sample", "nextValue": 4}).status_code == 200


@pytest.mark.parametrize(("body", "field"), [
    ({}, "id"),
    ({"prefix": "X"}, "id"),
    ({"id": ""}, "id"),
    ({"id": "has space"}, "id"),
    ({"id": "slash/no"}, "id"),
    ({"id": "new\n"}, "id"),
    ({"id": "é"}, "id"),
    ({"id": "x" * 65}, "id"),
    ({"id": 5}, "id"),
    ({"id": "B", "prefix": "p" * 33}, "prefix"),
    ({"id": "B", "prefix": None}, "prefix"),
    ({"id": "B", "minDigits": 0}, "minDigits"),
    ({"id": "B", "minDigits": 19}, "minDigits"),
    ({"id": "B", "minDigits": "x"}, "minDigits"),
    ({"id": "B", "minDigits": "5"}, "minDigits"),
    ({"id": "B", "minDigits": 4.5}, "minDigits"),
    ({"id": "B", "minDigits": True}, "minDigits"),
    ({"id": "B", "nextValue": 0}, "nextValue"),
    ({"id": "B", "nextValue": -1}, "nextValue"),
    ({"id": "B", "nextValue": "a"}, "nextValue"),
    ({"id": "B", "nextValue": 2**31}, "nextValue"),
    ({"id": "B", "type": "t" * 65}, "type"),
    ({"id": "B", "bogus": 1}, "bogus"),
])
def test_invalid_fields_are_refused(admin: ApiClient, stored: Stored, body: dict[str, Any],
                                    field: str) -> None:
    before = stored()
    response = admin.post("/api/sequence", json=body)
    problem = assert_problem(response, 400, "validation_failed", errors=True)
    assert field in {entry["field"] for entry in problem["errors"]}
    assert stored() == before


def test_a_body_that_is_not_an_object_is_refused(admin: ApiClient, stored: Stored) -> None:
    before = stored()
    response = admin.post("/api/sequence", json=[{"id": "B"}])
    assert_problem(response, 400, "validation_failed", errors=True)
    assert stored() == before


def test_non_json_is_415(admin: ApiClient, stored: Stored) -> None:
    before = stored()
    response = admin.post("/api/sequence", data="id=B", content_type="text/plain")
    assert_problem(response, 415, "unsupported_media_type")
    assert stored() == before


def test_malformed_json_is_400(admin: ApiClient, stored: Stored) -> None:
    before = stored()
    response = admin.post("/api/sequence", data='{"id": "B", ',
                          content_type="application/json")
    assert_problem(response, 400, "invalid_json")
    assert stored() == before


def test_cookie_login_needs_the_csrf_token(api_as: Callable[..., ApiClient],
                                           stored: Stored) -> None:
    browser = api_as("admin", "cookie", password=ADMIN_PASSWORD)
    before = stored()
    response = browser.post("/api/sequence", json={"id": "C"}, headers={"X-CSRF-Token": "no"})
    assert_problem(response, 403, "csrf_failed")
    assert stored() == before
    assert browser.post("/api/sequence", json={"id": "C"}).status_code == 201
