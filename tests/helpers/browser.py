"""The browser tests' ways in: logging in through the form, viewport sizes, and data made
through the live server's API (entities as the administrator, storage locations and
check-ins, any call as the default browser user)."""
from __future__ import annotations

import json
from typing import Any
from urllib.request import Request, urlopen

from playwright.sync_api import Page

from tests.browser.conftest import USERNAME, create_entities
from tests.conftest import ADMIN_PASSWORD, PASSWORD, basic_header

DESKTOP, TABLET = {"width": 1366, "height": 900}, {"width": 768, "height": 1024}


def log_in_as(page: Page, base_url: str, username: str, password: str) -> None:
    """Log in through the form and land on the home page."""
    page.goto("/login")
    page.fill("#username", username)
    page.fill("#password", password)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{base_url}/")


def seed(base_url: str, *items: dict[str, Any]) -> list[dict[str, Any]]:
    """Create ``items`` through ``POST /api/entity`` on the live server as the administrator."""
    return create_entities(base_url, *items, username="admin", password=ADMIN_PASSWORD)


def live_api(base_url: str, method: str, path: str, body: Any = None) -> Any:
    """``method path`` on the live server's API as the default browser user (carol), asserting
    200 or 201; the decoded JSON answer."""
    request = Request(f"{base_url}{path}", method=method,
                      data=None if body is None else json.dumps(body).encode(),
                      headers={"Content-Type": "application/json",
                               **basic_header(USERNAME, PASSWORD)})
    with urlopen(request, timeout=10) as response:
        assert response.status in (200, 201)
        return json.load(response)


def live_post(base_url: str, path: str, body: Any, status: int, username: str = USERNAME,
              password: str = PASSWORD) -> Any:
    """``POST path`` with the JSON ``body`` on the live server as ``username``, asserting
    ``status``; the decoded JSON answer."""
    request = Request(f"{base_url}{path}", data=json.dumps(body).encode(), method="POST",
                      headers={"Content-Type": "application/json",
                               **basic_header(username, password)})
    with urlopen(request, timeout=10) as response:
        assert response.status == status
        return json.load(response)


def create_locations(base_url: str, *items: dict) -> list[dict]:
    """Create storage locations (``#ref`` ids may link them) as the default browser user."""
    return live_post(base_url, "/api/storage/location", list(items), 201)


def check_in(base_url: str, location_id: str, items: list[dict], **login: str) -> None:
    """Check ``items`` in at the location; ``login`` is ``username``/``password`` of another
    user than the default browser user."""
    live_post(base_url, f"/api/storage/location/{location_id}/checkin", items, 200, **login)
