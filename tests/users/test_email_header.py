"""A user's e-mail address heads the alert e-mails sent to them (``To``), so it refuses
control characters wherever it is set (issue 32 §1): ``PUT /api/user``, the entity batch
(creating and updating a ``User``) and the users page — 400, nothing changed."""
from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from labapp.db import db
from labapp.model import User
from tests.conftest import ADMIN_PASSWORD, ApiClient
from tests.entities.conftest import body_of
from tests.helpers.pages import page_login, post_form

BAD = ["alice@lab.example.org\r\nBcc: mallory@evil.example", "alice@lab.example.org\n",
       "tab\t@lab.example.org", "next-line\u0085@lab.example.org"]


def _email(app: Flask, user_id: str) -> str | None:
    with app.app_context():
        user = db.session.get(User, user_id)
        return user.email if user else None


@pytest.mark.parametrize("address", BAD)
def test_put_user_refuses_it(app: Flask, alice: ApiClient, address: str) -> None:
    response = alice.put("/api/user", json={"email": address})
    assert response.status_code == 400
    assert response.get_json()["errors"][0]["field"] == "email"
    assert _email(app, "alice") is None
    assert body_of(alice.put("/api/user", json={"email": "alice@lab.example.org"}),
                   200)["email"] == "alice@lab.example.org"


@pytest.mark.parametrize("address", BAD)
def test_the_entity_batch_refuses_it(app: Flask, admin: ApiClient, alice: ApiClient,
                                     address: str) -> None:
    created = admin.post("/api/entity", json={"entities": [
        {"eClass": "User", "id": "mallory", "password": "a-long-enough-password",
         "email": address}]})
    assert created.status_code == 400, created.get_data(as_text=True)
    assert created.get_json()["errors"][0]["field"] == "entities.0.email"
    assert _email(app, "mallory") is None
    updated = admin.post("/api/entity", json={"entities": [
        {"eClass": "User", "id": "alice", "email": address}]})
    assert updated.status_code == 400, updated.get_data(as_text=True)
    assert _email(app, "alice") is None


def test_the_users_page_refuses_it(app: Flask, alice: ApiClient) -> None:
    page = app.test_client()
    page_login(page, "admin", password=ADMIN_PASSWORD)
    response = post_form(page, "/admin/users/alice", {
        "name": "Alice", "email": BAD[0], "initials": "", "department": "DEP00001",
        "active": "true"})
    assert response.status_code == 400
    assert _email(app, "alice") is None


def test_a_plain_address_is_kept(app: Flask, admin: ApiClient, alice: Any) -> None:
    body_of(admin.post("/api/entity", json={"entities": [
        {"eClass": "User", "id": "alice", "email": "Alice.Adams+lab@lab.example.org"}]}), 200)
    assert _email(app, "alice") == "Alice.Adams+lab@lab.example.org"
