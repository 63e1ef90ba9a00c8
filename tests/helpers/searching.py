"""Entities created and searched for through the test client, as the administrator."""
from __future__ import annotations

from flask import Flask

from tests.helpers.processes import ADMIN


def client_post(app: Flask, name: str) -> None:
    response = app.test_client().post("/api/entity", headers=ADMIN, json={
        "entities": [{"eClass": "Sample", "name": name}]})
    assert response.status_code == 201, response.get_json()


def client_found(app: Flask, term: str) -> set[str]:
    response = app.test_client().get(f"/api/search/fulltext/{term}?$top=500", headers=ADMIN)
    assert response.status_code == 200, response.get_json()
    return {item["name"] for item in response.get_json()["data"]}
