"""Creating users (the CLI and ``init``; the API's user management builds on it)."""
from __future__ import annotations

import re
from collections.abc import Iterable

from sqlalchemy import select

from labapp.auth.passwords import set_password
from labapp.db import db
from labapp.entities.audit import record_created, stamp_created
from labapp.errors import Conflict, InvalidInput
from labapp.model import Department, Entity, Role, User, UserRole

USERNAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


def create_user(*, username: str, name: str, department_id: str, password: str,
                roles: Iterable[str] = (), created_by: str, email: str | None = None,
                initials: str | None = None) -> User:
    """Create an active user; 400 for a bad username, department, role or password, 409 when
    the id is taken."""
    if not USERNAME_PATTERN.match(username):
        raise InvalidInput("A username is 1 to 64 letters, digits or . _ @ -, starting with a "
                           "letter or digit.", errors=[{"field": "id", "message": "invalid"}])
    if db.session.get(Entity, username) is not None:
        raise Conflict(f"The id {username!r} is already taken.", code="duplicate_id")
    if db.session.get(Department, department_id) is None:
        raise InvalidInput(f"Unknown department {department_id!r}.",
                           errors=[{"field": "departmentID", "message": "unknown department"}])
    roles = sorted(set(roles))
    known = set(db.session.scalars(select(Role.name).where(Role.name.in_(roles))))
    unknown = [role for role in roles if role not in known]
    if unknown:
        raise InvalidInput(f"Unknown role(s): {', '.join(unknown)}.",
                           errors=[{"field": "roles", "message": f"unknown: {role}"}
                                   for role in unknown])
    user = User(id=username, name=name or username, status="Active", type="Other",
                user_id=username, department_id=department_id, attributes={}, email=email,
                initials=initials, is_active=True, settings={},
                role_links=[UserRole(role_name=role) for role in roles])
    set_password(user, password)
    stamp_created(user, created_by)
    db.session.add(user)
    db.session.flush()
    record_created(user, created_by)
    return user
