"""Every error source under ``/api`` answers the same RFC 9457 problem document.

One request per source: Werkzeug's routing and body limits, the ``@endpoint`` body loader,
marshmallow validation, authentication, CSRF and scope checks, the login throttle and an
unexpected exception. Outside ``/api`` the same errors render an HTML page instead.
"""
from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from labapp.auth import throttle
from labapp.db import transaction
from labapp.errors import WWW_AUTHENTICATE
from labapp.users.service import create_user
from labapp.web.endpoints import endpoint
from labapp.web.loader import require_scope
from tests.conftest import PASSWORD, basic_header, login, run_init
from tests.contracts.problem import assert_problem
from tests.helpers.ratelimits import limits

THROTTLED_USERNAME = "throttled-user"


@dataclass(frozen=True)
class Env:
    """What a request of a case may need: the session app, its client and the user factory."""

    app: Flask
    client: FlaskClient
    make_user: Callable[..., str]


def _unknown_route(env: Env) -> TestResponse:
    return env.client.get("/api/no-such-endpoint")


def _wrong_method(env: Env) -> TestResponse:
    return env.client.get("/api/auth/login")


def _wrong_content_type(env: Env) -> TestResponse:
    return env.client.post("/api/auth/login", data="username=a&password=b",
                           content_type="application/x-www-form-urlencoded")


def _malformed_json(env: Env) -> TestResponse:
    return env.client.post("/api/auth/login", data='{"username": "a", ',
                           content_type="application/json")


def _invalid_fields(env: Env) -> TestResponse:
    return env.client.post("/api/auth/login", json={"username": "a", "bogus": 1})


def _not_authenticated(env: Env) -> TestResponse:
    return env.client.get("/api/user/pat")


def _cookie_post_without_csrf(env: Env) -> TestResponse:
    env.make_user("csrf-user")
    login(env.client, "csrf-user")
    return env.client.post("/api/user/pat", json={"name": "no csrf token"})


def _throttled(env: Env) -> TestResponse:
    limit = env.app.config["LABAPP"]["LOGIN_MAX_FAILURES"]
    with env.app.app_context(), transaction():
        for _ in range(limit):
            throttle.record_failure(THROTTLED_USERNAME, "127.0.0.1")
    return env.client.post("/api/auth/login",
                           json={"username": THROTTLED_USERNAME, "password": "whatever-it-is"})


def _rate_limited(env: Env) -> TestResponse:
    client = env.app.test_client()
    client.environ_base["REMOTE_ADDR"] = f"10.9.{secrets.randbelow(256)}.{secrets.randbelow(256)}"
    with limits(env.app, address=1):
        client.get("/api/auth/user")
        return client.get("/api/auth/user")


def _allow_lists_post(response: TestResponse) -> None:
    allowed = {method.strip() for method in response.headers["Allow"].split(",")}
    assert "POST" in allowed and "GET" not in allowed


def _challenges(response: TestResponse) -> None:
    assert response.headers["WWW-Authenticate"] == WWW_AUTHENTICATE


def _retry_after(response: TestResponse) -> None:
    seconds = int(response.headers["Retry-After"])
    assert 1 <= seconds <= 301


@dataclass(frozen=True)
class Source:
    """One error source: the request that triggers it and the problem it must produce."""

    send: Callable[[Env], TestResponse]
    status: int
    code: str
    errors: bool = False
    check: Callable[[TestResponse], None] | None = None
    detail_contains: tuple[str, ...] = field(default_factory=tuple)
    error_fields: frozenset[str] | None = None


SOURCES = {
    "unknown-route": Source(_unknown_route, 404, "not_found"),
    "wrong-method": Source(_wrong_method, 405, "method_not_allowed", check=_allow_lists_post),
    "wrong-content-type": Source(_wrong_content_type, 415, "unsupported_media_type",
                                 detail_contains=("application/json",)),
    # The parse position is reported as a field error on the body (see labapp.web.endpoints).
    "malformed-json": Source(_malformed_json, 400, "invalid_json", errors=False,
                             detail_contains=("not valid JSON", "char ")),
    "validation": Source(_invalid_fields, 400, "validation_failed", errors=True,
                         error_fields=frozenset({"password", "bogus"})),
    "not-authenticated": Source(_not_authenticated, 401, "not_authenticated",
                                check=_challenges),
    "csrf": Source(_cookie_post_without_csrf, 403, "csrf_failed"),
    "throttled": Source(_throttled, 429, "too_many_requests", check=_retry_after),
    "rate-limited": Source(_rate_limited, 429, "rate_limited", check=_retry_after),
}


@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES.keys())
def test_error_source_answers_a_problem(app: Flask, client: FlaskClient,
                                        make_user: Callable[..., str], source: Source) -> None:
    response = source.send(Env(app, client, make_user))

    body = assert_problem(response, source.status, source.code, errors=source.errors)
    for text in source.detail_contains:
        assert text in body["detail"]
    if source.error_fields is not None:
        assert {entry["field"] for entry in body["errors"]} == source.error_fields
    if source.check is not None:
        source.check(response)


def test_body_too_large_is_413(fresh_app: Callable[..., Flask]) -> None:
    application = fresh_app(initialised=True, MAX_UPLOAD_MB=1)
    oversized = b'{"username": "admin", "password": "' + b"x" * (1024 * 1024) + b'"}'

    response = application.test_client().post("/api/auth/login", data=oversized,
                                              content_type="application/json")

    assert_problem(response, 413, "payload_too_large")


def test_missing_scope_is_403(fresh_app: Callable[..., Flask]) -> None:
    """An authenticated caller without the scope a view requires gets 403 ``missing_scope``."""
    application = fresh_app()

    @require_scope("ADMIN")
    @endpoint("Admins only (test route).", responses={204: "Done"})
    def admins_only() -> tuple[str, int]:
        return "", 204

    application.add_url_rule("/api/test-admins-only", view_func=admins_only)
    run_init(application)
    with application.app_context(), transaction():
        create_user(username="plain", name="Plain", department_id="DEP00001",
                    password=PASSWORD, created_by="tests")

    response = application.test_client().get("/api/test-admins-only",
                                              headers=basic_header("plain", PASSWORD))

    body = assert_problem(response, 403, "missing_scope")
    assert "ADMIN" in body["detail"]


def test_unexpected_exception_is_500_without_internals(
        fresh_app: Callable[..., Flask], caplog: pytest.LogCaptureFixture) -> None:
    application = fresh_app()
    application.config["PROPAGATE_EXCEPTIONS"] = False

    def boom() -> str:
        raise RuntimeError("secret internal state 0xdeadbeef")

    application.add_url_rule("/api/test-boom", view_func=boom)
    with caplog.at_level(logging.ERROR, logger="labapp.errors"):
        response = application.test_client().get("/api/test-boom")

    assert_problem(response, 500, "internal_error")
    text = response.get_data(as_text=True)
    for leaked in ("Traceback", "RuntimeError", "0xdeadbeef", "test-boom", ".py"):
        assert leaked not in text
    logged = [record for record in caplog.records if record.name == "labapp.errors"]
    assert len(logged) == 1
    assert logged[0].levelno == logging.ERROR
    assert logged[0].exc_info is not None and logged[0].exc_info[0] is RuntimeError


def test_unknown_page_outside_api_is_html(client: FlaskClient) -> None:
    response = client.get("/no-such-page")

    assert response.status_code == 404
    assert response.mimetype == "text/html"
    text = response.get_data(as_text=True)
    assert "<html" in text.lower() and "404" in text
    assert '"code"' not in text and '"type"' not in text


@pytest.mark.parametrize("send", [
    lambda client: client.post("/api/auth/login",
                               json={"username": "al\x00ice", "password": "whatever!!"}),
    lambda client: client.post("/api/auth/login", json={"username": "alice",
                                                        "pass\x00word": "whatever!!"}),
    lambda client: client.delete("/api/user/pat/%00"),
    lambda client: client.get("/api/auth/user?x=%00"),
], ids=["value", "key", "path", "query"])
def test_nul_characters_are_refused_everywhere_with_400(client: FlaskClient, send) -> None:
    """PostgreSQL refuses NUL in any parameter; it is answered as bad input, never a 500."""
    assert_problem(send(client), 400, "invalid_value")
