"""POST /api/auth/login: the token pair, the cookies, validation and failed-login throttling."""
from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from flask import Flask
from flask.testing import FlaskClient

from labapp.db import db
from labapp.model import User
from labapp.model.types import utc_now
from tests.auth.checks import (
    REFRESH_COOKIE,
    SESSION_COOKIE,
    error_fields,
    failures_of,
    parse_utc,
    problem,
    seed_failures,
    sessions_of,
    set_cookies,
)
from tests.conftest import PASSWORD, bearer_header, run_init

LIMIT = 10  # LOGIN_MAX_FAILURES of the test application (the default)
WINDOW = timedelta(seconds=300)  # LOGIN_WINDOW_SECONDS (the default)


def post_login(client: FlaskClient, username: str, password: str = PASSWORD, **extra):
    return client.post("/api/auth/login",
                       json={"username": username, "password": password, **extra})


def test_login_answers_a_bearer_token_pair(client: FlaskClient, alice: str) -> None:
    response = post_login(client, alice)

    assert response.status_code == 200
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"accessToken", "refreshToken", "expiresIn", "tokenType"}
    assert body["expiresIn"] == 1200
    assert body["tokenType"] == "Bearer"
    assert body["accessToken"] != body["refreshToken"]
    me = client.get("/api/auth/user", headers=bearer_header(body["accessToken"])).get_json()
    assert me["contextUser"]["name"] == alice
    assert me["method"] == "bearer"


def test_login_sets_httponly_lax_session_and_refresh_cookies(client: FlaskClient,
                                                             alice: str) -> None:
    response = post_login(client, alice)

    cookies = set_cookies(response)
    session_value, session_attributes = cookies[SESSION_COOKIE]
    refresh_value, refresh_attributes = cookies[REFRESH_COOKIE]
    for attributes in (session_attributes, refresh_attributes):
        assert "httponly" in attributes
        assert attributes["samesite"] == "Lax"
        # Without keepAlive they are browser-session cookies.
        assert "max-age" not in attributes and "expires" not in attributes
    assert session_attributes["path"] == "/"
    assert refresh_attributes["path"] == "/api/auth"
    assert refresh_value == response.get_json()["refreshToken"]
    assert session_value and session_value != response.get_json()["accessToken"]
    # The cookie alone authenticates the browser.
    assert client.get("/api/auth/user").get_json()["method"] == "cookie"


def test_login_without_keep_alive_lasts_twelve_hours(app: Flask, client: FlaskClient,
                                                     alice: str) -> None:
    post_login(client, alice)

    [session] = sessions_of(app, alice)
    assert session.keep_alive is False
    assert session.expires_utc - session.created_utc == timedelta(hours=12)


def test_keep_alive_gives_persistent_cookies_and_a_thirty_day_session(
        app: Flask, client: FlaskClient, alice: str) -> None:
    response = post_login(client, alice, keepAlive=True)

    assert response.status_code == 200
    thirty_days = str(30 * 24 * 3600)
    cookies = set_cookies(response)
    assert cookies[SESSION_COOKIE][1]["max-age"] == thirty_days
    assert cookies[REFRESH_COOKIE][1]["max-age"] == thirty_days
    assert response.get_json()["expiresIn"] == 1200  # access tokens stay short-lived
    [session] = sessions_of(app, alice)
    assert session.keep_alive is True
    assert session.expires_utc - session.created_utc == timedelta(days=30)


def test_login_records_the_last_login_time(app: Flask, client: FlaskClient,
                                           alice: str) -> None:
    before = utc_now()
    token = post_login(client, alice).get_json()["accessToken"]

    with app.app_context():
        last_login = db.session.get(User, alice).last_login_utc
    assert last_login is not None and before <= last_login <= utc_now()
    me = client.get("/api/auth/user", headers=bearer_header(token)).get_json()
    shown = parse_utc(me["currentUser"]["lastLoginUtc"])
    assert abs(shown - last_login) < timedelta(milliseconds=1)


def test_wrong_password_and_unknown_user_get_identical_answers(client: FlaskClient,
                                                               alice: str) -> None:
    wrong_password = post_login(client, alice, "not the password")
    unknown_user = post_login(client, "nobody", PASSWORD)

    assert problem(wrong_password, 401, "invalid_credentials") == \
        problem(unknown_user, 401, "invalid_credentials")
    assert wrong_password.headers["WWW-Authenticate"] == \
        unknown_user.headers["WWW-Authenticate"]
    assert SESSION_COOKIE not in set_cookies(wrong_password)


def test_a_deactivated_user_cannot_log_in(client: FlaskClient, alice: str,
                                          deactivate: Callable[[str], None]) -> None:
    deactivate(alice)

    body = problem(post_login(client, alice), 401, "invalid_credentials")
    # Same answer as a wrong password: deactivation is not revealed either.
    assert body == problem(post_login(client, alice, "wrong password!"), 401,
                           "invalid_credentials")


def test_a_failed_login_opens_no_session(app: Flask, client: FlaskClient, alice: str) -> None:
    post_login(client, alice, "wrong password!")

    assert sessions_of(app, alice) == []
    assert failures_of(app, alice) == 1


@pytest.mark.parametrize("payload, fields", [
    ({}, {"username", "password"}),
    ({"username": "alice"}, {"password"}),
    ({"password": PASSWORD}, {"username"}),
    ({"username": 42, "password": PASSWORD}, {"username"}),
    ({"username": "alice", "password": ["x"]}, {"password"}),
    ({"username": None, "password": PASSWORD}, {"username"}),
    ({"username": "", "password": PASSWORD}, {"username"}),
    ({"username": "u" * 256, "password": PASSWORD}, {"username"}),
    ({"username": "alice", "password": ""}, {"password"}),
    ({"username": "alice", "password": PASSWORD, "keepAlive": "sometimes"}, {"keepAlive"}),
    ({"username": "alice", "password": PASSWORD, "remember": True}, {"remember"}),
])
def test_invalid_login_bodies_are_400_naming_the_fields(client: FlaskClient, alice: str,
                                                        payload: dict, fields: set) -> None:
    body = problem(client.post("/api/auth/login", json=payload), 400, "validation_failed")

    assert error_fields(body) == fields
    assert all(error["message"] for error in body["errors"])


def test_a_long_unknown_username_is_just_invalid(app: Flask, client: FlaskClient) -> None:
    problem(post_login(client, "u" * 255, "wrong password!"), 401, "invalid_credentials")

    assert failures_of(app, "u" * 255) == 1


def test_logging_in_again_needs_no_csrf_token(client: FlaskClient, alice: str) -> None:
    # A script keeping cookies (requests.Session) logs in again when its token expires:
    # the credentials in the body are the proof, so the old cookie must not demand CSRF.
    first = post_login(client, alice).get_json()

    second = post_login(client, alice)

    assert second.status_code == 200
    assert second.get_json()["refreshToken"] != first["refreshToken"]


def test_a_json_array_is_not_a_login_body(client: FlaskClient) -> None:
    problem(client.post("/api/auth/login", json=["alice", PASSWORD]), 400, "validation_failed")


def test_a_login_body_that_is_not_json_is_415(client: FlaskClient, alice: str) -> None:
    form = client.post("/api/auth/login", data={"username": alice, "password": PASSWORD})
    problem(form, 415, "unsupported_media_type")
    bare = client.post("/api/auth/login", data='{"username": "alice", "password": "x"}')
    problem(bare, 415, "unsupported_media_type")


def test_malformed_json_is_400_invalid_json(client: FlaskClient) -> None:
    response = client.post("/api/auth/login", data='{"username": "alice", "password": ',
                           content_type="application/json")

    problem(response, 400, "invalid_json")


def test_after_too_many_failures_even_the_right_password_is_429(app: Flask,
                                                                client: FlaskClient,
                                                                alice: str) -> None:
    for _ in range(LIMIT):
        problem(post_login(client, alice, "wrong password!"), 401, "invalid_credentials")

    throttled = post_login(client, alice)  # the right password

    problem(throttled, 429, "too_many_requests")
    assert 0 < int(throttled.headers["Retry-After"]) <= WINDOW.total_seconds() + 1
    assert SESSION_COOKIE not in set_cookies(throttled)
    assert sessions_of(app, alice) == []


def test_throttling_does_not_reveal_whether_a_username_exists(app: Flask, client: FlaskClient,
                                                              alice: str) -> None:
    seed_failures(app, LIMIT - 1, username=alice)
    seed_failures(app, LIMIT - 1, username="nobody")
    # The last failure before the limit is recorded for unknown usernames too.
    assert problem(post_login(client, alice, "wrong password!"), 401, "invalid_credentials") \
        == problem(post_login(client, "nobody", "wrong password!"), 401, "invalid_credentials")

    known = post_login(client, alice, "wrong password!")
    unknown = post_login(client, "nobody", "wrong password!")

    assert problem(known, 429, "too_many_requests") == \
        problem(unknown, 429, "too_many_requests")
    assert known.headers["Retry-After"] == unknown.headers["Retry-After"]


def test_failures_older_than_the_window_no_longer_count(app: Flask, client: FlaskClient,
                                                        alice: str) -> None:
    seed_failures(app, LIMIT, username=alice, age=WINDOW + timedelta(seconds=5))

    assert post_login(client, alice).status_code == 200


def test_retry_after_says_when_the_oldest_failure_leaves_the_window(
        app: Flask, client: FlaskClient, alice: str) -> None:
    seed_failures(app, LIMIT, username=alice, age=WINDOW - timedelta(seconds=30))

    throttled = post_login(client, alice)

    problem(throttled, 429, "too_many_requests")
    assert 29 <= int(throttled.headers["Retry-After"]) <= 31


def test_one_failure_below_the_limit_still_lets_the_right_password_in(
        app: Flask, client: FlaskClient, alice: str) -> None:
    seed_failures(app, LIMIT - 1, username=alice)

    assert post_login(client, alice).status_code == 200
    # A successful login forgets the username's failures.
    assert failures_of(app, alice) == 0


def test_a_throttled_attempt_is_not_recorded_as_a_failure(app: Flask, client: FlaskClient,
                                                          alice: str) -> None:
    seed_failures(app, LIMIT, username=alice)

    problem(post_login(client, alice, "wrong password!"), 429, "too_many_requests")

    assert failures_of(app, alice) == LIMIT


def test_the_limit_and_window_are_settings(fresh_app: Callable[..., Flask]) -> None:
    small = fresh_app(LOGIN_MAX_FAILURES=2, LOGIN_WINDOW_SECONDS=60)
    run_init(small)
    client = small.test_client()
    for _ in range(2):
        problem(post_login(client, "admin", "wrong password!"), 401, "invalid_credentials")

    throttled = post_login(client, "admin", "wrong password!")
    problem(throttled, 429, "too_many_requests")
    assert 0 < int(throttled.headers["Retry-After"]) <= 61
