"""POST /api/user/password/change."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.auth.checks import error_fields, failures_of, problem, seed_failures
from tests.conftest import (
    PASSWORD,
    ApiClient,
    basic_header,
    bearer_header,
    csrf_of,
    login,
)

NEW_PASSWORD = "a brand new passphrase"
LIMIT = 10


def change(caller: ApiClient | FlaskClient, password: str = NEW_PASSWORD,
           repeat: str | None = None, current: str = PASSWORD, **kwargs):
    body = {"password": password, "repeatPassword": password if repeat is None else repeat,
            "confirmPassword": current}
    return caller.post("/api/user/password/change", json=body, **kwargs)


def can_log_in(client: FlaskClient, username: str, password: str) -> bool:
    response = client.post("/api/auth/login", json={"username": username, "password": password})
    assert response.status_code in {200, 401}, response.get_json()
    return response.status_code == 200


def test_change_replaces_the_password(bare_client: FlaskClient, api_as: Callable,
                                      alice: str) -> None:
    response = change(api_as(alice, "bearer"))

    assert response.status_code == 204
    assert response.get_data() == b""
    assert not can_log_in(bare_client, alice, PASSWORD)
    assert can_log_in(bare_client, alice, NEW_PASSWORD)


def test_change_ends_the_other_logins_but_not_the_current_one(
        bare_client: FlaskClient, alice: str) -> None:
    current = login(bare_client, alice)
    other = login(bare_client, alice)

    assert change(bare_client, headers=bearer_header(current["accessToken"])).status_code == 204

    assert bare_client.get("/api/user/pat",
                           headers=bearer_header(current["accessToken"])).status_code == 200
    refreshed = bare_client.post("/api/auth/refresh",
                                 json={"refreshToken": current["refreshToken"]})
    assert refreshed.status_code == 200
    problem(bare_client.get("/api/user/pat", headers=bearer_header(other["accessToken"])), 401,
            "invalid_token")
    problem(bare_client.post("/api/auth/refresh", json={"refreshToken": other["refreshToken"]}),
            401, "invalid_token")


def test_change_by_cookie_keeps_the_browser_logged_in(app: Flask, client: FlaskClient,
                                                      alice: str) -> None:
    elsewhere = login(app.test_client(use_cookies=False), alice)
    login(client, alice)

    response = change(client, headers={"X-CSRF-Token": csrf_of(client)})

    assert response.status_code == 204
    assert client.get("/api/auth/user").get_json()["method"] == "cookie"
    problem(client.get("/api/user/pat", headers=bearer_header(elsewhere["accessToken"])), 401,
            "invalid_token")


def test_change_by_cookie_needs_the_csrf_token(client: FlaskClient, alice: str) -> None:
    login(client, alice)

    problem(change(client), 403, "csrf_failed")

    assert can_log_in(client.application.test_client(), alice, PASSWORD)


def test_change_with_basic_ends_every_login(bare_client: FlaskClient, alice: str) -> None:
    session = login(bare_client, alice)

    response = change(bare_client, headers=basic_header(alice, PASSWORD))

    assert response.status_code == 204
    problem(bare_client.get("/api/user/pat", headers=bearer_header(session["accessToken"])),
            401, "invalid_token")


def test_personal_access_tokens_survive_a_change(api_as: Callable, alice: str) -> None:
    pat_caller = api_as(alice, "pat")

    assert change(api_as(alice, "bearer")).status_code == 204

    assert pat_caller.get("/api/user/pat").status_code == 200


@pytest.mark.parametrize("password, repeat, current, code, field", [
    (NEW_PASSWORD, NEW_PASSWORD + "!", PASSWORD, "invalid_input", "repeatPassword"),
    ("too short", "too short", PASSWORD, "invalid_input", "password"),
    (" " * 12, " " * 12, PASSWORD, "invalid_input", "password"),
    (NEW_PASSWORD, NEW_PASSWORD, "not my password", "wrong_password", "confirmPassword"),
])
def test_a_rejected_change_changes_nothing(bare_client: FlaskClient, alice: str,
                                           password: str, repeat: str, current: str, code: str,
                                           field: str) -> None:
    tokens = login(bare_client, alice)
    caller = {"headers": bearer_header(tokens["accessToken"])}

    body = problem(change(bare_client, password, repeat, current, **caller), 400, code)

    assert error_fields(body) == {field}
    assert can_log_in(bare_client, alice, PASSWORD)
    # The caller's login goes on.
    assert bare_client.get("/api/user/pat", **caller).status_code == 200


@pytest.mark.parametrize("payload, fields", [
    ({}, {"password", "repeatPassword", "confirmPassword"}),
    ({"password": NEW_PASSWORD, "repeatPassword": NEW_PASSWORD}, {"confirmPassword"}),
    ({"password": 1234567890, "repeatPassword": NEW_PASSWORD, "confirmPassword": PASSWORD},
     {"password"}),
    ({"password": NEW_PASSWORD, "repeatPassword": NEW_PASSWORD, "confirmPassword": PASSWORD,
      "username": "bob"}, {"username"}),
])
def test_invalid_change_bodies_are_400(api_as: Callable, alice: str, payload: dict,
                                       fields: set) -> None:
    caller = api_as(alice, "bearer")

    body = problem(caller.post("/api/user/password/change", json=payload), 400,
                   "validation_failed")

    assert error_fields(body) == fields


def test_a_wrong_current_password_counts_toward_throttling(app: Flask, api_as: Callable,
                                                           alice: str) -> None:
    caller = api_as(alice, "bearer")
    seed_failures(app, LIMIT - 1, username=alice)

    problem(change(caller, current="not my password"), 400, "wrong_password")
    assert failures_of(app, alice) == LIMIT

    throttled = change(caller)  # even with the right current password
    problem(throttled, 429, "too_many_requests")
    assert int(throttled.headers["Retry-After"]) > 0
    problem(app.test_client().post("/api/auth/login",
                                   json={"username": alice, "password": PASSWORD}),
            429, "too_many_requests")


def test_change_needs_authentication(bare_client: FlaskClient, alice: str) -> None:
    problem(change(bare_client), 401, "not_authenticated")

    assert can_log_in(bare_client, alice, PASSWORD)
