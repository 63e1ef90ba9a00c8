"""Bad input to ``POST /api/entity``: a clear 4xx problem naming the item, and the database
exactly as before — one transaction per batch (decisions §2, §6)."""
from __future__ import annotations

import pytest
from flask import Flask

from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import add_sequence, fetch, save, snapshot


@pytest.fixture
def stored(app: Flask, admin: ApiClient) -> None:
    """BAD-1 (version 2, barcode BC-BAD-1, Completed) and a custom sequence for draws."""
    save(admin, {"eClass": "Sample", "id": "BAD-1", "barcode": "BC-BAD-1",
                 "status": "Completed"})
    save(admin, {"eClass": "Sample", "id": "BAD-1", "name": "second"}, status=200)
    add_sequence(app, "Lot", "LOT-")


# Two good items (a create that draws from sequences, and an update), then the bad one.
GOOD = [{"eClass": "Sample", "id": "#good!Lot", "name": "!Lot", "notes": [{"content": "n"}],
         "attributes.k": 1},
        {"eClass": "Sample", "id": "BAD-1", "description": "changed", "parentID": "#good"}]

BAD_ITEMS = [
    # (third item, status, code, field of errors[0] or None)
    ({"eClass": "Gadget"}, 400, "invalid_entity", "entities.2.eClass"),
    ({"name": "no class"}, 400, "invalid_entity", "entities.2.eClass"),
    ({"eClass": 5}, 400, "invalid_entity", "entities.2.eClass"),
    ("Sample", 400, "validation_failed", "entities.2"),
    ({"eClass": "Sample", "colour": "red"}, 400, "invalid_entity", "entities.2.colour"),
    ({"eClass": "Sample", "amount": "two"}, 400, "invalid_entity", "entities.2.amount"),
    ({"eClass": "Sample", "amount": True}, 400, "invalid_entity", "entities.2.amount"),
    ({"eClass": "Plate", "rows": 1.5}, 400, "invalid_entity", "entities.2.rows"),
    ({"eClass": "Sample", "name": 7}, 400, "invalid_entity", "entities.2.name"),
    ({"eClass": "Sample", "name": "n" * 256}, 400, "invalid_entity", "entities.2.name"),
    ({"eClass": "Sample", "dateTaken": "2026-02-30"}, 400, "invalid_entity",
     "entities.2.dateTaken"),
    ({"eClass": "Fermentation", "startTime": "2026-03-01T10:00:00"}, 400, "invalid_entity",
     "entities.2.startTime"),
    ({"eClass": "Fermentation", "endTime": "9999-12-31T23:59:59-05:00"}, 400,
     "invalid_entity", "entities.2.endTime"),
    ({"eClass": "Sample", "expiryDate": "9999-12-31T23:00:00-05:00"}, 400, "invalid_entity",
     "entities.2.expiryDate"),
    ({"eClass": "User", "id": "u1", "password": "long-password", "isActive": "yes"}, 400,
     "invalid_entity", "entities.2.isActive"),
    ({"eClass": "Request", "priority": "Whenever"}, 400, "invalid_entity",
     "entities.2.priority"),
    ({"eClass": "Location", "temperature": "cold"}, 400, "invalid_entity",
     "entities.2.temperature"),
    ({"eClass": "Sample", "attributes": ["a"]}, 400, "invalid_entity", "entities.2.attributes"),
    ({"eClass": "Sample", "attributes.": 1}, 400, "invalid_entity", "entities.2.attributes."),
    ({"eClass": "Sample", "id": 12}, 400, "invalid_notation", "entities.2.id"),
    ({"eClass": "Sample", "id": ""}, 400, "invalid_notation", "entities.2.id"),
    ({"eClass": "Sample", "id": "x" * 65}, 400, "invalid_entity", "entities.2.id"),
    ({"eClass": "Sample", "id": "BAD-1"}, 409, "duplicate_id", None),
    ({"eClass": "Sample", "name": "#good.colour"}, 400, "invalid_notation", "entities.2.name"),
    ({"eClass": "Sample", "name": "#good.description"}, 400, "invalid_notation",
     "entities.2.name"),
    ({"eClass": "Sample", "parentID": "#ghost"}, 400, "invalid_notation",
     "entities.2.parentID"),
    ({"eClass": "Sample", "parentID": "!Lot"}, 400, "invalid_notation", "entities.2.parentID"),
    ({"eClass": "Sample", "id": "!NoSuch"}, 400, "invalid_notation", "entities.2.id"),
    ({"eClass": "Sample", "barcode": "!NoSuch"}, 400, "invalid_notation",
     "entities.2.barcode"),
    ({"eClass": "Sample", "parentID": "BAD-NONE"}, 400, "invalid_entity",
     "entities.2.parentID"),
    ({"eClass": "Sample", "experimentID": "BAD-1"}, 400, "invalid_entity",
     "entities.2.experimentID"),
    ({"eClass": "Sample", "userID": "nobody"}, 400, "invalid_entity", "entities.2.userID"),
    ({"eClass": "Sample", "files": [{"name": "f", "content": "not-base64"}]}, 400,
     "invalid_entity", "entities.2.files.0.content"),
    ({"eClass": "Sample", "status": "Lost"}, 400, "invalid_entity", "entities.2.status"),
    ({"eClass": "Sample", "notes": "note"}, 400, "invalid_entity", "entities.2.notes"),
    ({"eClass": "Sample", "barcode": "BC-BAD-1"}, 409, "duplicate_barcode", None),
]


def post(api: ApiClient, items: list) -> object:
    return api.post("/api/entity", json={"entities": items})


@pytest.mark.parametrize(("bad", "status", "code", "field"), BAD_ITEMS)
def test_a_bad_third_item_rejects_the_whole_batch(app: Flask, admin: ApiClient, stored: None,
                                                  bad, status, code, field) -> None:
    before = snapshot(app)
    body = assert_problem(post(admin, [*GOOD, bad]), status, code, errors=status == 400)
    if field is not None:
        assert body["errors"][0]["field"] == field
    if code != "validation_failed":  # the body schema's own message is generic
        assert body["detail"].startswith("entities[2]"), body
    assert snapshot(app) == before
    assert fetch(admin, "Sample", "BAD-1")["description"] is None


@pytest.mark.parametrize(("bad", "status", "code"), [
    ({"eClass": "Sample", "id": "BAD-1", "name": "x", "version": 1}, 409, "stale_version"),
    ({"eClass": "Sample", "id": "BAD-1", "status": "Initial"}, 409, "invalid_transition"),
    ({"eClass": "Sample", "id": "BAD-1", "notes": [{"content": "late"}]}, 400,
     "invalid_entity"),
    ({"eClass": "Experiment", "id": "BAD-1"}, 400, "invalid_entity"),
    ({"eClass": "Sample", "id": "BAD-1", "status": "Lost"}, 400, "invalid_entity"),
    ({"eClass": "Sample", "id": "BAD-1", "amount": "x"}, 400, "invalid_entity"),
])
def test_a_bad_update_after_good_items_rejects_the_batch(app: Flask, admin: ApiClient,
                                                         stored: None, bad: dict, status: int,
                                                         code: str) -> None:
    items = [GOOD[0], {"eClass": "Sample", "id": "BAD-2", "parentID": "#good"}, bad]
    before = snapshot(app)
    body = assert_problem(post(admin, items), status, code, errors=status == 400)
    assert body["detail"].startswith("entities[2]")
    assert snapshot(app) == before
    assert fetch(admin, "Sample", "BAD-1")["version"] == 2


def test_a_barcode_given_twice_in_a_batch_is_400(app: Flask, admin: ApiClient,
                                                 stored: None) -> None:
    before = snapshot(app)
    body = assert_problem(post(admin, [{**GOOD[0], "barcode": "BC-NEW"}, GOOD[1],
                                       {"eClass": "Sample", "barcode": "BC-NEW"}]),
                          400, "invalid_entity", errors=True)
    assert body["errors"][0]["field"] == "entities.2.barcode"
    assert "entities[0]" in body["errors"][0]["message"]
    assert snapshot(app) == before


def test_a_generated_id_that_is_taken_is_409(app: Flask, admin: ApiClient) -> None:
    (probe,) = save(admin, {"eClass": "Sample"})
    number = int(probe["id"][3:]) + 1
    save(admin, {"eClass": "Sample", "id": f"SAM{number:05d}"})  # the sequence is behind
    before = snapshot(app)
    body = assert_problem(post(admin, [{"eClass": "Sample", "id": "BAD-X"},
                                       {"eClass": "Sample"}]), 409, "duplicate_id")
    assert body["detail"].startswith("entities[1]") and f"SAM{number:05d}" in body["detail"]
    assert snapshot(app) == before


def test_the_same_id_twice_in_a_batch_is_409(app: Flask, admin: ApiClient) -> None:
    before = snapshot(app)
    body = assert_problem(post(admin, [{"eClass": "Sample", "id": "BAD-T"},
                                       {"eClass": "Experiment", "id": "BAD-T"}]),
                          409, "duplicate_id")
    assert body["detail"].startswith("entities[1].id"), body
    assert snapshot(app) == before


@pytest.mark.parametrize(("payload", "code"), [
    ({}, "validation_failed"),
    ({"entities": {}}, "validation_failed"),
    ({"entities": "Sample"}, "validation_failed"),
    ({"entities": [{"eClass": "Sample"}], "extra": 1}, "validation_failed"),
    ({"entities": []}, "invalid_entity"),
    ([{"eClass": "Sample"}], "validation_failed"),
])
def test_a_malformed_body_is_400(app: Flask, admin: ApiClient, payload, code: str) -> None:
    before = snapshot(app)
    assert_problem(admin.post("/api/entity", json=payload), 400, code, errors=True)
    assert snapshot(app) == before


def test_a_body_that_does_not_parse_is_400(admin: ApiClient) -> None:
    response = admin.post("/api/entity", data='{"entities": [', content_type="application/json")
    assert_problem(response, 400, "invalid_json")


def test_a_body_that_is_not_json_is_415(admin: ApiClient) -> None:
    response = admin.post("/api/entity", data='{"entities": []}', content_type="text/plain")
    assert_problem(response, 415, "unsupported_media_type")


def test_nul_characters_are_400(app: Flask, admin: ApiClient) -> None:
    before = snapshot(app)
    response = admin.post("/api/entity", json={"entities": [{"eClass": "Sample",
                                                             "name": "a\u0000b"}]})
    assert_problem(response, 400, "invalid_value")
    assert snapshot(app) == before


def test_too_many_items_are_400(app: Flask, admin: ApiClient) -> None:
    before = snapshot(app)
    response = post(admin, [{"eClass": "Sample"}] * 10_001)
    assert_problem(response, 400, "invalid_entity")
    assert snapshot(app) == before
