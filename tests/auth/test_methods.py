"""The four ways of authenticating, GET /api/auth/user, malformed headers and CSRF."""
from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from labapp.db import db
from labapp.model import LoginFailure, PersonalAccessToken
from tests.auth.checks import (
    failures_of,
    problem,
    secret_keys,
    seed_failures,
    sessions_of,
)
from tests.conftest import AUTH_METHODS, PASSWORD, basic_header, csrf_of, login

LIMIT = 10


def pat_count(app: Flask, username: str) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(PersonalAccessToken)
                                 .where(PersonalAccessToken.user_id == username))


@pytest.mark.parametrize("method", AUTH_METHODS)
def test_auth_user_reports_the_method_and_the_user(api_as: Callable, make_user: Callable,
                                                   method: str) -> None:
    make_user("carol", roles=["DATA_MANAGER"], name="Carol Chemist")
    caller = api_as("carol", method)

    response = caller.get("/api/auth/user")

    assert response.status_code == 200
    body = response.get_json()
    assert body["method"] == method
    assert body["contextUser"] == {"name": "carol", "isAuthenticated": True,
                                   "windowsAuthentication": False}
    user = body["currentUser"]
    assert user["id"] == "carol"
    assert user["name"] == "Carol Chemist"
    assert user["roles"] == ["DATA_MANAGER"]
    assert user["isActive"] is True
    assert secret_keys(body) == []
    assert PASSWORD not in response.get_data(as_text=True)
    assert "argon2" not in response.get_data(as_text=True)


def test_auth_user_answers_anonymous_callers(bare_client: FlaskClient) -> None:
    response = bare_client.get("/api/auth/user")

    assert response.status_code == 200
    assert response.get_json() == {
        "contextUser": {"name": None, "isAuthenticated": False, "windowsAuthentication": False},
        "currentUser": None, "method": None}


def test_basic_with_the_password_works(bare_client: FlaskClient, alice: str) -> None:
    response = bare_client.get("/api/user/pat", headers=basic_header(alice, PASSWORD))

    assert response.status_code == 200
    assert response.get_json() == []


def test_basic_with_a_wrong_password_is_401(app: Flask, bare_client: FlaskClient,
                                            alice: str) -> None:
    response = bare_client.get("/api/user/pat", headers=basic_header(alice, "wrong password!"))

    problem(response, 401, "invalid_credentials")
    assert failures_of(app, alice) == 1


def test_basic_failures_count_toward_login_throttling(app: Flask, bare_client: FlaskClient,
                                                      alice: str) -> None:
    seed_failures(app, LIMIT - 1, username=alice)
    problem(bare_client.get("/api/user/pat", headers=basic_header(alice, "wrong password!")),
            401, "invalid_credentials")

    throttled = bare_client.get("/api/user/pat", headers=basic_header(alice, PASSWORD))

    problem(throttled, 429, "too_many_requests")
    assert int(throttled.headers["Retry-After"]) > 0
    # The same counter guards the login endpoint.
    problem(bare_client.post("/api/auth/login", json={"username": alice, "password": PASSWORD}),
            429, "too_many_requests")


def test_basic_opens_no_login_session(app: Flask, bare_client: FlaskClient,
                                     alice: str) -> None:
    bare_client.get("/api/user/pat", headers=basic_header(alice, PASSWORD))

    assert sessions_of(app, alice) == []


def test_a_password_that_looks_like_a_pat_still_works(bare_client: FlaskClient,
                                                     make_user: Callable) -> None:
    make_user("dave", password="PATience is a virtue")

    response = bare_client.get("/api/auth/user",
                               headers=basic_header("dave", "PATience is a virtue"))

    assert response.status_code == 200
    assert response.get_json()["method"] == "basic"


def test_a_valid_pat_works_while_password_logins_are_throttled(app: Flask, api_as: Callable,
                                                               alice: str) -> None:
    # Throttling slows down password guessing; a PAT is no guess.
    pat_caller = api_as(alice, "pat")
    seed_failures(app, LIMIT, username=alice)

    assert pat_caller.get("/api/user/pat").status_code == 200
    problem(pat_caller.client.get("/api/user/pat", headers=basic_header(alice, PASSWORD)),
            429, "too_many_requests")


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@pytest.mark.parametrize("header", [
    "Basic !!!",
    "Basic " + _b64(b"alice-without-colon"),
    "Basic " + _b64(b":" + PASSWORD.encode()),
    "Basic " + _b64(b"\xff\xfe:" + PASSWORD.encode()),
    "Basic " + _b64(b"al\x00ice:" + PASSWORD.encode()),
    "Basic",
    "Digest x",
    "Negotiate abc",
    "justonetoken",
])
def test_malformed_authorization_headers_are_401(app: Flask, bare_client: FlaskClient,
                                                 header: str) -> None:
    response = bare_client.get("/api/auth/user", headers={"Authorization": header})

    problem(response, 401, "invalid_authorization")
    # Nothing was checked, so nothing counts as a failed login.
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(LoginFailure)) == 0


@pytest.mark.parametrize("method", AUTH_METHODS)
def test_a_deactivated_user_is_rejected_by_every_method(api_as: Callable, alice: str,
                                                        deactivate: Callable[[str], None],
                                                        method: str) -> None:
    caller = api_as(alice, method)
    assert caller.get("/api/user/pat").status_code == 200

    deactivate(alice)

    expected = {"bearer": "invalid_token", "cookie": "not_authenticated"}
    problem(caller.get("/api/user/pat"), 401, expected.get(method, "invalid_credentials"))
    me = caller.get("/api/auth/user")
    if method == "cookie":
        assert me.get_json()["currentUser"] is None  # a stale cookie just means anonymous
    else:
        assert me.status_code == 401


def test_cookie_posts_need_the_csrf_token(app: Flask, client: FlaskClient, alice: str) -> None:
    login(client, alice)

    missing = client.post("/api/user/pat", json={"name": "no csrf"})
    wrong = client.post("/api/user/pat", json={"name": "bad csrf"},
                        headers={"X-CSRF-Token": "not-the-token"})

    problem(missing, 403, "csrf_failed")
    problem(wrong, 403, "csrf_failed")
    assert pat_count(app, alice) == 0
    ok = client.post("/api/user/pat", json={"name": "with csrf"},
                     headers={"X-CSRF-Token": csrf_of(client)})
    assert ok.status_code == 201
    assert pat_count(app, alice) == 1


def test_cookie_deletes_need_the_csrf_token(client: FlaskClient, alice: str) -> None:
    login(client, alice)
    csrf = {"X-CSRF-Token": csrf_of(client)}
    pat_id = client.post("/api/user/pat", json={"name": "t"}, headers=csrf).get_json()["id"]

    problem(client.delete(f"/api/user/pat/{pat_id}"), 403, "csrf_failed")
    assert [pat["id"] for pat in client.get("/api/user/pat").get_json()] == [pat_id]
    assert client.delete(f"/api/user/pat/{pat_id}", headers=csrf).status_code == 204


def test_login_gives_the_browser_a_new_csrf_token(client: FlaskClient, alice: str) -> None:
    client.get("/api/auth/user")
    with client.session_transaction() as session:
        session["csrf"] = "planted-before-login"

    login(client, alice)

    assert csrf_of(client) != "planted-before-login"


@pytest.mark.parametrize("method", ["bearer", "basic", "pat"])
def test_header_authenticated_requests_need_no_csrf_token(app: Flask, api_as: Callable,
                                                          alice: str, method: str) -> None:
    caller = api_as(alice, method)
    before = pat_count(app, alice)

    response = caller.post("/api/user/pat", json={"name": "no csrf needed"})

    assert response.status_code == 201
    assert pat_count(app, alice) == before + 1


def test_the_authorization_header_wins_over_the_cookie(client: FlaskClient, alice: str,
                                                       bob: str) -> None:
    login(client, alice)

    response = client.get("/api/auth/user", headers=basic_header(bob, PASSWORD))

    assert response.get_json()["contextUser"]["name"] == bob
    assert response.get_json()["method"] == "basic"


def test_a_bad_header_is_401_even_with_a_valid_cookie(client: FlaskClient, alice: str) -> None:
    login(client, alice)

    problem(client.get("/api/auth/user", headers=basic_header(alice, "wrong password!")),
            401, "invalid_credentials")


@pytest.mark.parametrize("cookie", ["garbage", "eyJ1IjoiYWxpY2UifQ.forged.sig"])
def test_a_forged_session_cookie_means_anonymous(bare_client: FlaskClient,
                                                 cookie: str) -> None:
    response = bare_client.get("/api/auth/user",
                               headers={"Cookie": f"labapp_session={cookie}"})

    assert response.status_code == 200
    assert response.get_json()["contextUser"]["isAuthenticated"] is False
    problem(bare_client.get("/api/user/pat", headers={"Cookie": f"labapp_session={cookie}"}),
            401, "not_authenticated")


@pytest.mark.parametrize("path, verb", [("/api/user/pat", "get"), ("/api/user/pat", "post"),
                                        ("/api/user/pat/pat_0123", "delete"),
                                        ("/api/user/password/change", "post")])
def test_protected_endpoints_reject_anonymous_callers(bare_client: FlaskClient, path: str,
                                                      verb: str) -> None:
    response = getattr(bare_client, verb)(path, json={})

    problem(response, 401, "not_authenticated")
