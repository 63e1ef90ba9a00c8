"""The "Sign-in methods" administration page: what is configured, the LDAP connection test,
the latest directory syncs, and who may open it (ADMIN only)."""
from __future__ import annotations

import re
from collections.abc import Callable

from flask import Flask
from flask.testing import FlaskCliRunner

from tests.conftest import ADMIN_PASSWORD, PASSWORD
from tests.directory.conftest import Settings
from tests.helpers.directory import Directory, Person
from tests.helpers.pages import HTMX, html, page_login, post_form


def admin_browser(app: Flask):
    client = app.test_client()
    assert page_login(client, "admin", ADMIN_PASSWORD).status_code == 303
    return client


def test_the_page_shows_local_passwords_and_the_directory(app: Flask,
                                                          ldap_on: Directory) -> None:
    page = html(admin_browser(app), "/admin/sign-in-methods")

    assert "Local passwords" in page
    assert "LDAP / Active Directory" in page
    assert ldap_on.url in page
    assert "ou=people,dc=example,dc=org" in page
    assert 'id="ldap-test"' in page
    assert 'id="no-sync"' in page


def test_the_page_says_when_ldap_is_off(app: Flask) -> None:
    page = html(admin_browser(app), "/admin/sign-in-methods")

    assert "Off: set LABAPP_LDAP_URL" in page
    assert 'id="ldap-test"' not in page
    assert "Off: set LABAPP_OIDC_PROVIDERS" in page


def test_the_connection_test_binds_and_counts_the_users(app: Flask, ldap_on: Directory) -> None:
    browser = admin_browser(app)
    html(browser, "/admin/sign-in-methods")

    response = post_form(browser, "/admin/sign-in-methods/ldap/test", headers=HTMX)

    assert response.status_code == 200
    text = response.get_data(as_text=True)
    assert f"bind succeeded, {len(ldap_on.people)} users found" in text
    assert "<h1>" not in text  # only the result, for htmx to swap in


def test_the_connection_test_without_htmx_answers_the_whole_page(
        app: Flask, ldap_on: Directory) -> None:
    browser = admin_browser(app)
    html(browser, "/admin/sign-in-methods")

    text = post_form(browser, "/admin/sign-in-methods/ldap/test").get_data(as_text=True)

    assert "<h1>Sign-in methods</h1>" in text and "bind succeeded" in text


def test_the_connection_test_says_why_it_failed(app: Flask, settings: Settings,
                                                ldap_on: Directory) -> None:
    settings.set(LDAP_BIND_PASSWORD="wrong")
    browser = admin_browser(app)
    html(browser, "/admin/sign-in-methods")

    text = post_form(browser, "/admin/sign-in-methods/ldap/test",
                     headers=HTMX).get_data(as_text=True)

    assert "refused labapp&#39;s own bind" in text
    assert "flash-error" in text


def test_the_page_shows_the_last_sync_and_its_changes(
        app: Flask, runner: FlaskCliRunner, person: Callable[..., Person],
        ldap_on: Directory) -> None:
    someone = person()
    assert runner.invoke(args=["users", "sync", "--dry-run"]).exit_code == 0
    assert runner.invoke(args=["users", "sync"]).exit_code == 0

    page = html(admin_browser(app), "/admin/sign-in-methods")

    last = page[page.index('id="last-sync"'):]
    assert re.search(r"\d+ created, 0 updated, 0 deactivated", last)
    assert f"<td>create</td><td>{someone.uid}</td>" in last
    assert "(dry run)" in page[page.index('id="earlier-syncs"'):]


def test_only_administrators_open_the_page(app: Flask, make_user: Callable[..., str],
                                           ldap_on: Directory) -> None:
    make_user("manager", roles=["DATA_MANAGER"])
    member = app.test_client()
    assert page_login(member, "manager", PASSWORD).status_code == 303

    assert member.get("/admin/sign-in-methods").status_code == 403
    html(member, "/admin/sign-in-methods", 403)
    assert post_form(member, "/admin/sign-in-methods/ldap/test").status_code == 403
    anonymous = app.test_client().get("/admin/sign-in-methods")
    assert anonymous.status_code == 302 and "/login" in anonymous.headers["Location"]
    assert app.test_client().post("/admin/sign-in-methods/ldap/test").status_code == 403


def test_the_admin_overview_links_the_page(app: Flask) -> None:
    page = html(admin_browser(app), "/admin")

    assert 'href="/admin/sign-in-methods"' in page
