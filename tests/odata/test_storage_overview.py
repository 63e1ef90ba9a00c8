"""The ``StorageOverview`` feed says what ``/api/storage/location`` says (issue 19 §5):
``stored`` counts plates and the samples not on a plate, and ``available`` is the limit
(capacity, or rows × columns of a grid without one, the smaller when both are set) minus
``stored``, never below 0, null when unlimited — for every kind of location, on both
databases."""
from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import update

from labapp.db import transaction
from labapp.model import Location
from tests.conftest import ApiClient
from tests.entities.conftest import save
from tests.odata.conftest import page
from tests.storage.conftest import body_of, check_in, make_items, make_locations, refs

COMPARED = ("capacity", "rows", "columns", "stored", "available")


def feed_row(api: ApiClient, location_id: str) -> dict[str, Any]:
    """The location's row of the OData feed."""
    rows = page(api, "/odata/StorageOverview", **{"$filter": f"id eq '{location_id}'"})["value"]
    assert len(rows) == 1
    return rows[0]


def assert_feed_agrees(api: ApiClient, location_id: str) -> dict[str, Any]:
    """The feed's numbers of a location are the API's; answers them."""
    answer = body_of(api.get(f"/api/storage/location/{location_id}"), 200)
    expected = {key: answer[key] for key in COMPARED}
    assert {key: feed_row(api, location_id)[key] for key in COMPARED} == expected
    return expected


@pytest.mark.parametrize(("fields", "samples", "available"), [
    pytest.param({"capacity": 5}, 2, 3, id="capacity only"),
    pytest.param({"rows": 9, "columns": 9}, 32, 49, id="grid only"),
    pytest.param({"capacity": 4, "rows": 3, "columns": 3}, 1, 3, id="capacity below grid"),
    pytest.param({"capacity": 100, "rows": 2, "columns": 3}, 1, 5, id="grid below capacity"),
    pytest.param({}, 3, None, id="neither"),
    pytest.param({"capacity": 2}, 2, 0, id="full"),
    pytest.param({"rows": 1, "columns": 2}, 0, 2, id="empty grid"),
])
def test_the_feed_limits_a_location_as_the_api_does(admin: ApiClient, fields: dict[str, Any],
                                                    samples: int,
                                                    available: int | None) -> None:
    box, = make_locations(admin, {"name": "Box", **fields})
    if samples:
        check_in(admin, box["id"], refs("Sample", make_items(admin, "Sample", samples)))
    numbers = assert_feed_agrees(admin, box["id"])
    assert (numbers["stored"], numbers["available"]) == (samples, available)


def test_an_over_full_location_has_nothing_available_in_both(app: Flask,
                                                             admin: ApiClient) -> None:
    box, = make_locations(admin, {"name": "Shelf", "capacity": 3})
    check_in(admin, box["id"], refs("Sample", make_items(admin, "Sample", 3)))
    with app.app_context(), transaction() as session:  # data from before the limit was kept
        session.execute(update(Location).where(Location.id == box["id"]).values(capacity=1))
    assert assert_feed_agrees(admin, box["id"])["available"] == 0


def test_a_sample_on_a_plate_is_counted_as_the_plate_in_both(admin: ApiClient) -> None:
    box, = make_locations(admin, {"name": "Rack", "capacity": 10})
    plate, = make_items(admin, "Plate", 1)
    sample, = make_items(admin, "Sample", 1)
    check_in(admin, box["id"], [*refs("Plate", [plate]), *refs("Sample", [sample])])
    save(admin, {"eClass": "Sample", "id": sample, "plateID": plate}, status=200)
    numbers = assert_feed_agrees(admin, box["id"])
    assert (numbers["stored"], numbers["available"]) == (1, 9)
