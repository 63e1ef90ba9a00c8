"""The HTML pages through the test client: login, logout, home and profile."""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from labapp.db import db
from labapp.model import LoginFailure
from tests.conftest import PASSWORD, basic_header, csrf_of, login
from tests.helpers.pages import HTMX, page_login, post_form

NEW_PASSWORD = "a brand new passphrase"
PAT_VALUE = re.compile(r'id="new-pat-value">(PAT[^<]+)<')


def auth_user(app: Flask, headers: dict[str, str]) -> dict[str, Any]:
    """``/api/auth/user`` for a request carrying only ``headers``."""
    response = app.test_client(use_cookies=False).get("/api/auth/user", headers=headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def create_pat_via_form(client: FlaskClient, name: str = "export") -> str:
    response = post_form(client, "/profile/pat", {"name": name})
    assert response.status_code == 201
    return PAT_VALUE.search(response.get_data(as_text=True)).group(1)


def pat_ids(client: FlaskClient) -> dict[str, str]:
    """The client's PATs as {name: id}, read through the API with the session cookie."""
    return {pat["name"]: pat["id"] for pat in client.get("/api/user/pat").get_json()}


@pytest.fixture
def alice(make_user) -> str:
    return make_user("alice", name="Alice Liddell", roles=["DATA_MANAGER"])


@pytest.fixture
def browser(client: FlaskClient, alice: str) -> FlaskClient:
    """A client logged in as alice through the login form."""
    assert page_login(client, alice).status_code == 303
    return client


# ---- Login ------------------------------------------------------------------------------------

def test_login_page_carries_the_csrf_token_of_the_browser(client):
    response = client.get("/login")
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    assert f'name="csrf_token" value="{csrf_of(client)}"' in html
    assert 'name="username"' in html and 'name="keep_alive"' in html


def test_head_of_the_login_page_is_200_without_a_body(client):
    """Uptime monitors send HEAD: it answers like GET, with the headers and no body."""
    get = client.get("/login")
    head = client.head("/login")
    assert head.status_code == 200
    assert head.get_data() == b""
    assert head.headers["Content-Type"] == get.headers["Content-Type"]
    assert head.headers["Cache-Control"] == "no-store"


def test_the_favicon_is_linked_and_served(client):
    """Every page links the SVG icon, and ``/favicon.ico`` (asked by browsers and tools that
    read no ``<link>``) answers it too, so no first load logs a 404."""
    html = client.get("/login").get_data(as_text=True)
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    linked = client.get("/static/favicon.svg")
    legacy = client.get("/favicon.ico")
    assert linked.status_code == legacy.status_code == 200
    assert legacy.mimetype == "image/svg+xml"
    assert legacy.get_data() == linked.get_data()
    assert legacy.get_data().startswith(b"<svg")
    linked.close()
    legacy.close()


def test_login_without_csrf_token_is_forbidden(client, alice):
    client.get("/login")
    response = client.post("/login", data={"username": alice, "password": PASSWORD})
    assert response.status_code == 403
    assert "CSRF" in response.get_data(as_text=True)
    assert client.get_cookie("labapp_session") is None


def test_wrong_password_shows_an_inline_error_and_sets_no_cookie(client, alice):
    response = page_login(client, alice, "not the password")
    html = response.get_data(as_text=True)
    assert response.status_code == 401
    assert "Invalid username or password." in html
    assert f'value="{alice}"' in html
    assert client.get_cookie("labapp_session") is None
    assert "WWW-Authenticate" not in response.headers


def test_empty_fields_are_400_with_inline_errors(client):
    response = page_login(client, "", "")
    html = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "Enter your username." in html and "Enter your password." in html


def test_nul_in_a_form_field_is_a_400_page_and_no_login(client):
    response = page_login(client, "al\x00ice")
    assert response.status_code == 400
    assert response.mimetype == "text/html"
    assert "NUL characters are not allowed" in response.get_data(as_text=True)
    assert client.get_cookie("labapp_session") is None


def test_too_many_failures_are_429_with_retry_after(app, client, alice):
    limit = app.config["LABAPP"]["LOGIN_MAX_FAILURES"]
    for _ in range(limit):
        assert page_login(client, alice, "wrong password").status_code == 401
    response = page_login(client, alice, PASSWORD)
    assert response.status_code == 429
    assert int(response.headers["Retry-After"]) >= 1
    assert "Too many failed login attempts" in response.get_data(as_text=True)
    assert client.get_cookie("labapp_session") is None


def test_right_password_sets_cookies_and_goes_home(app, client, alice):
    client.get("/login")
    before = csrf_of(client)
    response = page_login(client, alice, keep_alive="1")
    assert response.status_code == 303
    assert response.headers["Location"] == "/"
    assert csrf_of(client) != before
    session = client.get_cookie("labapp_session")
    assert session is not None and session.expires is not None
    assert client.get_cookie("labapp_refresh", path="/api/auth") is not None
    assert auth_user(app, {"Cookie": f"labapp_session={session.value}"})["method"] == "cookie"


def test_login_returns_to_a_local_next(client, alice):
    response = page_login(client, alice, next="/profile")
    assert response.headers["Location"] == "/profile"


@pytest.mark.parametrize("target", ["//evil.example", "https://evil.example",
                                    "/\\evil.example", "/\t/evil.example", "evil.example"])
def test_next_never_leaves_the_site(client, alice, target):
    page = client.get("/login", query_string={"next": target}).get_data(as_text=True)
    assert 'name="next"' not in page
    response = page_login(client, alice, next=target)
    assert response.status_code == 303
    assert response.headers["Location"] == "/"


def test_login_page_redirects_when_already_logged_in(browser):
    response = browser.get("/login")
    assert response.status_code == 302
    assert response.headers["Location"] == "/"


# ---- Logout -----------------------------------------------------------------------------------

def test_logout_revokes_the_login_of_the_cookie(app, browser):
    cookie = {"Cookie": f"labapp_session={browser.get_cookie('labapp_session').value}"}
    assert auth_user(app, cookie)["contextUser"]["isAuthenticated"] is True
    response = post_form(browser, "/logout")
    assert response.status_code == 303
    assert response.headers["Location"] == "/login"
    assert browser.get_cookie("labapp_session") is None
    assert "You have been logged out." in browser.get("/login").get_data(as_text=True)
    assert auth_user(app, cookie)["contextUser"]["isAuthenticated"] is False


def test_logout_needs_the_csrf_token(browser):
    response = browser.post("/logout")
    assert response.status_code == 403
    assert browser.get("/profile").status_code == 200


# ---- Home -------------------------------------------------------------------------------------

def test_home_sends_anonymous_visitors_to_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response.headers["Location"] == "/login"


def test_home_welcomes_the_user_and_links_the_profile(browser):
    html = browser.get("/").get_data(as_text=True)
    assert "Welcome, Alice Liddell" in html
    assert 'href="/profile"' in html
    assert 'id="logout-button"' in html


# ---- Profile ----------------------------------------------------------------------------------

def test_profile_requires_login(client):
    response = client.get("/profile")
    assert response.status_code == 302
    location = urlsplit(response.headers["Location"])
    assert location.path == "/login"
    assert parse_qs(location.query) == {"next": ["/profile"]}


@pytest.mark.parametrize(("current", "back_to"), [
    # A dashboard's widget loaded after the login ended: back to the dashboard, not the widget.
    ("http://localhost/dashboards/d1?edit=1", "/dashboards/d1?edit=1"),
    # The home page needs no next; a page of another site, or none, falls back to the request.
    ("http://localhost/", None),
    ("https://evil.example/dashboards/d1", "/dashboards/d1/widget/4?heading=4"),
    ("", "/dashboards/d1/widget/4?heading=4"),
    ("http://local\x01host/x", "/dashboards/d1/widget/4?heading=4"),
])
def test_an_htmx_fragment_of_an_anonymous_visitor_brings_them_back_to_its_page(
        client, current, back_to):
    response = client.get("/dashboards/d1/widget/4?heading=4",
                          headers={**HTMX, "HX-Current-URL": current})
    assert response.status_code == 204
    location = urlsplit(response.headers["HX-Redirect"])
    assert location.path == "/login"
    assert parse_qs(location.query).get("next") == ([back_to] if back_to else None)


def test_htmx_request_of_an_anonymous_visitor_redirects_the_whole_page(client):
    client.get("/login")
    response = post_form(client, "/profile/pat", {"name": "x"}, headers=HTMX)
    assert response.status_code == 204
    assert response.headers["HX-Redirect"] == "/login?next=/profile"


def test_profile_shows_the_account(browser):
    response = browser.get("/profile")
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    assert "Alice Liddell" in html and "<code>alice</code>" in html
    assert "Administration" in html and "DATA_MANAGER" in html
    assert "You have no personal access tokens." in html


def test_password_change(app, browser, alice):
    response = post_form(browser, "/profile/password", {
        "current_password": PASSWORD, "new_password": NEW_PASSWORD,
        "repeat_password": NEW_PASSWORD})
    assert response.status_code == 303
    assert response.headers["Location"] == "/profile"
    page = browser.get("/profile")
    assert page.status_code == 200, "this login survives the change"
    assert "Your password has been changed." in page.get_data(as_text=True)
    assert auth_user(app, basic_header(alice, NEW_PASSWORD))["method"] == "basic"
    assert app.test_client().get("/api/auth/user",
                                 headers=basic_header(alice, PASSWORD)).status_code == 401


@pytest.mark.parametrize(("new", "repeat", "field", "message"), [
    (NEW_PASSWORD, NEW_PASSWORD + "x", "repeat_password", "does not match"),
    ("short", "short", "new_password", "must be at least 10 characters long"),
    ("", "", "new_password", "Enter a new password."),
])
def test_password_change_errors_are_inline(app, browser, alice, new, repeat, field, message):
    response = post_form(browser, "/profile/password", {
        "current_password": PASSWORD, "new_password": new, "repeat_password": repeat})
    html = response.get_data(as_text=True)
    assert response.status_code == 400
    assert f'<p class="field-error" id="{field}-error">{message}</p>' in html
    assert auth_user(app, basic_header(alice, PASSWORD))["method"] == "basic"


def test_wrong_current_password_counts_as_a_failed_login(app, browser, alice):
    response = post_form(browser, "/profile/password", {
        "current_password": "not my password", "new_password": NEW_PASSWORD,
        "repeat_password": NEW_PASSWORD})
    assert response.status_code == 400
    assert "The current password is not correct." in response.get_data(as_text=True)
    with app.app_context():
        failures = db.session.scalar(select(func.count()).select_from(LoginFailure)
                                     .where(LoginFailure.username == alice))
    assert failures == 1
    assert auth_user(app, basic_header(alice, PASSWORD))["method"] == "basic"


def test_pat_created_by_form_is_shown_once_and_works(app, browser, alice):
    response = post_form(browser, "/profile/pat", {"name": "plate reader"})
    html = response.get_data(as_text=True)
    assert response.status_code == 201
    assert "<html" in html and "Copy it now; it will not be shown again" in html
    value = PAT_VALUE.search(html).group(1)
    reloaded = browser.get("/profile").get_data(as_text=True)
    assert value not in reloaded and 'id="new-pat-value"' not in reloaded
    assert "plate reader" in reloaded
    assert auth_user(app, basic_header(alice, value))["method"] == "pat"


def test_pat_created_through_htmx_returns_only_the_section(app, browser, alice):
    response = post_form(browser, "/profile/pat", {"name": "htmx"}, headers=HTMX)
    html = response.get_data(as_text=True)
    assert response.status_code == 201
    assert "<html" not in html and "Your profile" not in html
    assert html.lstrip().startswith('<section class="card" id="pat-section"')
    assert "HX-Request" in response.headers["Vary"]
    assert auth_user(app, basic_header(alice, PAT_VALUE.search(html).group(1)))["method"] == "pat"


def test_pat_with_an_expiry_date_lists_it(browser):
    day = datetime.now(UTC).date() + timedelta(days=30)
    response = post_form(browser, "/profile/pat", {"name": "dated", "expires": day.isoformat()})
    assert response.status_code == 201
    assert f"{day + timedelta(days=1):%Y-%m-%d} 00:00 UTC" in response.get_data(as_text=True)


@pytest.mark.parametrize(("data", "field", "message"), [
    ({"name": "  "}, "pat-name", "Enter a name for the token."),
    ({"name": "x" * 256}, "pat-name", "Length must be between 1 and 255."),
    ({"name": "old", "expires": "2001-01-01"}, "pat-expires", "must lie in the future"),
    ({"name": "bad date", "expires": "tomorrow"}, "pat-expires", "Enter a date as YYYY-MM-DD."),
])
def test_pat_errors_are_inline(browser, data, field, message):
    response = post_form(browser, "/profile/pat", data)
    html = response.get_data(as_text=True)
    assert response.status_code == 400
    assert f'<p class="field-error" id="{field}-error">{message}</p>' in html
    assert pat_ids(browser) == {}


def test_pat_errors_through_htmx_return_the_section(browser):
    response = post_form(browser, "/profile/pat", {"name": ""}, headers=HTMX)
    html = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "<html" not in html and "Enter a name for the token." in html


def test_revoked_pat_stops_working(app, browser, alice):
    value = create_pat_via_form(browser, "script")
    pat_id = pat_ids(browser)["script"]
    response = post_form(browser, f"/profile/pat/{pat_id}/revoke")
    assert response.status_code == 303
    assert response.headers["Location"] == "/profile"
    assert "The token has been revoked" in browser.get("/profile").get_data(as_text=True)
    assert app.test_client().get("/api/auth/user",
                                 headers=basic_header(alice, value)).status_code == 401


def test_revoke_through_htmx_returns_the_section_without_the_token(browser):
    create_pat_via_form(browser, "keep")
    create_pat_via_form(browser, "drop")
    ids = pat_ids(browser)
    response = post_form(browser, f"/profile/pat/{ids['drop']}/revoke", headers=HTMX)
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "<html" not in html
    assert f'id="pat-{ids["keep"]}"' in html and f'id="pat-{ids["drop"]}"' not in html
    assert set(pat_ids(browser)) == {"keep"}


def test_revoking_another_users_pat_is_404(app, make_user, browser):
    make_user("bob")
    bob = app.test_client()
    login(bob, "bob")
    create_pat_via_form(bob, "bob's")
    bob_pat = pat_ids(bob)["bob's"]
    response = post_form(browser, f"/profile/pat/{bob_pat}/revoke")
    assert response.status_code == 404
    assert "Not found" in response.get_data(as_text=True)
    assert "bob's" in pat_ids(bob)
    assert post_form(browser, "/profile/pat/pat_%00/revoke").status_code == 400
