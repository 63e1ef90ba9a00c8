"""The grant sets of an actor: departments and projects they may read or write."""
from __future__ import annotations

from sqlalchemy import false, or_, select

from labapp.access.actor import Actor
from labapp.db import db
from labapp.model import User
from labapp.model.access import DepartmentAccess, ProjectAccess

WRITE = "Write"


def actor_for(user: User, *, method: str | None, session_id: str | None = None,
              on_premises: bool = True) -> Actor:
    """The actor of ``user``: roles plus the grants to them and to their home department.

    The home department is always writable (membership); Write implies Read.
    """
    home = user.department_id
    department_grants = db.session.execute(
        select(DepartmentAccess.department_id, DepartmentAccess.access_type).where(or_(
            DepartmentAccess.user_id == user.id,
            DepartmentAccess.access_department_id == home if home else false()))).all()
    project_grants = db.session.execute(
        select(ProjectAccess.project_id, ProjectAccess.access_type).where(or_(
            ProjectAccess.user_id == user.id,
            ProjectAccess.department_id == home if home else false()))).all()
    write_departments = {target for target, kind in department_grants if kind == WRITE}
    if home:
        write_departments.add(home)
    write_projects = {target for target, kind in project_grants if kind == WRITE}
    return Actor(
        user_id=user.id, name=user.name, department_id=home, roles=frozenset(user.roles),
        method=method, session_id=session_id, on_premises=on_premises,
        write_departments=frozenset(write_departments),
        read_departments=frozenset(write_departments | {t for t, _ in department_grants}),
        write_projects=frozenset(write_projects),
        read_projects=frozenset(write_projects | {t for t, _ in project_grants}))
