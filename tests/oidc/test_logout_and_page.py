"""The login page with providers (beside the password form or instead of it), and logging out
of a provider user: the local login ends and the provider's own logout is offered."""
from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest
import requests
from flask.testing import FlaskClient

from labapp.auth import oidc
from labapp.db import in_unit
from tests.conftest import ADMIN_PASSWORD, csrf_of
from tests.helpers.pages import page_login
from tests.oidc.conftest import APP_ORIGIN, LOGIN_PAGE, NAME, OidcLab


def test_logout_ends_the_login_and_offers_the_providers_logout(
        oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab()
    client = lab.app.test_client()
    with requests.Session() as browser:
        assert lab.sign_in("alice", client, at=browser).status_code == 303
        out = client.post("/logout", data={"csrf_token": csrf_of(client)})
        assert out.status_code == 303 and out.headers["Location"] == "/login"
        assert client.get("/api/user").status_code == 401
        page = client.get("/login").get_data(as_text=True)
        link = re.search(r'<a href="([^"]+)" id="end-session-link">Sign out of Test ID too</a>',
                         page)
        assert link is not None, page
        end_session = html.unescape(link.group(1))
        assert end_session.startswith(f"{lab.issuer}/session/end?")
        # The provider asks to confirm, then signs out and returns to the login page.
        confirm = browser.get(end_session, timeout=10)
        assert confirm.status_code == 200, confirm.text
        xsrf = re.search(r'name="xsrf" value="([^"]+)"', confirm.text)
        assert xsrf is not None, confirm.text
        done = browser.post(f"{lab.issuer}/session/end/confirm", timeout=10,
                            data={"xsrf": xsrf.group(1), "logout": "yes"},
                            allow_redirects=False)
        assert done.status_code in (302, 303), done.text
        assert done.headers["Location"].startswith(LOGIN_PAGE)
        # Signed out there too: the next sign-in asks for the account again.
        again = browser.get(f"{lab.issuer}/auth", timeout=10, params={
            "client_id": lab.client.client_id, "response_type": "code", "scope": "openid",
            "redirect_uri": f"{APP_ORIGIN}/login/oidc/{NAME}/callback",
            "code_challenge": "x" * 43, "code_challenge_method": "S256"})
        assert 'name="login"' in again.text
    # The offer is made once.
    assert "end-session-link" not in client.get("/login").get_data(as_text=True)


def test_a_local_users_logout_offers_no_provider_logout(
        oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab()
    client = lab.app.test_client()
    assert client.post("/api/auth/login", json={"username": "admin",
                                                "password": ADMIN_PASSWORD}).status_code == 200
    client.post("/logout", data={"csrf_token": csrf_of(client)})
    assert "end-session-link" not in client.get("/login").get_data(as_text=True)


def test_the_login_page_shows_each_provider_beside_the_password_form(
        oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab()
    page = lab.app.test_client().get("/login?next=/profile").get_data(as_text=True)
    assert f'href="/login/oidc/{NAME}?next=/profile"' in page
    assert "Sign in with Test ID" in page
    assert 'id="login-form"' in page


def test_the_password_form_can_be_hidden(oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab(settings={"LOGIN_PASSWORD_FORM": "false"})
    client = lab.app.test_client()
    page = client.get("/login").get_data(as_text=True)
    assert "Sign in with Test ID" in page
    assert 'id="login-form"' not in page
    # A local administrator still gets it, and password sign-in still works.
    assert 'id="login-form"' in client.get("/login?with=password").get_data(as_text=True)
    answer = client.post("/login", data={"csrf_token": csrf_of(client), "username": "admin",
                                         "password": ADMIN_PASSWORD})
    assert answer.status_code == 303


def test_without_providers_the_page_is_the_password_form(client: FlaskClient) -> None:
    page = client.get("/login").get_data(as_text=True)
    assert "sign-in-providers" not in page
    assert 'id="login-form"' in page


def test_the_sign_in_methods_page_lists_each_provider(
        oidc_lab: Callable[..., OidcLab]) -> None:
    """Issue 35 §5: the administrators' page shows what is configured."""
    lab = oidc_lab(createUsers=False)
    admin = lab.app.test_client()
    assert page_login(admin, "admin", ADMIN_PASSWORD).status_code == 303
    page = admin.get("/admin/sign-in-methods").get_data(as_text=True)
    assert "OpenID Connect" in page and lab.issuer in page
    assert f"client {lab.client.client_id}" in page and "unknown users refused" in page


def test_the_providers_logout_is_looked_up_with_no_unit_of_work_open(
        oidc_lab: Callable[..., OidcLab], monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that has not signed anyone in with the provider fetches its discovery
    document at logout: after the login has ended, with no unit of work open (an SQLite
    write unit would hold the write lock while the provider answers)."""
    lab = oidc_lab()
    client = lab.app.test_client()
    with requests.Session() as browser:
        assert lab.sign_in("alice", client, at=browser).status_code == 303
    with lab.app.app_context():
        provider_client = oidc._client(NAME)
    provider_client.server_metadata.pop("_loaded_at")  # forgotten, as by a fresh process
    fetched_in_a_unit: list[bool] = []
    fetch = type(provider_client).load_server_metadata

    def watched(self: Any) -> Any:
        fetched_in_a_unit.append(in_unit())
        return fetch(self)

    monkeypatch.setattr(type(provider_client), "load_server_metadata", watched)
    out = client.post("/logout", data={"csrf_token": csrf_of(client)})
    assert out.status_code == 303
    assert fetched_in_a_unit == [False]
    assert client.get("/api/user").status_code == 401
    assert "end-session-link" in client.get("/login").get_data(as_text=True)
