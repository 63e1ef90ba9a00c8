"""Fixtures and helpers of the entity page tests: a signed-in author, her API client, a
sample, another department, and readers for the HTML the pages answer."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from html import unescape
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import event
from werkzeug.test import TestResponse

from labapp.db import db, transaction
from labapp.model.access import DepartmentAccess
from tests.conftest import ADMIN_PASSWORD, ApiClient
from tests.helpers.pages import page_login

AUTHOR = "alice"
ROW_LINK = re.compile(r'<td><a href="/entities/Sample/([^"]+)">')


def html_of(response: TestResponse) -> str:
    return response.get_data(as_text=True)


def row_ids(response: TestResponse) -> list[str]:
    """The ids in the rows of a Sample table, in order."""
    return ROW_LINK.findall(html_of(response))


def input_value(html: str, name: str) -> str:
    """The value of the input called ``name`` of an entity form."""
    match = re.search(rf'<input id="field-{name}" name="{name}" type="[^"]+" value="([^"]*)"',
                      html)
    assert match, f"no input {name}"
    return unescape(match.group(1))


def hidden(html: str, name: str) -> str:
    """The value of the first hidden input called ``name``."""
    match = re.search(rf'<input type="hidden" name="{name}" value="([^"]*)"', html)
    assert match, f"no hidden input {name}"
    return unescape(match.group(1))


def save(api: ApiClient, *items: dict[str, Any], status: int = 201) -> list[dict[str, Any]]:
    """``POST /api/entity``; asserts ``status`` and returns the entities."""
    response = api.post("/api/entity", json={"entities": list(items)})
    assert response.status_code == status, response.get_json()
    return response.get_json()["entities"]


def fetch(api: ApiClient, eclass: str, entity_id: str) -> dict[str, Any]:
    """``GET /api/entity/{eClass}/{id}``, asserting 200."""
    response = api.get(f"/api/entity/{eclass}/{entity_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def grant(app: Flask, user: str, department: str, access: str) -> None:
    """Give ``user`` Read or Write on ``department``."""
    with app.app_context(), transaction() as session:
        session.add(DepartmentAccess(department_id=department, user_id=user,
                                     access_type=access))


@contextmanager
def statements(app: Flask) -> Iterator[list[str]]:
    """The SQL statements the database receives inside the block, as they come."""
    seen: list[str] = []

    def record(_connection: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    with app.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def entity_reads(seen: list[str]) -> list[str]:
    """The statements among ``seen`` that read the ``entity`` table (not the login's own)."""
    return [statement for statement in seen
            if re.search(r"\bFROM entity\b", statement) and "login_session" not in statement]


@pytest.fixture
def author(make_user: Callable[..., str]) -> str:
    """alice, a member of the default department without roles."""
    return make_user(AUTHOR, name="Alice Liddell")


@pytest.fixture
def api(api_as: Callable[..., ApiClient], author: str) -> ApiClient:
    """The author through the API, to make the data the pages show."""
    return api_as(author)


@pytest.fixture
def signed_in(client: FlaskClient, author: str) -> FlaskClient:
    """A client logged in as the author through the login form."""
    assert page_login(client, author).status_code == 303
    return client


@pytest.fixture
def sample(api: ApiClient) -> dict[str, Any]:
    """A Sample of the author with two attributes."""
    return save(api, {"eClass": "Sample", "name": "Broth", "amount": 2.5,
                      "attributes": {"ph": 7.2, "colour": "amber"}})[0]


@pytest.fixture
def other_department(api_as: Callable[..., ApiClient]) -> str:
    """A second department, made by the administrator."""
    admin = api_as("admin", password=ADMIN_PASSWORD)
    return save(admin, {"eClass": "Department", "name": "Elsewhere"})[0]["id"]
