"""Fixtures of the access-management tests: callers holding each scope, grant counts.

The entity factories (``admin``, ``department``, ``project``, ``member``, ``grant``) come from
the entity tests, so departments and projects are made through the API as in production.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select

from labapp.db import db
from labapp.model import UserRole
from labapp.model.access import DepartmentAccess, ProjectAccess
from tests.conftest import ApiClient
from tests.entities.conftest import admin, department, grant, member, project, snapshot  # noqa: F401

ROLES = ("ADMIN", "DATA_MANAGER", "DATA_MANAGER_PROJECT_WRITE")
# Who calls: nobody, a user without roles, or a user holding exactly one role.
CALLERS = ("anonymous", "plain") + ROLES


@pytest.fixture
def caller(app: Flask, admin: ApiClient,  # noqa: F811
           member: Callable[..., ApiClient]) -> Callable[[str], Any]:  # noqa: F811
    """Factory: ``caller("DATA_MANAGER")`` is a Bearer client of a new user holding only that
    role (``"ADMIN"`` is the installation's administrator); ``"plain"`` holds no role and
    ``"anonymous"`` sends no credentials."""

    def make(who: str) -> Any:
        if who == "anonymous":
            return ApiClient(app.test_client(use_cookies=False), {}, "anonymous")
        if who == "ADMIN":
            return admin
        if who == "plain":
            return member("plain-user")
        return member(who.lower().replace("_", "-"), roles=[who])

    return make


def _rows(statement: Any) -> list[tuple]:
    return sorted((tuple(row) for row in db.session.execute(statement)), key=repr)


def grant_rows(app: Flask) -> dict[str, list[tuple]]:
    """Every department and project grant as (target, user, department, access) tuples."""
    with app.app_context():
        return {
            "department": _rows(select(DepartmentAccess.department_id, DepartmentAccess.user_id,
                                       DepartmentAccess.access_department_id,
                                       DepartmentAccess.access_type)),
            "project": _rows(select(ProjectAccess.project_id, ProjectAccess.user_id,
                                    ProjectAccess.department_id, ProjectAccess.access_type)),
        }


def grant_count(app: Flask, model: type) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(model))


def role_rows(app: Flask) -> list[tuple[str, str]]:
    with app.app_context():
        return _rows(select(UserRole.user_id, UserRole.role_name))


def state(app: Flask) -> dict[str, Any]:
    """Entity counts, versions and sequences, every grant and every role held: what a
    rejected request must leave exactly as it was."""
    return {**snapshot(app), "grants": grant_rows(app), "roles": role_rows(app)}
