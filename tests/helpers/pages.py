"""Pages through the test client, as a browser asks for them: the login form, forms with
their CSRF token, htmx requests, and pieces of the HTML answered."""
from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from tests.conftest import PASSWORD, csrf_of

HTMX = {"HX-Request": "true"}


def page_login(client: FlaskClient, username: str, password: str = PASSWORD,
               **fields: Any):
    """Log in through the form, as a browser does: fetch the page, then post it."""
    client.get("/login")
    data = {"username": username, "password": password, "csrf_token": csrf_of(client), **fields}
    return client.post("/login", data=data)


def post_form(client: FlaskClient, path: str, data: dict[str, str] | None = None,
              headers: dict[str, str] | None = None):
    return client.post(path, data={"csrf_token": csrf_of(client), **(data or {})},
                       headers=headers)


def signed_in(app: Flask, username: str) -> FlaskClient:
    client = app.test_client()
    assert page_login(client, username).status_code == 303
    return client


def html(client: FlaskClient, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.get_data(as_text=True)[:2000]
    return response.get_data(as_text=True)


def html_of(response: TestResponse) -> str:
    """The body of ``response`` as text (the page, whatever its status)."""
    return response.get_data(as_text=True)


def section(html: str, element_id: str) -> str:
    """The element with this id, up to the end of its kind of element."""
    match = re.search(rf'<(\w+)[^>]* id="{element_id}"[^>]*>.*?</\1>', html, re.S)
    assert match, f"no #{element_id}"
    return match.group(0)
