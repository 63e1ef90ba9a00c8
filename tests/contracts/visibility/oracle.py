"""The row-level security rule of decisions §5, written again from the spec, independently of
``labapp.access``: what each caller of the world should be able to see and change.

- A user's home department gives Write on it; grants give Read or Write on a department or a
  project, to the user or to their whole home department. Write implies Read.
- An entity is visible to ADMIN, or with Read on its department or on its project; writable
  with Write on either.
- ``User`` and ``Department`` entities are the directory: every authenticated user reads them,
  only ADMIN writes them.
- Creating into a department/project needs Write on either (ADMIN: always). Creating a
  ``Department`` or ``Project`` needs ADMIN or DATA_MANAGER instead, a ``User`` ADMIN.
- Deactivated and anonymous callers are not authenticated at all.
"""
from __future__ import annotations

from dataclasses import dataclass

from tests.contracts.visibility.world import (
    ANONYMOUS,
    ENTITIES,
    ENTITY,
    GRANTS,
    USER_BY_ID,
    EntityDef,
)

DIRECTORY = frozenset({"User", "Department"})
READ, WRITE = "Read", "Write"
# Classes whose creation depends on a role rather than on write access (decisions §4/§5).
CLASS_CREATORS = {"User": frozenset({"ADMIN"}),
                  "Department": frozenset({"ADMIN", "DATA_MANAGER"}),
                  "Project": frozenset({"ADMIN", "DATA_MANAGER"})}


@dataclass(frozen=True)
class Reach:
    """The departments and projects one caller reads and writes."""

    admin: bool
    read_departments: frozenset[str]
    write_departments: frozenset[str]
    read_projects: frozenset[str]
    write_projects: frozenset[str]
    roles: frozenset[str]


def reach(caller: str) -> Reach | None:
    """The caller's reach, or None when they are not authenticated (anonymous, inactive)."""
    user = USER_BY_ID.get(caller)
    if caller == ANONYMOUS or user is None or not user.active:
        return None
    mine = [grant for grant in GRANTS
            if grant.user == caller or (grant.department is not None
                                        and grant.department == user.home)]

    def targets(on: str, access: str | None = None) -> frozenset[str]:
        return frozenset(grant.target for grant in mine
                         if grant.on == on and access in (None, grant.access))

    write_departments = targets("department", WRITE) | {user.home}
    write_projects = targets("project", WRITE)
    return Reach(admin="ADMIN" in user.roles,
                 read_departments=write_departments | targets("department"),
                 write_departments=write_departments,
                 read_projects=write_projects | targets("project"),
                 write_projects=write_projects, roles=frozenset(user.roles))


def access(caller: str, entity: EntityDef) -> str | None:
    """``Write``, ``Read`` or None (invisible) for an authenticated caller."""
    mine = reach(caller)
    assert mine is not None, f"{caller} is not authenticated"
    if mine.admin:
        return WRITE
    if entity.eclass in DIRECTORY:
        return READ
    if (entity.department in mine.write_departments
            or entity.project in mine.write_projects):
        return WRITE
    if (entity.department in mine.read_departments
            or entity.project in mine.read_projects):
        return READ
    return None


def visible(caller: str, key: str) -> bool:
    return access(caller, ENTITY[key]) is not None


def visible_keys(caller: str, eclass: str) -> frozenset[str]:
    """Keys of the world's entities of ``eclass`` the caller sees."""
    return frozenset(entity.key for entity in ENTITIES
                     if entity.eclass == eclass and access(caller, entity) is not None)


def may_write_into(caller: str, department: str | None, project: str | None) -> bool:
    """Whether the caller may put a new entity into this department/project."""
    mine = reach(caller)
    assert mine is not None, f"{caller} is not authenticated"
    return mine.admin or department in mine.write_departments or (
        project in mine.write_projects)


def may_create(caller: str, eclass: str, department: str | None,
               project: str | None) -> bool:
    """Whether the caller may create an entity of ``eclass`` placed there."""
    mine = reach(caller)
    assert mine is not None, f"{caller} is not authenticated"
    creators = CLASS_CREATORS.get(eclass)
    if creators is not None:
        return mine.admin or bool(creators & mine.roles)
    return may_write_into(caller, department, project)


def attachments(caller: str, subject: str, eclass: str) -> frozenset[str]:
    """Keys of the visible Notes or Files (``eclass``) attached to ``subject``."""
    return frozenset(entity.key for entity in ENTITIES
                     if entity.eclass == eclass and entity.subject == subject
                     and access(caller, entity) is not None)
