"""The web shell in real headless Chromium against a live server on a committed database.

Runs in the SQLite pass only. Without /usr/bin/chromium the tests are skipped locally but fail
under CI=true, where a missing browser means a broken machine, not a reason to skip.
"""
from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest
from flask import Flask
from playwright.sync_api import Browser, Page, expect, sync_playwright
from werkzeug.serving import make_server

from labapp.db import transaction
from labapp.users.service import create_user
from tests.conftest import BACKEND, DEFAULT_DEPARTMENT, PASSWORD, basic_header, run_init

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
IN_CI = os.environ.get("CI") == "true"
USERNAME = "carol"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(BACKEND == "postgresql",
                       reason="browser tests run in the SQLite pass only"),
    pytest.mark.skipif(not CHROMIUM.exists() and not IN_CI,
                       reason=f"{CHROMIUM} is missing (apt-get install -y chromium)"),
]


@pytest.fixture
def live_server(fresh_app: Callable[..., Flask]) -> Iterator[str]:
    """The base URL of a server running a freshly initialised app with the user carol."""
    app = fresh_app()
    run_init(app)
    with app.app_context(), transaction():
        create_user(username=USERNAME, name="Carol Chemist", department_id=DEFAULT_DEPARTMENT,
                    password=PASSWORD, created_by="admin")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="live-server")
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.fixture
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing; CI=true requires it (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(live_server: str, browser: Browser) -> Iterator[Page]:
    """A page in a new browser context; the server outlives the browser."""
    context = browser.new_context(base_url=live_server)
    try:
        yield context.new_page()
    finally:
        context.close()


def whoami(base_url: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """Status and body of ``GET /api/auth/user`` on the live server with ``headers``."""
    request = Request(f"{base_url}/api/auth/user", headers=headers)
    try:
        with urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except HTTPError as error:
        with error:
            return error.code, json.load(error)


def log_in(page: Page, base_url: str) -> None:
    """Log in through the form and land on the home page."""
    page.goto("/login")
    page.fill("#username", USERNAME)
    page.fill("#password", PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{base_url}/")


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
