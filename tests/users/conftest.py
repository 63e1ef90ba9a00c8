"""Fixtures of the user and role tests (the entity and access factories, reused)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from labapp.db import db
from labapp.model import User
from tests.conftest import ApiClient
from tests.entities.conftest import admin, department, grant, member, project  # noqa: F401
from tests.grants.conftest import caller, state  # noqa: F401

USER_KEYS = {"id", "name", "email", "initials", "departmentID", "isActive", "roles",
             "lastLoginUtc", "authSource", "settings"}


@pytest.fixture
def alice(member: Callable[..., ApiClient]) -> ApiClient:  # noqa: F811
    """A Bearer client of alice, a user of DEP00001 without roles."""
    return member("alice")


@pytest.fixture
def bob(make_user: Callable[..., str]) -> str:
    return make_user("bob")


def stored_user(app: Flask, user_id: str) -> dict[str, Any]:
    """What the database holds for a user, secrets included (to prove they did not change)."""
    with app.app_context():
        user = db.session.get(User, user_id)
        return {"name": user.name, "email": user.email, "initials": user.initials,
                "departmentID": user.department_id, "isActive": user.is_active,
                "status": user.status, "settings": user.settings, "roles": user.roles,
                "passwordHash": user.password_hash, "version": user.version}
