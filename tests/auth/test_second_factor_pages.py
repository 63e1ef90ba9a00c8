"""The second factor on the pages (issue 35 §4) and the sign-in log's page and API (§5):
enrolment on the profile page, the login's second step, enrolment demanded at login, turning
it off, the ADMIN reset and the list of sign-ins."""
from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from labapp.auth import second_factor
from labapp.model import User
from tests.auth.checks import (
    SESSION_COOKIE,
    database,
    problem,
    secret_keys,
    sessions_of,
    set_cookies,
)
from tests.auth.factors import code, enrol, events_of, required, wrong_code
from tests.conftest import ADMIN_PASSWORD, PASSWORD, bearer_header, csrf_of, login

_SECRET = re.compile(r'id="second-factor-secret">([A-Z2-7 ]+)<')
_RECOVERY = re.compile(r"<li><code>([A-Z2-9]{4}(?:-[A-Z2-9]{4}){3})</code></li>")


def page_login(client: FlaskClient, username: str, password: str = PASSWORD,
               **extra: Any) -> TestResponse:
    client.get("/login")
    return client.post("/login", data={"username": username, "password": password,
                                       "csrf_token": csrf_of(client), **extra})


def post_form(client: FlaskClient, path: str, **data: str) -> TestResponse:
    return client.post(path, data={"csrf_token": csrf_of(client), **data})


def shown_secret(html: str) -> str:
    found = _SECRET.search(html)
    assert found, html
    return found[1].replace(" ", "")


# ---- Enrolment on the profile page ------------------------------------------------------------

def test_enrolment_on_the_profile_page(app: Flask, client: FlaskClient, alice: str) -> None:
    assert page_login(client, alice).status_code == 303
    assert 'id="second-factor-begin"' in client.get("/profile").get_data(as_text=True)
    begun = post_form(client, "/profile/second-factor")
    assert begun.status_code == 303
    html = client.get("/profile").get_data(as_text=True)
    secret = shown_secret(html)
    # A standard QR code drawn inline, nothing the pages' policy would block.
    qr = html[html.index('id="second-factor-qr"'):html.index("</figure>")]
    assert "<svg" in qr and "style=" not in qr and "<script" not in qr
    wrong = post_form(client, "/profile/second-factor/confirm", code="12345")
    assert wrong.status_code == 400 and 'id="second-factor-error"' in wrong.get_data(True)
    with app.app_context():
        assert not second_factor.is_enrolled(alice)
    confirmed = post_form(client, "/profile/second-factor/confirm", code=code(secret))
    assert confirmed.status_code == 200
    codes = _RECOVERY.findall(confirmed.get_data(as_text=True))
    assert len(codes) == 10
    with app.app_context():
        assert second_factor.is_enrolled(alice)
    again = client.get("/profile").get_data(as_text=True)
    assert "On since" in again and "10 recovery codes left" in again
    # Shown once: never again.
    assert not set(codes) & set(_RECOVERY.findall(again))


def test_the_profile_offers_no_second_factor_to_directory_accounts(
        app: Flask, client: FlaskClient, alice: str) -> None:
    with database(app) as session:
        session.get(User, alice).auth_source = "ldap"
    page_login(client, alice)
    assert 'id="second-factor"' not in client.get("/profile").get_data(as_text=True)
    assert post_form(client, "/profile/second-factor").status_code == 409


def test_turning_it_off_needs_a_code(app: Flask, client: FlaskClient, alice: str) -> None:
    secret, codes = enrol(app, alice)
    page_login(client, alice)
    post_form(client, "/login/code", code=code(secret))
    refused = post_form(client, "/profile/second-factor/disable", code="000000")
    assert refused.status_code == 400
    assert post_form(client, "/profile/second-factor/disable",
                     code=codes[3]).status_code == 303
    with app.app_context():
        assert not second_factor.is_enrolled(alice)


# ---- The login's second step ------------------------------------------------------------------

def test_the_login_asks_for_the_code_before_any_session(app: Flask, client: FlaskClient,
                                                        alice: str) -> None:
    secret, _ = enrol(app, alice)
    first = page_login(client, alice, next="/profile")
    assert first.status_code == 303 and first.headers["Location"].startswith("/login/code")
    assert SESSION_COOKIE not in set_cookies(first)
    assert sessions_of(app, alice) == []
    assert client.get("/profile").status_code == 302  # still signed out
    form = client.get("/login/code?next=/profile")
    assert form.status_code == 200 and 'id="code-form"' in form.get_data(as_text=True)
    wrong = post_form(client, "/login/code?next=/profile", code=wrong_code(secret))
    assert wrong.status_code == 401 and sessions_of(app, alice) == []
    done = post_form(client, "/login/code", code=code(secret), next="/profile")
    assert done.status_code == 303 and done.headers["Location"] == "/profile"
    assert SESSION_COOKIE in set_cookies(done)
    assert client.get("/profile").status_code == 200
    kinds = [(event.method, event.succeeded, event.reason) for event in events_of(app, alice)]
    assert kinds == [("password", True, "code_pending"), ("totp", False, "invalid_code"),
                     ("totp", True, None)]


def test_a_recovery_code_works_on_the_page(app: Flask, client: FlaskClient, alice: str) -> None:
    _, codes = enrol(app, alice)
    page_login(client, alice)
    assert post_form(client, "/login/code", code=codes[0]).status_code == 303


def test_the_second_step_is_bound_to_the_browser(app: Flask, client: FlaskClient,
                                                 alice: str) -> None:
    secret, _ = enrol(app, alice)
    page_login(client, alice)
    other = app.test_client()
    other.get("/login")
    response = post_form(other, "/login/code", code=code(secret))
    assert response.status_code == 303 and response.headers["Location"].startswith("/login")
    assert sessions_of(app, alice) == []


def test_a_forged_pending_step_is_ignored(app: Flask, client: FlaskClient, alice: str) -> None:
    enrol(app, alice)
    client.get("/login")
    with client.session_transaction() as session:
        session["second_step"] = "eyJ1IjoiYWxpY2UifQ.forged.signature"
    assert client.get("/login/code").headers["Location"].startswith("/login")


def test_a_password_changed_meanwhile_ends_the_pending_step(app: Flask, client: FlaskClient,
                                                            alice: str) -> None:
    secret, _ = enrol(app, alice)
    page_login(client, alice)
    admin = app.test_client()
    token = login(admin, "admin", ADMIN_PASSWORD)["accessToken"]
    assert admin.put("/api/user", json={"userID": alice, "password": "another-password-1"},
                     headers=bearer_header(token)).status_code == 200
    response = post_form(client, "/login/code", code=code(secret))
    assert response.status_code == 303 and response.headers["Location"].startswith("/login")
    assert sessions_of(app, alice) == []


# ---- Enrolment demanded at login --------------------------------------------------------------

def test_a_required_factor_is_set_up_after_the_password(app: Flask, client: FlaskClient,
                                                        alice: str) -> None:
    with required(app, "all"):
        first = page_login(client, alice)
        assert first.headers["Location"].startswith("/login/enrol")
        assert SESSION_COOKIE not in set_cookies(first)
        page = client.get("/login/enrol").get_data(as_text=True)
        secret = shown_secret(page)
        # Reloading shows the same secret, not a new one.
        assert shown_secret(client.get("/login/enrol").get_data(as_text=True)) == secret
        assert post_form(client, "/login/enrol", code=wrong_code(secret)).status_code == 401
        done = post_form(client, "/login/enrol", code=code(secret))
        assert done.status_code == 200 and SESSION_COOKIE in set_cookies(done)
        assert len(_RECOVERY.findall(done.get_data(as_text=True))) == 10
        assert client.get("/profile").status_code == 200
    with app.app_context():
        assert second_factor.is_enrolled(alice)


# ---- The ADMIN pages --------------------------------------------------------------------------

def test_an_admin_resets_it_on_the_users_page(app: Flask, client: FlaskClient,
                                              alice: str) -> None:
    enrol(app, alice)
    page_login(client, "admin", ADMIN_PASSWORD)
    assert "Reset the second factor" in client.get(f"/admin/users/{alice}").get_data(True)
    response = post_form(client, f"/admin/users/{alice}/second-factor/reset")
    assert response.status_code == 303
    with app.app_context():
        assert not second_factor.is_enrolled(alice)


def test_a_non_admin_cannot_reset_on_the_page(app: Flask, client: FlaskClient, alice: str,
                                              bob: str) -> None:
    enrol(app, alice)
    page_login(client, bob)
    assert post_form(client, f"/admin/users/{alice}/second-factor/reset").status_code == 403
    with app.app_context():
        assert second_factor.is_enrolled(alice)


def test_the_sign_ins_page_is_for_admins(app: Flask, client: FlaskClient, alice: str) -> None:
    page_login(client, alice, "wrong password")
    page_login(client, alice)
    assert client.get("/admin/sign-ins").status_code == 403
    admin = app.test_client()
    page_login(admin, "admin", ADMIN_PASSWORD)
    html = admin.get("/admin/sign-ins?user=alice&outcome=failed").get_data(as_text=True)
    assert "wrong_password" in html and "1 event." in html
    for query in ("page=-3&outcome=bogus", f"page={10**30}", "page=x", "user=" + "%00" * 3):
        assert admin.get(f"/admin/sign-ins?{query}").status_code in (200, 400), query


def test_the_sign_ins_api_pages_and_filters(app: Flask, client: FlaskClient,
                                            alice: str) -> None:
    for _ in range(3):
        client.post("/api/auth/login", json={"username": alice, "password": "nope nope"})
    login(client, alice)
    client.post("/api/auth/login", json={"username": "ghost", "password": "whatever"})
    token = login(client, "admin", ADMIN_PASSWORD)["accessToken"]

    def listed(query: str) -> dict[str, Any]:
        response = client.get(f"/api/auth/signins{query}", headers=bearer_header(token))
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    everything = listed("")
    assert secret_keys(everything) == []
    newest = everything["items"][0]
    assert (newest["username"], newest["succeeded"], newest["method"]) == ("admin", True,
                                                                           "password")
    failed = listed("?user=alice&succeeded=false")
    assert failed["count"] == 3
    assert {item["reason"] for item in failed["items"]} == {"wrong_password"}
    ghost = listed("?user=ghost")["items"]
    assert [(item["userID"], item["reason"]) for item in ghost] == [(None, "unknown_user")]
    page = listed("?user=alice&$top=2&$skip=1")
    assert page["count"] == 4 and len(page["items"]) == 2
    assert page["items"] == listed("?user=alice")["items"][1:3]
    assert listed("?user=alice&succeeded=true")["items"][0]["address"] == "127.0.0.1"


def test_the_sign_ins_api_refuses_bad_queries(client: FlaskClient) -> None:
    token = login(client, "admin", ADMIN_PASSWORD)["accessToken"]
    for query in ("$top=0", "$top=501", "$skip=-1", "succeeded=maybe", "user=" + "x" * 300,
                  "$top=abc", f"$skip={10**20}"):
        response = client.get(f"/api/auth/signins?{query}", headers=bearer_header(token))
        problem(response, 400, "validation_failed")
