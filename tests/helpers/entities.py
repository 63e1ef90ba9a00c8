"""Entities made through the API of the test client."""
from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient


def created_entities(client: FlaskClient, *entities: dict[str, Any]) -> list[dict[str, Any]]:
    """``POST /api/entity`` with ``entities`` as ``client``, asserting 201; the stored entities."""
    response = client.post("/api/entity", json={"entities": list(entities)})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["entities"]
