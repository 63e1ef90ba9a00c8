"""Signing in with OpenID Connect in real Chromium at 1366 and 768 px: the login page's
"Sign in with …" button, the provider's own page (npm ``oidc-provider``, started here), back
signed in; then logging out and taking the offered provider logout. Keyboard only on the
labapp pages."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from flask import Flask
from playwright.sync_api import Browser, Page, expect

from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, watched_page
from tests.conftest import serving
from tests.helpers.browser import DESKTOP, TABLET
from tests.oidc.provider_process import free_port, register_client, running_provider

pytestmark = BROWSER_MARKS


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with running_provider() as url:
        yield url


@pytest.fixture
def oidc_server(fresh_app: Callable[..., Flask], issuer: str) -> Iterator[str]:
    """A live server whose login page offers the provider; the port is chosen first, as the
    redirect URI registered at the provider names it."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    client = register_client(issuer, [f"{base_url}/login/oidc/testid/callback"],
                             [f"{base_url}/login"])
    providers = [{"name": "testid", "displayName": "Test ID", "issuer": issuer,
                  "clientId": client.client_id, "clientSecret": client.client_secret,
                  "defaultDepartment": "DEP00001", "createUsers": True}]
    app = fresh_app(initialised=True, SEARCH_DRAIN="before-search",
                    OIDC_PROVIDERS=json.dumps(providers))
    with serving(app, port) as url:
        yield url


@pytest.mark.parametrize("viewport", [DESKTOP, TABLET], ids=["1366", "768"])
def test_signing_in_and_out_with_the_provider(browser: Browser, oidc_server: str,
                                              issuer: str, viewport: dict[str, int]) -> None:
    with watched_page(browser, base_url=oidc_server, viewport=viewport) as page:
        page.goto("/login")
        button = page.get_by_role("link", name="Sign in with Test ID")
        expect(button).to_be_visible()
        expect(page.locator("#login-form")).to_be_visible()
        _fits(page)
        assert_no_serious_violations(page)
        button.focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"{issuer}/interaction/**")
        page.fill("#login", "alice")
        page.click("button[type=submit]")
        page.wait_for_url(f"{oidc_server}/")
        expect(page.get_by_role("navigation", name="Main")
               .get_by_role("link", name="Alice Anders")).to_be_visible()

        page.locator("#logout-button").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"{oidc_server}/login")
        offer = page.get_by_role("link", name="Sign out of Test ID too")
        expect(offer).to_be_visible()
        _fits(page)
        offer.click()
        page.wait_for_url(f"{issuer}/session/end**")
        page.get_by_role("button", name="Yes, sign me out").click()
        page.wait_for_url(f"{oidc_server}/login**")
        expect(page.get_by_role("link", name="Sign in with Test ID")).to_be_visible()


def _fits(page: Page) -> None:
    """Nothing on the page is wider than the window."""
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
