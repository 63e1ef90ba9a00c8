"""Bad check-in and check-out bodies: 400 or 404 naming the item, and nothing changed."""
from __future__ import annotations

import pytest
from flask import Flask

from labapp.storage.schemas import StoredItemSchema
from tests.conftest import ApiClient
from tests.storage.conftest import body_of, make_items, make_locations, storage_snapshot

BAD_BODIES = [
    ({"eClass": "Sample", "id": "x"}, None),
    ([], None),
    (["SAM1"], "[0]._item"),
    ([{"id": "SAM1"}], "[0].eClass"),
    ([{"eClass": "Sample"}], "[0].id"),
    ([{"eClass": "Nope", "id": "x"}], "[0].eClass"),
    ([{"eClass": "Experiment", "id": "x"}], "[0].eClass"),
    ([{"eClass": "Location", "id": "x"}], "[0].eClass"),
    ([{"eClass": "Sample", "id": "a"}, {"eClass": "Sample", "id": "a"}], "[1].id"),
    ([{"eClass": "Sample", "id": "a", "shelf": 1}], "[0].shelf"),
    ([{"eClass": "Sample", "id": "a", "position": 7}], "[0].position"),
]


@pytest.mark.parametrize(("body", "field"), BAD_BODIES)
@pytest.mark.parametrize("operation", ["checkin", "checkout"])
def test_bad_bodies_are_400(app: Flask, admin: ApiClient, body, field, operation) -> None:
    box, = make_locations(admin, {"name": "Box", "rows": 2, "columns": 2})
    url = (f"/api/storage/location/{box['id']}/checkin" if operation == "checkin"
           else "/api/storage/location/checkout")
    before = storage_snapshot(app)
    problem = body_of(admin.post(url, json=body), 400)
    assert problem["code"] == "invalid_storage_item"
    if field is not None:
        assert problem["errors"][0]["field"] == field
    assert storage_snapshot(app) == before


def test_unknown_item_is_404_with_its_index(app: Flask, admin: ApiClient) -> None:
    box, = make_locations(admin, {"name": "Box"})
    sample, = make_items(admin, "Sample", 1)
    plate, = make_items(admin, "Plate", 1)
    before = storage_snapshot(app)
    for items in ([{"eClass": "Sample", "id": sample}, {"eClass": "Sample", "id": "NOPE"}],
                  [{"eClass": "Sample", "id": sample}, {"eClass": "Sample", "id": plate}]):
        problem = body_of(admin.post(f"/api/storage/location/{box['id']}/checkin",
                                     json=items), 404)
        assert problem["detail"].startswith("[1]")
    assert storage_snapshot(app) == before


def test_not_json_is_415(admin: ApiClient) -> None:
    box, = make_locations(admin, {"name": "Box"})
    response = admin.post(f"/api/storage/location/{box['id']}/checkin", data="x",
                          content_type="text/plain")
    assert response.status_code == 415
    assert admin.post(f"/api/storage/location/{box['id']}/checkin", data="[",
                      content_type="application/json").status_code == 400


@pytest.mark.parametrize(("body", "field"), [
    (body, field) for body, field in BAD_BODIES
    if isinstance(body, list) and len(body) == 1 and isinstance(body[0], dict)])
def test_the_documented_item_schema_is_the_check(app: Flask, body, field) -> None:
    """What the endpoint refuses, the schema the OpenAPI document shows refuses too, naming
    the same field: the schema is the one statement of an item."""
    with app.app_context():
        errors = StoredItemSchema().validate(body[0])
    assert field.removeprefix("[0].") in errors


def test_class_names_are_case_insensitive(admin: ApiClient) -> None:
    box, = make_locations(admin, {"name": "Box"})
    sample, = make_items(admin, "Sample", 1)
    answer = body_of(admin.post(f"/api/storage/location/{box['id']}/checkin",
                                json=[{"eClass": "sample", "id": sample}]), 200)
    assert answer["stored"] == 1
