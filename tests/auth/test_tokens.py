"""Access tokens, refresh-token rotation and logout."""
from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from flask import Flask
from flask.testing import FlaskClient
from itsdangerous import TimestampSigner, URLSafeTimedSerializer
from sqlalchemy import update
from werkzeug.test import TestResponse

from labapp.auth.sessions import ACCESS_TOKEN_SECONDS
from labapp.model import LoginSession, RefreshToken
from labapp.model.types import utc_now
from tests.auth.checks import (
    REFRESH_COOKIE,
    SESSION_COOKIE,
    database,
    problem,
    sessions_of,
    set_cookies,
)
from tests.conftest import bearer_header, csrf_of, login

ACCESS_SALT = "labapp.access-token"


def access_token_signed(app: Flask, claims: dict[str, str], *, age: int,
                        key: str | None = None) -> str:
    """An access token as the server would have signed it ``age`` seconds ago."""

    class BackdatedSigner(TimestampSigner):
        def get_timestamp(self) -> int:
            return int(time.time()) - age

    serializer = URLSafeTimedSerializer(key or app.config["SECRET_KEY"], salt=ACCESS_SALT,
                                        signer=BackdatedSigner)
    return serializer.dumps(claims)


def who(client: FlaskClient, token: str) -> TestResponse:
    """The answer of GET /api/user/pat with this access token (200 only when it is valid)."""
    return client.get("/api/user/pat", headers=bearer_header(token))


def refresh(client: FlaskClient, token: str) -> TestResponse:
    return client.post("/api/auth/refresh", json={"refreshToken": token})


# -- access tokens ---------------------------------------------------------------------------

def test_a_bearer_token_authenticates(bare_client: FlaskClient, alice: str) -> None:
    tokens = login(bare_client, alice)

    response = bare_client.get("/api/auth/user", headers=bearer_header(tokens["accessToken"]))

    assert response.get_json()["contextUser"] == {
        "name": alice, "isAuthenticated": True, "windowsAuthentication": False}
    assert response.get_json()["method"] == "bearer"
    assert who(bare_client, tokens["accessToken"]).status_code == 200


def test_an_access_token_lives_twenty_minutes(app: Flask, bare_client: FlaskClient,
                                              alice: str) -> None:
    login(bare_client, alice)
    [session] = sessions_of(app, alice)
    claims = {"u": alice, "s": session.id}
    assert ACCESS_TOKEN_SECONDS == 20 * 60

    almost_expired = access_token_signed(app, claims, age=ACCESS_TOKEN_SECONDS - 60)
    expired = access_token_signed(app, claims, age=ACCESS_TOKEN_SECONDS + 100)

    assert who(bare_client, almost_expired).status_code == 200
    problem(who(bare_client, expired), 401, "invalid_token")


def test_an_expired_login_ends_its_tokens_and_cookie(app: Flask, client: FlaskClient,
                                                    alice: str) -> None:
    tokens = login(client, alice)
    with database(app) as session:
        session.execute(update(LoginSession).values(expires_utc=utc_now() - timedelta(seconds=1)))

    problem(who(client, tokens["accessToken"]), 401, "invalid_token")
    problem(refresh(client, tokens["refreshToken"]), 401, "invalid_token")
    assert client.get("/api/auth/user").get_json()["contextUser"]["isAuthenticated"] is False


def test_a_token_signed_with_another_key_is_rejected(app: Flask, bare_client: FlaskClient,
                                                     alice: str) -> None:
    login(bare_client, alice)
    [session] = sessions_of(app, alice)

    forged = access_token_signed(app, {"u": alice, "s": session.id}, age=0,
                                 key="somebody-elses-key")

    problem(who(bare_client, forged), 401, "invalid_token")


def test_claims_naming_another_users_session_are_rejected(app: Flask, bare_client: FlaskClient,
                                                          alice: str, bob: str) -> None:
    login(bare_client, alice)
    [session] = sessions_of(app, alice)

    mixed = access_token_signed(app, {"u": bob, "s": session.id}, age=0)

    problem(who(bare_client, mixed), 401, "invalid_token")


@pytest.mark.parametrize("token", ["garbage", "a.b.c", "", "x" * 5000])
def test_garbage_bearer_tokens_are_401(bare_client: FlaskClient, token: str) -> None:
    response = bare_client.get("/api/auth/user", headers={"Authorization": f"Bearer {token}"})

    problem(response, 401, "invalid_token")


def test_the_session_cookie_is_not_an_access_token(client: FlaskClient, alice: str) -> None:
    response = client.post("/api/auth/login", json={"username": alice,
                                                    "password": "correct horse battery"})
    cookie_value = set_cookies(response)[SESSION_COOKIE][0]

    problem(who(client, cookie_value), 401, "invalid_token")


def test_a_bad_bearer_token_is_401_even_on_public_endpoints(bare_client: FlaskClient) -> None:
    response = bare_client.get("/api/auth/user", headers=bearer_header("garbage"))

    problem(response, 401, "invalid_token")


# -- refresh ---------------------------------------------------------------------------------

def test_refresh_rotates_the_pair(app: Flask, bare_client: FlaskClient, alice: str) -> None:
    first = login(bare_client, alice)

    response = refresh(bare_client, first["refreshToken"])

    assert response.status_code == 200
    second = response.get_json()
    assert set(second) == {"accessToken", "refreshToken", "expiresIn", "tokenType"}
    assert second["expiresIn"] == 1200 and second["tokenType"] == "Bearer"
    assert second["refreshToken"] != first["refreshToken"]
    assert who(bare_client, second["accessToken"]).status_code == 200
    # The same login goes on: no second session.
    assert len(sessions_of(app, alice)) == 1
    assert refresh(bare_client, second["refreshToken"]).status_code == 200


def test_refresh_sets_the_new_refresh_cookie(client: FlaskClient, alice: str) -> None:
    first = login(client, alice)

    response = client.post("/api/auth/refresh", json={"refreshToken": first["refreshToken"]},
                           headers={"X-CSRF-Token": csrf_of(client)})

    cookies = set_cookies(response)
    assert cookies[REFRESH_COOKIE][0] == response.get_json()["refreshToken"]
    assert cookies[REFRESH_COOKIE][1]["path"] == "/api/auth"
    assert "httponly" in cookies[SESSION_COOKIE][1]


def test_reusing_a_refresh_token_revokes_the_whole_login(app: Flask, bare_client: FlaskClient,
                                                         alice: str) -> None:
    first = login(bare_client, alice)
    second = refresh(bare_client, first["refreshToken"]).get_json()

    reused = refresh(bare_client, first["refreshToken"])

    problem(reused, 401, "invalid_token")
    # Whoever holds the newer pair is locked out too: one of the copies was stolen.
    problem(who(bare_client, second["accessToken"]), 401, "invalid_token")
    problem(who(bare_client, first["accessToken"]), 401, "invalid_token")
    problem(refresh(bare_client, second["refreshToken"]), 401, "invalid_token")
    [session] = sessions_of(app, alice)
    assert session.revoked_utc is not None


def test_reuse_revokes_only_that_login(bare_client: FlaskClient, alice: str) -> None:
    stolen = login(bare_client, alice)
    other = login(bare_client, alice)
    refresh(bare_client, stolen["refreshToken"])

    problem(refresh(bare_client, stolen["refreshToken"]), 401, "invalid_token")

    assert who(bare_client, other["accessToken"]).status_code == 200
    assert refresh(bare_client, other["refreshToken"]).status_code == 200


def test_an_unknown_refresh_token_is_401(bare_client: FlaskClient) -> None:
    problem(refresh(bare_client, "not-a-refresh-token"), 401, "invalid_token")


def test_refresh_without_any_token_is_401(bare_client: FlaskClient) -> None:
    problem(bare_client.post("/api/auth/refresh"), 401, "invalid_token")
    problem(bare_client.post("/api/auth/refresh", json={}), 401, "invalid_token")


@pytest.mark.parametrize("payload", [{"refreshToken": 5}, {"refreshToken": "x", "more": 1}])
def test_invalid_refresh_bodies_are_400(bare_client: FlaskClient, payload: dict) -> None:
    problem(bare_client.post("/api/auth/refresh", json=payload), 400, "validation_failed")


def test_an_expired_refresh_token_is_401(app: Flask, bare_client: FlaskClient,
                                         alice: str) -> None:
    tokens = login(bare_client, alice)
    with database(app) as session:
        session.execute(update(RefreshToken).values(expires_utc=utc_now() - timedelta(seconds=1)))

    problem(refresh(bare_client, tokens["refreshToken"]), 401, "invalid_token")


def test_refresh_for_a_deactivated_user_is_401(bare_client: FlaskClient, alice: str,
                                               deactivate: Callable[[str], None]) -> None:
    tokens = login(bare_client, alice)
    deactivate(alice)

    problem(refresh(bare_client, tokens["refreshToken"]), 401, "invalid_token")


def test_refresh_extends_the_login(app: Flask, bare_client: FlaskClient, alice: str) -> None:
    tokens = login(bare_client, alice)
    with database(app) as session:
        session.execute(update(LoginSession).values(expires_utc=utc_now() + timedelta(hours=1)))

    refresh(bare_client, tokens["refreshToken"])

    [session] = sessions_of(app, alice)
    assert session.expires_utc - utc_now() > timedelta(hours=11)


def test_refresh_by_cookie_needs_the_csrf_token(client: FlaskClient, alice: str) -> None:
    first = login(client, alice)

    problem(client.post("/api/auth/refresh"), 403, "csrf_failed")
    problem(client.post("/api/auth/refresh", headers={"X-CSRF-Token": "wrong"}), 403,
            "csrf_failed")
    response = client.post("/api/auth/refresh", headers={"X-CSRF-Token": csrf_of(client)})

    assert response.status_code == 200
    assert response.get_json()["refreshToken"] != first["refreshToken"]


def test_the_refresh_cookie_alone_still_needs_the_csrf_token(client: FlaskClient,
                                                             alice: str) -> None:
    login(client, alice)
    client.delete_cookie(SESSION_COOKIE)  # only the refresh cookie is left

    problem(client.post("/api/auth/refresh"), 403, "csrf_failed")
    assert client.post("/api/auth/refresh",
                       headers={"X-CSRF-Token": csrf_of(client)}).status_code == 200


def test_the_refresh_cookie_is_rotated_with_the_pair(client: FlaskClient, alice: str) -> None:
    first = login(client, alice)
    csrf = {"X-CSRF-Token": csrf_of(client)}
    client.post("/api/auth/refresh", headers=csrf)

    assert client.get_cookie(REFRESH_COOKIE, path="/api/auth").value != first["refreshToken"]
    # The jar now holds the new token, which refreshes again.
    assert client.post("/api/auth/refresh", headers=csrf).status_code == 200


# -- logout ----------------------------------------------------------------------------------

def test_logout_with_the_refresh_token_in_the_body(bare_client: FlaskClient,
                                                   alice: str) -> None:
    tokens = login(bare_client, alice)

    response = bare_client.post("/api/auth/logout", json={"refreshToken": tokens["refreshToken"]})

    assert response.status_code == 204
    problem(refresh(bare_client, tokens["refreshToken"]), 401, "invalid_token")
    problem(who(bare_client, tokens["accessToken"]), 401, "invalid_token")


def test_logout_by_cookie(app: Flask, client: FlaskClient, alice: str) -> None:
    tokens = login(client, alice)
    session_cookie = client.get_cookie(SESSION_COOKIE).value

    response = client.post("/api/auth/logout", headers={"X-CSRF-Token": csrf_of(client)})

    assert response.status_code == 204
    assert client.get_cookie(SESSION_COOKIE) is None
    assert client.get_cookie(REFRESH_COOKIE, path="/api/auth") is None
    assert client.get("/api/auth/user").get_json()["contextUser"]["isAuthenticated"] is False
    # The old cookie, replayed, is dead too, and so are the login's tokens.
    replay = app.test_client()
    replay.set_cookie(SESSION_COOKIE, session_cookie)
    assert replay.get("/api/auth/user").get_json()["contextUser"]["isAuthenticated"] is False
    problem(refresh(replay, tokens["refreshToken"]), 401, "invalid_token")
    problem(who(replay, tokens["accessToken"]), 401, "invalid_token")


def test_logout_by_cookie_needs_the_csrf_token(client: FlaskClient, alice: str) -> None:
    tokens = login(client, alice)

    problem(client.post("/api/auth/logout"), 403, "csrf_failed")

    assert who(client, tokens["accessToken"]).status_code == 200


def test_logout_with_only_the_refresh_cookie(client: FlaskClient, alice: str) -> None:
    tokens = login(client, alice)
    client.delete_cookie(SESSION_COOKIE)
    problem(client.post("/api/auth/logout"), 403, "csrf_failed")
    assert who(client, tokens["accessToken"]).status_code == 200

    response = client.post("/api/auth/logout", headers={"X-CSRF-Token": csrf_of(client)})

    assert response.status_code == 204
    problem(who(client, tokens["accessToken"]), 401, "invalid_token")


def test_body_tokens_need_no_csrf_token_despite_cookies(client: FlaskClient,
                                                        alice: str) -> None:
    # A client that keeps cookies but sends the refresh token itself proves possession;
    # the cookies that come along must not turn that into a CSRF failure.
    first = login(client, alice)

    refreshed = client.post("/api/auth/refresh", json={"refreshToken": first["refreshToken"]})
    assert refreshed.status_code == 200
    second = refreshed.get_json()
    logged_out = client.post("/api/auth/logout", json={"refreshToken": second["refreshToken"]})

    assert logged_out.status_code == 204
    problem(who(client, second["accessToken"]), 401, "invalid_token")


def test_logout_with_a_bearer_token_only_ends_that_login(bare_client: FlaskClient,
                                                         alice: str) -> None:
    tokens = login(bare_client, alice)

    response = bare_client.post("/api/auth/logout", headers=bearer_header(tokens["accessToken"]))

    assert response.status_code == 204
    problem(refresh(bare_client, tokens["refreshToken"]), 401, "invalid_token")
    problem(who(bare_client, tokens["accessToken"]), 401, "invalid_token")


def test_logout_clears_both_cookies(client: FlaskClient, alice: str) -> None:
    login(client, alice)

    response = client.post("/api/auth/logout", headers={"X-CSRF-Token": csrf_of(client)})

    cookies = set_cookies(response)
    for name, path in ((SESSION_COOKIE, "/"), (REFRESH_COOKIE, "/api/auth")):
        value, attributes = cookies[name]
        assert value == ""
        assert attributes["max-age"] == "0"
        assert "1970" in attributes["expires"]
        assert attributes["path"] == path


def test_logout_gives_the_browser_a_new_csrf_token(client: FlaskClient, alice: str) -> None:
    login(client, alice)
    before = csrf_of(client)

    client.post("/api/auth/logout", headers={"X-CSRF-Token": before})

    assert csrf_of(client) != before


def test_logout_with_an_unknown_refresh_token_is_401(bare_client: FlaskClient) -> None:
    problem(bare_client.post("/api/auth/logout", json={"refreshToken": "unknown"}), 401,
            "invalid_token")


def test_logout_without_credentials_still_clears_the_cookies(bare_client: FlaskClient) -> None:
    response = bare_client.post("/api/auth/logout")

    assert response.status_code == 204
    assert set_cookies(response)[SESSION_COOKIE][1]["max-age"] == "0"


def test_two_logins_are_independent(bare_client: FlaskClient, alice: str) -> None:
    laptop = login(bare_client, alice)
    phone = login(bare_client, alice)

    bare_client.post("/api/auth/logout", json={"refreshToken": laptop["refreshToken"]})

    problem(who(bare_client, laptop["accessToken"]), 401, "invalid_token")
    assert who(bare_client, phone["accessToken"]).status_code == 200
    assert refresh(bare_client, phone["refreshToken"]).status_code == 200


def test_logout_marks_the_session_revoked(app: Flask, bare_client: FlaskClient,
                                          alice: str) -> None:
    tokens = login(bare_client, alice)

    bare_client.post("/api/auth/logout", json={"refreshToken": tokens["refreshToken"]})

    [session] = sessions_of(app, alice)
    assert session.revoked_utc is not None
