"""Factories of the entity API tests: callers, departments, projects, grants and snapshots.

Departments and projects are made through the API as the administrator, like a real
installation would; grants are inserted directly (there is no grant API yet).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select
from werkzeug.test import TestResponse

from labapp.db import db, transaction
from labapp.model import AuditEvent, Entity, EntityEvent, Sequence
from labapp.model.access import DepartmentAccess, ProjectAccess
from tests.conftest import ADMIN_PASSWORD, ApiClient


def body_of(response: TestResponse, status: int) -> Any:
    """The JSON body of ``response``, asserting its status first."""
    assert response.status_code == status, response.get_data(as_text=True)
    return response.get_json()


def save(api: ApiClient, *items: dict[str, Any], status: int = 201) -> list[dict[str, Any]]:
    """``POST /api/entity`` with ``items``; asserts ``status`` and returns the entities."""
    return body_of(api.post("/api/entity", json={"entities": list(items)}), status)["entities"]


def fetch(api: ApiClient, eclass: str, entity_id: str, status: int = 200) -> dict[str, Any]:
    """``GET /api/entity/{eClass}/{id}``; asserts ``status`` and returns the body."""
    return body_of(api.get(f"/api/entity/{eclass}/{entity_id}"), status)


def listing(api: ApiClient, eclass: str, status: int = 200, **options: Any) -> dict[str, Any]:
    """``GET /api/entity/{eClass}`` with OData options given without their ``$``."""
    query = {f"${name}": value for name, value in options.items()}
    return body_of(api.get(f"/api/entity/{eclass}", query_string=query), status)


def add_sequence(app: Flask, sequence_id: str, prefix: str, next_value: int = 1,
                 min_digits: int = 3) -> None:
    """A custom id sequence (``POST /api/sequence`` is tested elsewhere)."""
    with app.app_context(), transaction() as session:
        session.add(Sequence(id=sequence_id, prefix=prefix, next_value=next_value,
                             min_digits=min_digits))


def next_value(app: Flask, sequence_id: str) -> int:
    with app.app_context():
        return db.session.get(Sequence, sequence_id).next_value


def snapshot(app: Flask) -> dict[str, Any]:
    """What a rejected batch must leave alone: row counts and every sequence's next value."""
    with app.app_context():
        session = db.session
        counts = {model.__tablename__: session.scalar(select(func.count()).select_from(model))
                  for model in (Entity, AuditEvent, EntityEvent)}
        counts["sequences"] = dict(session.execute(select(Sequence.id, Sequence.next_value)).all())
        counts["versions"] = dict(session.execute(select(Entity.id, Entity.version)).all())
        return counts


@pytest.fixture
def admin(api_as: Callable[..., ApiClient]) -> ApiClient:
    """The administrator created by ``flask init`` (home department DEP00001; its password
    hashed at the suite's cheap cost, ``tests/conftest.py``'s ``_cheap_argon2``)."""
    return api_as("admin", password=ADMIN_PASSWORD)


@pytest.fixture
def department(admin: ApiClient) -> Callable[..., str]:
    """Factory: ``department("Chemistry")`` creates a department as admin; returns its id."""

    def make(name: str = "Department", **values: Any) -> str:
        return save(admin, {"eClass": "Department", "name": name, **values})[0]["id"]

    return make


@pytest.fixture
def project(admin: ApiClient) -> Callable[..., str]:
    """Factory: ``project("Vaccine", departmentID=...)`` creates a project as admin."""

    def make(name: str = "Project", **values: Any) -> str:
        return save(admin, {"eClass": "Project", "name": name, **values})[0]["id"]

    return make


@pytest.fixture
def member(make_user: Callable[..., str],
           api_as: Callable[..., ApiClient]) -> Callable[..., ApiClient]:
    """Factory: ``member("alice", department_id=..., roles=[...])`` makes a user and returns
    a Bearer client authenticated as them."""

    def make(username: str, **kwargs: Any) -> ApiClient:
        make_user(username, **kwargs)
        return api_as(username)

    return make


class Grants:
    """Inserts grant rows as the (future) access API would."""

    def __init__(self, app: Flask) -> None:
        self.app = app

    def _add(self, row: Any) -> None:
        with self.app.app_context(), transaction() as session:
            session.add(row)

    def department(self, department_id: str, access: str, *, user: str | None = None,
                   to_department: str | None = None) -> None:
        """Read/Write on ``department_id`` for a user or for a whole department."""
        self._add(DepartmentAccess(department_id=department_id, access_type=access,
                                   user_id=user, access_department_id=to_department))

    def project(self, project_id: str, access: str, *, user: str | None = None,
                to_department: str | None = None) -> None:
        """Read/Write on ``project_id`` for a user or for a whole department."""
        self._add(ProjectAccess(project_id=project_id, access_type=access, user_id=user,
                                department_id=to_department))


@pytest.fixture
def grant(app: Flask) -> Grants:
    return Grants(app)
