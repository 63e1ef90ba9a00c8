"""Directory sign-in in real headless Chromium (issue 35 §2, §5): a directory user signs in
through the login form, is an administrator by their group, opens Admin › Sign-in methods
and tests the LDAP connection (htmx swaps the result in), at 1366 and 768 px."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from flask import Flask
from playwright.sync_api import Browser, Page, expect

from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, watched_page
from tests.conftest import serving
from tests.helpers.browser import log_in_as
from tests.helpers.directory import (
    GROUPS,
    PEOPLE,
    READER_DN,
    Directory,
    group_dn,
    running_directory,
)

pytestmark = BROWSER_MARKS
WIDTHS = (1366, 768)


@pytest.fixture
def slapd(tmp_path: Path) -> Iterator[Directory]:
    with running_directory(tmp_path / "slapd") as directory:
        yield directory


@pytest.fixture
def directory_server(fresh_app: Callable[..., Flask], slapd: Directory) -> Iterator[str]:
    """A live server whose users sign in with ``slapd``; lab-admins are administrators."""
    app = fresh_app(initialised=True, SEARCH_DRAIN="before-search", LDAP_URL=slapd.url,
                    LDAP_BIND_DN=READER_DN, LDAP_BIND_PASSWORD=slapd.reader_password,
                    LDAP_USER_BASE=PEOPLE, LDAP_GROUP_BASE=GROUPS,
                    LDAP_GROUP_ROLES=f"{group_dn('lab-admins')}=>ADMIN")
    with serving(app) as base_url:
        yield base_url


@pytest.fixture
def page(directory_server: str, browser: Browser) -> Iterator[Page]:
    """A page of the directory server (no other live server is started)."""
    with watched_page(browser, base_url=directory_server) as new_page:
        yield new_page


@pytest.mark.parametrize("width", WIDTHS)
def test_a_directory_administrator_tests_the_connection(
        page: Page, slapd: Directory, directory_server: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    log_in_as(page, directory_server, "ada", slapd.people["ada"].password)
    page.goto("/admin")
    page.click("#admin-sign-in a")
    expect(page.locator("h1")).to_have_text("Sign-in methods")
    expect(page.locator("#method-ldap")).to_contain_text(slapd.url)
    expect(page.locator("#no-sync")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= "
                         "document.documentElement.clientWidth")

    page.focus("#ldap-test")
    page.keyboard.press("Enter")

    expect(page.locator("#ldap-test-result")).to_have_text(
        f"bind succeeded, {len(slapd.people)} users found")
    expect(page.locator("h1")).to_have_count(1)  # swapped in place, not a page in a page
    assert_no_serious_violations(page)


def test_a_wrong_directory_password_is_refused_on_the_form(
        page: Page, slapd: Directory, directory_server: str) -> None:
    page.goto(f"{directory_server}/login")
    page.fill("#username", "ada")
    page.fill("#password", "not-her-password")
    page.click("#login-form button[type=submit]")

    expect(page.locator("#login-error")).to_have_text("Invalid username or password.")
