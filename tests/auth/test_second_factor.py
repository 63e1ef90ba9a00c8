"""The second factor (issue 35 §4) through the API and the service: the login's ``code``,
recovery codes, replay, throttling, Basic refusal, the ADMIN reset and the requirement."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyotp
import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from labapp.auth import second_factor
from labapp.auth.second_factor import InvalidCode
from labapp.db import db
from labapp.errors import Conflict
from labapp.model import RecoveryCode, SecondFactor
from tests.auth.checks import (
    CLIENT_ADDRESS,
    database,
    failures_of,
    problem,
    seed_failures,
    sessions_of,
)
from tests.auth.factors import code, enrol, events_of, required, wrong_code
from tests.conftest import ADMIN_PASSWORD, PASSWORD, basic_header, bearer_header, login

LIMIT = 10  # LOGIN_MAX_FAILURES of the test application (the default)


def post_login(client: FlaskClient, username: str, password: str = PASSWORD,
               **extra: Any):
    return client.post("/api/auth/login",
                       json={"username": username, "password": password, **extra})


# ---- Enrolment (the service) ------------------------------------------------------------------

def test_enrolment_is_in_force_only_once_a_code_confirms_it(app: Flask, alice: str) -> None:
    with database(app):
        secret = second_factor.begin_enrolment(alice)
        assert not second_factor.is_enrolled(alice)
    with database(app), pytest.raises(InvalidCode):
        second_factor.confirm_enrolment(alice, wrong_code(secret))
    with database(app):
        assert not second_factor.is_enrolled(alice)
        codes = second_factor.confirm_enrolment(alice, code(secret))
        assert second_factor.is_enrolled(alice)
    assert len(codes) == second_factor.RECOVERY_CODE_COUNT == len(set(codes))
    with app.app_context():
        stored = db.session.scalars(select(RecoveryCode.code_hash)
                                   .where(RecoveryCode.user_id == alice)).all()
    # Stored hashed: no value appears as such.
    assert len(stored) == 10 and not set(stored) & {c.replace("-", "") for c in codes}


def test_the_qr_uri_names_the_account_and_the_issuer(app: Flask, alice: str) -> None:
    with database(app):
        secret = second_factor.begin_enrolment(alice)
    uri = second_factor.provisioning_uri(alice, secret)
    parsed = pyotp.parse_uri(uri)
    assert isinstance(parsed, pyotp.TOTP) and parsed.secret == secret
    assert parsed.name == alice and parsed.issuer == "labapp"


def test_a_confirmed_factor_cannot_be_begun_again(app: Flask, alice: str) -> None:
    enrol(app, alice)
    with database(app), pytest.raises(Conflict):
        second_factor.begin_enrolment(alice)


# ---- The API login ----------------------------------------------------------------------------

def test_without_a_code_the_login_is_second_factor_required(app: Flask, client: FlaskClient,
                                                             alice: str) -> None:
    enrol(app, alice)
    body = problem(post_login(client, alice), 401, "second_factor_required")
    assert "code" in body["detail"]
    assert sessions_of(app, alice) == []
    # A right password is no failure.
    assert failures_of(app, alice) == 0


def test_the_right_code_logs_in(app: Flask, client: FlaskClient, alice: str) -> None:
    secret, _ = enrol(app, alice)
    pair = login(client, alice, code=code(secret))
    assert client.get("/api/user", headers=bearer_header(pair["accessToken"])).status_code == 200
    assert [(e.method, e.succeeded) for e in events_of(app, alice)][-1] == ("totp", True)


def test_a_wrong_code_is_invalid_code_and_counts_as_a_failure(app: Flask, client: FlaskClient,
                                                               alice: str) -> None:
    secret, _ = enrol(app, alice)
    wrong = wrong_code(secret)
    problem(post_login(client, alice, code=wrong), 401, "invalid_code")
    assert failures_of(app, alice) == 1
    assert sessions_of(app, alice) == []
    last = events_of(app, alice)[-1]
    assert (last.method, last.succeeded, last.reason) == ("totp", False, "invalid_code")


def test_a_code_is_not_accepted_twice(app: Flask, client: FlaskClient, alice: str) -> None:
    secret, _ = enrol(app, alice)
    used = code(secret)
    login(client, alice, code=used)
    problem(post_login(client, alice, code=used), 401, "invalid_code")
    # Nor an older one once a newer was accepted.
    login(client, alice, code=code(secret, 1))
    problem(post_login(client, alice, code=code(secret)), 401, "invalid_code")


def test_a_code_of_a_wrong_password_is_never_looked_at(app: Flask, client: FlaskClient,
                                                        alice: str) -> None:
    secret, _ = enrol(app, alice)
    problem(post_login(client, alice, "wrong password", code=code(secret)), 401,
            "invalid_credentials")
    # The code was not used up.
    login(client, alice, code=code(secret))


def test_a_recovery_code_logs_in_once(app: Flask, client: FlaskClient, alice: str) -> None:
    _, codes = enrol(app, alice)
    login(client, alice, code=codes[0].lower().replace("-", " "))
    assert events_of(app, alice)[-1].method == "recovery_code"
    problem(post_login(client, alice, code=codes[0]), 401, "invalid_code")
    login(client, alice, code=codes[1])
    with app.app_context():
        assert second_factor.recovery_codes_left(alice) == 8


def test_someone_elses_recovery_code_is_wrong(app: Flask, client: FlaskClient, alice: str,
                                              bob: str) -> None:
    enrol(app, alice)
    _, bobs = enrol(app, bob)
    problem(post_login(client, alice, code=bobs[0]), 401, "invalid_code")


@pytest.mark.parametrize("bad", ["12345", "1234567", "abcdef", "12 34 5x", "' OR 1=1 --",
                                 "ＡＢＣＤ-ＥＦＧＨ-ＪＫＬＭ-ＮＰＱＲ", "１２３４５６", "-" * 64])
def test_malformed_codes_are_invalid_code(app: Flask, client: FlaskClient, alice: str,
                                          bad: str) -> None:
    enrol(app, alice)
    problem(post_login(client, alice, code=bad), 401, "invalid_code")


@pytest.mark.parametrize("huge", ["1" * 65, "A" * 100_000, ""])
def test_an_empty_or_huge_code_is_400(app: Flask, client: FlaskClient, alice: str,
                                      huge: str) -> None:
    enrol(app, alice)
    body = problem(post_login(client, alice, code=huge), 400, "validation_failed")
    assert {error["field"] for error in body["errors"]} == {"code"}


def test_a_code_with_nul_is_refused_before_anything(app: Flask, client: FlaskClient,
                                                     alice: str) -> None:
    enrol(app, alice)
    problem(post_login(client, alice, code="\u0000" * 6), 400, "invalid_value")
    assert events_of(app, alice) == []


def test_a_code_for_an_account_without_a_second_factor_is_ignored(
        client: FlaskClient, alice: str) -> None:
    login(client, alice, code="123456")


def test_wrong_codes_are_throttled_like_wrong_passwords(app: Flask, client: FlaskClient,
                                                        alice: str) -> None:
    secret, _ = enrol(app, alice)
    seed_failures(app, LIMIT - 1, username=alice)
    wrong = wrong_code(secret)
    problem(post_login(client, alice, code=wrong), 401, "invalid_code")
    response = post_login(client, alice, code=code(secret))
    assert response.status_code == 429 and response.headers["Retry-After"]


# ---- Basic authentication and tokens ----------------------------------------------------------

def test_basic_with_the_password_is_refused_and_says_to_use_a_pat(
        app: Flask, bare_client: FlaskClient, alice: str) -> None:
    enrol(app, alice)
    response = bare_client.get("/api/user", headers=basic_header(alice, PASSWORD))
    body = problem(response, 401, "second_factor_required")
    assert "personal access token" in body["detail"]
    last = events_of(app, alice)[-1]
    assert (last.method, last.succeeded, last.reason) == ("basic", False,
                                                          "second_factor_required")
    # Remembered successes do not slip through either.
    response = bare_client.get("/api/user", headers=basic_header(alice, PASSWORD))
    problem(response, 401, "second_factor_required")


def test_a_wrong_basic_password_is_still_invalid_credentials(
        app: Flask, bare_client: FlaskClient, alice: str) -> None:
    enrol(app, alice)
    problem(bare_client.get("/api/user", headers=basic_header(alice, "not the password")),
            401, "invalid_credentials")
    assert events_of(app, alice)[-1].reason == "wrong_password"


def test_a_huge_basic_username_is_logged_cut(app: Flask, bare_client: FlaskClient) -> None:
    huge = "u" * 10_000
    problem(bare_client.get("/api/user", headers=basic_header(huge, "whatever")), 401,
            "invalid_credentials")
    [event] = events_of(app, huge[:255])
    assert (event.user_id, event.method, event.reason) == (None, "basic", "unknown_user")


def test_pats_and_bearer_tokens_keep_working(app: Flask, client: FlaskClient,
                                             bare_client: FlaskClient, alice: str) -> None:
    secret, _ = enrol(app, alice)
    pair = login(client, alice, code=code(secret))
    bearer = bearer_header(pair["accessToken"])
    assert bare_client.get("/api/user", headers=bearer).status_code == 200
    created = bare_client.post("/api/user/pat", json={"name": "script"}, headers=bearer)
    assert created.status_code == 201
    pat = created.get_json()["value"]
    assert bare_client.get("/api/user", headers=basic_header(alice, pat)).status_code == 200


# ---- The ADMIN reset --------------------------------------------------------------------------

def test_an_admin_resets_a_second_factor(app: Flask, client: FlaskClient, alice: str) -> None:
    enrol(app, alice)
    admin = login(client, "admin", ADMIN_PASSWORD)
    response = client.delete(f"/api/user/{alice}/secondFactor",
                             headers=bearer_header(admin["accessToken"]))
    assert response.status_code == 204
    with app.app_context():
        assert db.session.get(SecondFactor, alice) is None
        assert db.session.scalars(select(RecoveryCode).where(
            RecoveryCode.user_id == alice)).all() == []
    login(client, alice)


def test_nobody_else_resets_anothers_second_factor(app: Flask, bare_client: FlaskClient,
                                                   alice: str, bob: str) -> None:
    enrol(app, alice)
    response = bare_client.delete(f"/api/user/{alice}/secondFactor",
                                  headers=bearer_header(login(bare_client, bob)["accessToken"]))
    problem(response, 403, "missing_scope")
    # Nor their own, without a code: that is the profile page's disable.
    secret, _ = enrol(app, bob)
    token = login(bare_client, bob, code=code(secret))["accessToken"]
    problem(bare_client.delete(f"/api/user/{bob}/secondFactor", headers=bearer_header(token)),
            403, "missing_scope")
    with app.app_context():
        assert second_factor.is_enrolled(alice) and second_factor.is_enrolled(bob)


def test_resetting_an_unknown_user_is_404(client: FlaskClient) -> None:
    admin = login(client, "admin", ADMIN_PASSWORD)
    problem(client.delete("/api/user/nobody-here/secondFactor",
                          headers=bearer_header(admin["accessToken"])), 404, "not_found")


# ---- The requirement --------------------------------------------------------------------------

def test_a_required_but_missing_factor_refuses_the_api_login(
        app: Flask, client: FlaskClient, bare_client: FlaskClient, alice: str) -> None:
    with required(app, "all"):
        body = problem(post_login(client, alice), 401, "second_factor_enrolment_required")
        assert "login page" in body["detail"]
        problem(bare_client.get("/api/user", headers=basic_header(alice, PASSWORD)), 401,
                "second_factor_required")
    login(client, alice)


def test_admin_requires_it_of_administrators_only(app: Flask, client: FlaskClient,
                                                  alice: str) -> None:
    with required(app, "admin"):
        problem(post_login(client, "admin", ADMIN_PASSWORD), 401,
                "second_factor_enrolment_required")
        login(client, alice)


def test_an_enrolled_user_logs_in_with_a_code_under_the_requirement(
        app: Flask, client: FlaskClient, alice: str) -> None:
    secret, _ = enrol(app, alice)
    with required(app, "all"):
        login(client, alice, code=code(secret))


@pytest.mark.parametrize("raw", ["none", "admin", "all", " ALL "])
def test_the_setting_takes_its_three_values(fresh_app: Callable[..., Flask], raw: str) -> None:
    application = fresh_app(initialised=True, REQUIRE_SECOND_FACTOR=raw)
    assert application.config["LABAPP"]["REQUIRE_SECOND_FACTOR"] == raw.strip().lower()


def test_the_setting_refuses_other_values(fresh_app: Callable[..., Flask]) -> None:
    with pytest.raises(Exception, match="none, admin, all"):
        fresh_app(initialised=True, REQUIRE_SECOND_FACTOR="sometimes")


def test_throttled_attempts_are_not_logged(app: Flask, client: FlaskClient, alice: str) -> None:
    seed_failures(app, LIMIT, username=alice, address=CLIENT_ADDRESS)
    assert post_login(client, alice).status_code == 429
    assert events_of(app, alice) == []
