"""Factories of the storage tests: an administrator's client, locations and items made
through the API, and the snapshot a refused request must leave alone."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select
from werkzeug.test import TestResponse

from labapp.db import db
from labapp.model import AuditEvent, Entity, EntityEvent, Plate, Sample, StorageLogEntry
from tests.conftest import ApiClient

# The entity tests' factories: the administrator, departments, members and grants.
from tests.entities.conftest import admin, department, grant, member  # noqa: F401
from tests.helpers.pages import page_login


@pytest.fixture
def alice(make_user: Callable[..., str], api_as: Callable[..., ApiClient]) -> ApiClient:
    """The member alice through the API."""
    make_user("alice")
    return api_as("alice")


@pytest.fixture
def browser(client: FlaskClient, alice: ApiClient) -> FlaskClient:
    """A client logged in as alice through the login form, as the pages are used."""
    assert page_login(client, "alice").status_code == 303
    return client


def body_of(response: TestResponse, status: int) -> Any:
    """The JSON body of ``response``, asserting its status first."""
    assert response.status_code == status, response.get_data(as_text=True)
    return response.get_json()


def make_locations(api: ApiClient, *items: dict[str, Any]) -> list[dict[str, Any]]:
    """``POST /api/storage/location``; asserts 201 and returns the locations."""
    return body_of(api.post("/api/storage/location", json=list(items)), 201)


def make_items(api: ApiClient, eclass: str, count: int, **fields: Any) -> list[str]:
    """``count`` new entities of ``eclass`` made through the entity batch; their ids."""
    items = [{"eClass": eclass, **fields} for _ in range(count)]
    saved = body_of(api.post("/api/entity", json={"entities": items}), 201)["entities"]
    return [entity["id"] for entity in saved]


def check_in(api: ApiClient, location_id: str, items: list[dict[str, Any]],
             status: int = 200) -> Any:
    return body_of(api.post(f"/api/storage/location/{location_id}/checkin", json=items),
                   status)


def refs(eclass: str, ids: list[str]) -> list[dict[str, str]]:
    return [{"eClass": eclass, "id": item_id} for item_id in ids]


def storage_snapshot(app: Flask) -> dict[str, Any]:
    """Where every item is, every version, and how many log, audit and event rows exist."""
    with app.app_context():
        session = db.session
        return {
            "samples": sorted(session.execute(select(Sample.id, Sample.location_id,
                                                     Sample.position)).all()),
            "plates": sorted(session.execute(select(Plate.id, Plate.location_id,
                                                    Plate.position)).all()),
            "versions": sorted(session.execute(select(Entity.id, Entity.version)).all()),
            "counts": [session.scalar(select(func.count()).select_from(model))
                       for model in (StorageLogEntry, AuditEvent, EntityEvent)],
        }
