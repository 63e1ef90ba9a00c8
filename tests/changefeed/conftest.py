"""A lab on a database of its own, with real commits (PostgreSQL numbers a change only as
its transaction commits, which the shared application's rolled-back tests never do)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask

from tests.conftest import (
    ADMIN_PASSWORD,
    PASSWORD,
    ApiClient,
    InitialisedTemplate,
    app_from_template,
    bearer_header,
    login,
)
from tests.entities.conftest import body_of


def position(cursor: str) -> int:
    """The log position a cursor stands at (its number; the rest is the caller's access)."""
    return int(cursor.split("-")[0])


@dataclass
class Lab:
    """An application, its administrator, and alice: a member of DEP-X who reads DEP-X
    only (DEP-Y is out of her sight)."""

    app: Flask
    admin: ApiClient
    alice: ApiClient

    def save(self, *items: dict[str, Any], api: ApiClient | None = None) -> list[dict[str, Any]]:
        """``POST /api/entity`` as the administrator (or ``api``); the stored entities."""
        response = (api or self.admin).post("/api/entity", json={"entities": list(items)})
        assert response.status_code in (200, 201), response.get_data(as_text=True)
        return response.get_json()["entities"]

    def cursor(self, api: ApiClient | None = None) -> int:
        """The current end of the log, as the feed gives it with no cursor."""
        return position(body_of((api or self.admin).get("/api/changes"), 200)["next"])

    def changes(self, after: int, api: ApiClient | None = None, **query: Any
                ) -> list[dict[str, Any]]:
        """Every change after ``after`` the caller is told of, page after page."""
        found: list[dict[str, Any]] = []
        cursor = after
        while True:
            params = {"after": str(cursor), "$top": "500", **query}
            page = body_of((api or self.admin).get("/api/changes", query_string=params), 200)
            if not page["data"]:
                return found
            found += page["data"]
            cursor = position(page["next"])


def signed_in(app: Flask, username: str, password: str = PASSWORD) -> ApiClient:
    """A client of ``app`` sending ``username``'s bearer token."""
    client = app.test_client()
    token = login(client, username, password)["accessToken"]
    client.delete_cookie("labapp_session")
    return ApiClient(client, bearer_header(token), "bearer")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory,
        initialised_template: InitialisedTemplate) -> Iterator[Lab]:
    """One lab per module: its tests read the changes after their own starting cursor."""
    with ExitStack() as cleanup:
        app = app_from_template(initialised_template, tmp_path_factory.mktemp("feed"),
                                cleanup)
        admin = signed_in(app, "admin", ADMIN_PASSWORD)
        body_of(admin.post("/api/entity", json={"entities": [
            {"eClass": "Department", "id": "DEP-X", "name": "Department X"},
            {"eClass": "Department", "id": "DEP-Y", "name": "Department Y"},
            {"eClass": "User", "id": "alice", "name": "Alice", "departmentID": "DEP-X",
             "password": PASSWORD}]}), 201)
        yield Lab(app, admin, signed_in(app, "alice"))
