"""The web shell in real headless Chromium: login, personal access tokens, logout, and the
forms without JavaScript (fixtures and skip rules in ``conftest.py``)."""
from __future__ import annotations

import json
import re
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import BROWSER_MARKS, USERNAME, log_in
from tests.conftest import PASSWORD, basic_header

pytestmark = BROWSER_MARKS


def whoami(base_url: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """Status and body of ``GET /api/auth/user`` on the live server with ``headers``."""
    request = Request(f"{base_url}/api/auth/user", headers=headers)
    try:
        with urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except HTTPError as error:
        with error:
            return error.code, json.load(error)


def test_login_pat_and_logout(page: Page, live_server: str) -> None:
    page.goto("/profile")
    page.wait_for_url(re.compile(r"/login\?next=/profile$"))
    page.fill("#username", USERNAME)
    page.fill("#password", PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{live_server}/profile")
    expect(page.locator("#account")).to_contain_text("Carol Chemist")

    page.fill("#pat-name", "browser script")
    page.click("#pat-create button[type=submit]")
    secret = page.locator("#new-pat-value")
    expect(secret).to_have_text(re.compile(r"^PAT\S{20,}$"))
    pat = secret.inner_text().strip()
    assert page.url == f"{live_server}/profile", "htmx swapped the section in place"
    expect(page.locator("#pat-table")).to_contain_text("browser script")

    status, body = whoami(live_server, basic_header(USERNAME, pat))
    assert (status, body["method"]) == (200, "pat")

    page.reload()
    expect(page.locator("#pat-table")).to_contain_text("browser script")
    expect(page.locator("#new-pat-value")).to_have_count(0)

    cookies = {cookie["name"]: cookie for cookie in page.context.cookies()}
    assert cookies["labapp_session"]["httpOnly"] is True
    old_session = {"Cookie": f"labapp_session={cookies['labapp_session']['value']}"}
    assert whoami(live_server, old_session)[1]["contextUser"]["isAuthenticated"] is True

    page.click("#logout-button")
    page.wait_for_url(f"{live_server}/login")
    expect(page.locator(".flash")).to_have_text("You have been logged out.")

    status, body = whoami(live_server, basic_header(USERNAME, pat))
    assert (status, body["method"], body["contextUser"]["name"]) == (200, "pat", USERNAME)
    status, body = whoami(live_server, old_session)
    assert status == 200
    assert body["contextUser"]["isAuthenticated"] is False


def test_once_the_logout_is_sent_htmx_answers_are_left_alone(page: Page,
                                                             live_server: str) -> None:
    """A widget or the bell asked for while the logout is on its way finds the login ended
    and answers HX-Redirect to the login page. Following it cancelled the logout's own
    answer (CI, 2026-11-29): no "logged out" message, and for a provider's user no offer to
    sign out of the provider too. Here the logout form's submit event is sent without
    submitting (an untrusted event), then such an answer comes: htmx must leave it alone."""
    log_in(page, live_server)
    page.route("**/notifications/bell?after-logout", lambda route: route.fulfill(
        status=204, headers={"HX-Redirect": "/login?next=%2Fentities"}))
    followed = page.evaluate("""async () => {
        const form = document.querySelector("form[data-ends-login]");
        form.dispatchEvent(new Event("submit", {bubbles: true, cancelable: true}));
        let followed = true;
        document.addEventListener("htmx:beforeOnLoad", (event) => {
            followed = !event.defaultPrevented;
        }, {once: true});
        await htmx.ajax("GET", "/notifications/bell?after-logout",
                        {target: "#bell-count", swap: "outerHTML"});
        return followed;
    }""")

    assert followed is False
    assert page.url == f"{live_server}/"
    page.click("#logout-button")
    page.wait_for_url(f"{live_server}/login")
    expect(page.locator(".flash")).to_have_text("You have been logged out.")


def test_pat_errors_inline_and_revoke_in_place(page: Page, live_server: str) -> None:
    log_in(page, live_server)
    page.click("#profile-card-link")
    page.wait_for_url(f"{live_server}/profile")

    page.fill("#pat-name", "   ")
    page.click("#pat-create button[type=submit]")
    expect(page.locator("#pat-name-error")).to_have_text("Enter a name for the token.")
    expect(page.locator("#htmx-error")).to_have_count(0)

    page.fill("#pat-name", "short-lived")
    page.click("#pat-create button[type=submit]")
    pat = page.locator("#new-pat-value").inner_text().strip()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke short-lived").click()
    expect(page.locator("#pat-section .flash-success")).to_contain_text("has been revoked")
    expect(page.locator("#no-pats")).to_be_visible()
    assert page.url == f"{live_server}/profile"
    assert whoami(live_server, basic_header(USERNAME, pat))[0] == 401


def test_forms_work_without_javascript(live_server: str, browser: Browser) -> None:
    context = browser.new_context(base_url=live_server, java_script_enabled=False)
    try:
        page = context.new_page()
        log_in(page, live_server)
        page.goto("/profile")
        page.fill("#pat-name", "no script")
        page.click("#pat-create button[type=submit]")
        page.wait_for_url(f"{live_server}/profile/pat")
        pat = page.locator("#new-pat-value").inner_text().strip()
        assert whoami(live_server, basic_header(USERNAME, pat))[1]["method"] == "pat"
    finally:
        context.close()
