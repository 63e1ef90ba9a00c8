"""Real headless Chromium against a live server on a committed database.

Browser tests run in the SQLite pass only. Without /usr/bin/chromium they are skipped locally
but fail under CI=true, where a missing browser means a broken machine, not a reason to skip.
Each test module sets ``pytestmark = BROWSER_MARKS``. Every page a test drives through the
``page`` fixture fails the test when the browser reports a Content-Security-Policy violation.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import pytest
from flask import Flask
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, sync_playwright

from labapp.db import transaction
from labapp.users.service import create_user
from tests.conftest import (
    BACKEND,
    DEFAULT_DEPARTMENT,
    PASSWORD,
    basic_header,
    serving,
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
IN_CI = os.environ.get("CI") == "true"
USERNAME = "carol"

BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.skipif(BACKEND == "postgresql",
                       reason="browser tests run in the SQLite pass only"),
    pytest.mark.skipif(not CHROMIUM.exists() and not IN_CI,
                       reason=f"{CHROMIUM} is missing (apt-get install -y chromium)"),
]


@pytest.fixture
def live_app(fresh_app: Callable[..., Flask]) -> Flask:
    """A freshly initialised app with the user carol (the one :func:`live_server` serves),
    indexing for search when a search request comes (as the suite's shared application)."""
    app = fresh_app(initialised=True, SEARCH_DRAIN="before-search")
    with app.app_context(), transaction():
        create_user(username=USERNAME, name="Carol Chemist", department_id=DEFAULT_DEPARTMENT,
                    password=PASSWORD, created_by="admin")
    return app


@pytest.fixture
def live_server(live_app: Flask) -> Iterator[str]:
    """The base URL of a server running :func:`live_app`."""
    with serving(live_app) as base_url:
        yield base_url


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One Chromium per test process: each test gets a new context (cookies, storage)."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing; CI=true requires it (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def is_csp_violation(message: ConsoleMessage) -> bool:
    """Whether Chromium's console message reports a blocked resource, script or style."""
    return message.type == "error" and "Content Security Policy" in message.text


def watch_csp(context: BrowserContext) -> list[str]:
    """The CSP violations any page of ``context`` reports on its console, as they come."""
    violations: list[str] = []

    def record(message: ConsoleMessage) -> None:
        if is_csp_violation(message):
            violations.append(f"{message.page.url if message.page else '?'}: {message.text}")

    context.on("console", record)
    return violations


@contextmanager
def watched_page(browser: Browser, **context_options: Any) -> Iterator[Page]:
    """A page in a new browser context made with ``context_options``; fails the test when any
    page of the context reports a Content-Security-Policy violation."""
    context = browser.new_context(**context_options)
    violations = watch_csp(context)
    try:
        yield context.new_page()
    finally:
        context.close()
    assert violations == [], "Content-Security-Policy violations"


@pytest.fixture
def page(live_server: str, browser: Browser) -> Iterator[Page]:
    """A page in a new browser context (see :func:`watched_page`); the server outlives the
    browser."""
    with watched_page(browser, base_url=live_server) as new_page:
        yield new_page


def log_in(page: Page, base_url: str) -> None:
    """Log in as carol through the form and land on the home page."""
    page.goto("/login")
    page.fill("#username", USERNAME)
    page.fill("#password", PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{base_url}/")


def create_entities(base_url: str, *items: dict[str, Any], username: str = USERNAME,
                    password: str = PASSWORD) -> list[dict[str, Any]]:
    """Create ``items`` through ``POST /api/entity`` on the live server (as carol)."""
    body = json.dumps({"entities": list(items)}).encode()
    request = Request(f"{base_url}/api/entity", data=body, method="POST",
                      headers={"Content-Type": "application/json",
                               **basic_header(username, password)})
    with urlopen(request, timeout=10) as response:
        assert response.status == 201
        return json.load(response)["entities"]
