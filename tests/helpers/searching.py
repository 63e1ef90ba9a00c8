"""Entities created and searched for through the test client, as the administrator; rows
inserted behind the ORM and the search queue they leave."""
from __future__ import annotations

from datetime import UTC, datetime

from flask import Flask
from sqlalchemy import select

from labapp.db import db
from labapp.model import SearchQueue
from tests.helpers.processes import ADMIN


def client_post(app: Flask, name: str) -> None:
    response = app.test_client().post("/api/entity", headers=ADMIN, json={
        "entities": [{"eClass": "Sample", "name": name}]})
    assert response.status_code == 201, response.get_json()


def client_found(app: Flask, term: str) -> set[str]:
    response = app.test_client().get(f"/api/search/fulltext/{term}?$top=500", headers=ADMIN)
    assert response.status_code == 200, response.get_json()
    return {item["name"] for item in response.get_json()["data"]}


def queued(app: Flask) -> list[str]:
    """The entity ids waiting in the search queue, oldest first."""
    with app.app_context():
        return list(db.session.scalars(select(SearchQueue.entity_id).order_by(SearchQueue.id)))


def entity_row(entity_id: str) -> dict[str, object]:
    """A Sample row of the ``entity`` table for a Core insert (no ORM, so only the queue's
    triggers see it), created and modified by the administrator now."""
    now = datetime.now(UTC)
    return {"id": entity_id, "eclass": "Sample", "name": f"core {entity_id}",
            "status": "Initial", "type": "Other", "attributes": {}, "created_by": "admin",
            "created_utc": now, "modified_by": "admin", "modified_utc": now, "version": 1}
