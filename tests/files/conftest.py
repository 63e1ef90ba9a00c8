"""Factories of the file API tests: callers, departments, grants, uploads and store checks.

Callers are plain users (cheap to log in); departments are made through the API by a data
manager; grants are inserted directly (there is no grant API yet).
"""
from __future__ import annotations

import base64
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select
from werkzeug.test import TestResponse

from labapp.db import db, transaction
from labapp.model import AuditEvent, Entity, EntityEvent, File
from labapp.model.access import DepartmentAccess
from tests.conftest import ApiClient


def closed(response: TestResponse) -> TestResponse:
    """``response`` with its body read, then closed with its request body.

    That closes the blob a download streamed from and the temporary file the test client
    spools a large multipart body to (Werkzeug's client leaves that open unless it follows
    redirects).
    """
    with response:
        response.get_data()
    response.request.input_stream.close()
    return response


def upload(api: ApiClient, content: bytes, filename: str = "data.bin",
           **fields: Any) -> TestResponse:
    """``POST /api/file`` as ``multipart/form-data`` with ``content`` in the ``file`` part.

    ``content_type`` (keyword) sets the part's declared type."""
    part_type = fields.pop("content_type", None)
    data = {**fields, "file": (BytesIO(content), filename, part_type)}
    return closed(api.post("/api/file", data=data, content_type="multipart/form-data"))


def upload_base64(api: ApiClient, content: bytes, name: str = "data.bin",
                  **fields: Any) -> TestResponse:
    """``POST /api/file`` as ``application/x-www-form-urlencoded`` with base64 content."""
    data = {"name": name, "content": base64.b64encode(content).decode(), **fields}
    return closed(api.post("/api/file", data=data,
                           content_type="application/x-www-form-urlencoded"))


def created(response: TestResponse) -> dict[str, Any]:
    """The File entity of a successful upload."""
    assert response.status_code == 201, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    return response.get_json()


def store_files(app: Flask) -> list[Path]:
    """Every file in the content store, partial uploads and pins included (not the lock
    file every writer takes)."""
    root = Path(app.config["LABAPP"]["INSTANCE_PATH"]) / "files"
    return sorted(path for path in root.rglob("*") if path.is_file() and path != root / ".lock")


def row_counts(app: Flask) -> dict[str, int]:
    """Rows of the tables an upload writes to: what a rejected upload must leave alone."""
    with app.app_context():
        return {model.__tablename__: db.session.scalar(select(func.count())
                                                       .select_from(model))
                for model in (Entity, File, AuditEvent, EntityEvent)}


def save(api: ApiClient, item: dict[str, Any]) -> dict[str, Any]:
    """Create one entity through ``POST /api/entity``; returns it."""
    response = api.post("/api/entity", json={"entities": [item]})
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()["entities"][0]


@pytest.fixture
def api(member: Callable[..., ApiClient]) -> ApiClient:
    """A Bearer client of ``lab``, a plain user of department DEP00001."""
    return member("lab")


@pytest.fixture
def department(member: Callable[..., ApiClient]) -> Callable[[str], str]:
    """Factory: ``department("Chemistry")`` creates a department (as a data manager)."""
    manager = member("manager", roles=["DATA_MANAGER"])
    return lambda name: save(manager, {"eClass": "Department", "name": name})["id"]


@pytest.fixture
def member(make_user: Callable[..., str],
           api_as: Callable[..., ApiClient]) -> Callable[..., ApiClient]:
    """Factory: ``member("alice", department_id=...)`` makes a user; returns a Bearer client."""

    def make(username: str, **kwargs: Any) -> ApiClient:
        make_user(username, **kwargs)
        return api_as(username)

    return make


@pytest.fixture
def grant(app: Flask) -> Callable[..., None]:
    """Factory: ``grant("DEP00002", "Read", user="bob")`` gives a user Read/Write on a
    department, as the (future) access API would."""

    def make(department_id: str, access: str, *, user: str) -> None:
        with app.app_context(), transaction() as session:
            session.add(DepartmentAccess(department_id=department_id, access_type=access,
                                         user_id=user))

    return make


def fetch(api: ApiClient, file_id: str, **kwargs: Any) -> TestResponse:
    """``GET /api/file/{id}``, read and closed."""
    return closed(api.get(f"/api/file/{file_id}", **kwargs))
