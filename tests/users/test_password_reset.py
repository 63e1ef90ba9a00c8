"""An administrator's password reset (issue 9 §5): the account may be compromised, so the reset
ends every login of the user and revokes all their personal access tokens, through the API
(``PUT /api/user``) and the user's admin page, which says so."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from labapp.db import db
from labapp.model import PersonalAccessToken
from tests.conftest import ADMIN_PASSWORD, PASSWORD, ApiClient, basic_header, bearer_header, login
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of
from tests.helpers.pages import page_login, post_form

NEW_PASSWORD = "a-brand-new-password"


def new_pat(app: Flask, username: str, password: str = PASSWORD, name: str = "script") -> str:
    """A personal access token of ``username``, created as its owner would."""
    client = app.test_client(use_cookies=False)
    token = login(client, username, password)["accessToken"]
    created = client.post("/api/user/pat", json={"name": name}, headers=bearer_header(token))
    assert created.status_code == 201, created.get_json()
    return created.get_json()["value"]


def pat_works(app: Flask, username: str, value: str) -> bool:
    response = app.test_client(use_cookies=False).get("/api/user",
                                                      headers=basic_header(username, value))
    return response.status_code == 200


def revoked_tokens(app: Flask, username: str) -> list[bool]:
    with app.app_context():
        return [token.revoked_utc is not None for token in db.session.scalars(
            select(PersonalAccessToken).where(PersonalAccessToken.user_id == username))]


def put(api: ApiClient, **body: Any) -> Any:
    return body_of(api.put("/api/user", json=body), 200)


def test_a_reset_through_the_api_revokes_the_users_pats(app: Flask, admin: ApiClient,
                                                        make_user: Callable) -> None:
    make_user("alice")
    values = [new_pat(app, "alice", name=name) for name in ("export", "instrument")]
    assert all(pat_works(app, "alice", value) for value in values)

    put(admin, userID="alice", password=NEW_PASSWORD)

    for value in values:
        assert not pat_works(app, "alice", value)
    assert revoked_tokens(app, "alice") == [True, True]
    # A token she creates after the reset works.
    assert pat_works(app, "alice", new_pat(app, "alice", NEW_PASSWORD))


def test_a_reset_leaves_other_users_pats_alone(app: Flask, admin: ApiClient,
                                               make_user: Callable) -> None:
    make_user("alice")
    make_user("bob")
    bobs = new_pat(app, "bob")

    put(admin, userID="alice", password=NEW_PASSWORD)

    assert pat_works(app, "bob", bobs)


def test_an_admin_setting_their_own_password_keeps_their_pats(app: Flask,
                                                              admin: ApiClient) -> None:
    # Their own password through PUT /api/user is a change, not a reset
    # (docs/decisions/password-change-and-reset.md).
    value = new_pat(app, "admin", ADMIN_PASSWORD)

    put(admin, password=NEW_PASSWORD)

    assert pat_works(app, "admin", value)


def test_a_refused_reset_revokes_nothing(app: Flask, admin: ApiClient,
                                         make_user: Callable) -> None:
    make_user("alice")
    value = new_pat(app, "alice")

    assert_problem(admin.put("/api/user", json={"userID": "alice", "password": "short"}), 400,
                   "invalid_input", errors=True)

    assert pat_works(app, "alice", value)


def test_a_basic_password_remembered_before_the_reset_stops_working(
        app: Flask, admin: ApiClient, make_user: Callable) -> None:
    make_user("alice")
    script = app.test_client(use_cookies=False)
    assert script.get("/api/user", headers=basic_header("alice", PASSWORD)).status_code == 200

    put(admin, userID="alice", password=NEW_PASSWORD)

    assert_problem(script.get("/api/user", headers=basic_header("alice", PASSWORD)), 401,
                   "invalid_credentials")


def admin_page(client: FlaskClient) -> FlaskClient:
    assert page_login(client, "admin", ADMIN_PASSWORD).status_code == 303
    return client


def test_the_reset_page_revokes_and_says_how_many(app: Flask, client: FlaskClient,
                                                  make_user: Callable) -> None:
    make_user("alice")
    values = [new_pat(app, "alice", name=name) for name in ("export", "instrument")]
    page = admin_page(client)
    form = page.get("/admin/users/alice").get_data(as_text=True)
    assert "their personal access tokens are revoked" in form

    response = post_form(page, "/admin/users/alice/password", {"password": NEW_PASSWORD})

    assert response.status_code == 303
    notice = page.get("/admin/users/alice").get_data(as_text=True)
    assert ("The password of alice was reset; all their logins have ended and their 2 "
            "personal access tokens were revoked.") in notice
    assert not any(pat_works(app, "alice", value) for value in values)


def test_the_reset_page_says_when_there_was_no_token(client: FlaskClient,
                                                     make_user: Callable) -> None:
    make_user("alice")
    page = admin_page(client)

    post_form(page, "/admin/users/alice/password", {"password": NEW_PASSWORD})

    assert "they had no personal access tokens" in page.get("/admin/users/alice").get_data(
        as_text=True)
