"""Real headless Chromium against a live server on a committed database.

Browser tests run in the SQLite pass only. Without /usr/bin/chromium they are skipped locally
but fail under CI=true, where a missing browser means a broken machine, not a reason to skip.
Each test module sets ``pytestmark = BROWSER_MARKS``.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from flask import Flask
from playwright.sync_api import Browser, Page, sync_playwright
from werkzeug.serving import make_server

from labapp.db import transaction
from labapp.users.service import create_user
from tests.conftest import BACKEND, DEFAULT_DEPARTMENT, PASSWORD, run_init

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


def log_in(page: Page, base_url: str) -> None:
    """Log in as carol through the form and land on the home page."""
    page.goto("/login")
    page.fill("#username", USERNAME)
    page.fill("#password", PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{base_url}/")
