"""Managing access: department and project grants, and deleting departments and projects.

Scopes are checked by the routes; this module checks what the data must satisfy (the
grantee exists, exactly one grantee, Read or Write) and keeps one grant per grantee.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Column, ColumnElement, delete, exists, or_, select, update

from labapp.access.actor import Actor
from labapp.db import db, rows_matched, table_of
from labapp.entities.audit import record_updated_rows
from labapp.entities.rules import observe, observers
from labapp.errors import Conflict, Forbidden, InvalidInput, NotFound
from labapp.model import Department, Entity, Project, ProjectSetting, User
from labapp.model.access import ACCESS_TYPES, DepartmentAccess, ProjectAccess
from labapp.model.registry import classes
from labapp.model.types import utc_now


@dataclass(frozen=True)
class Grantee:
    """Exactly one of a user or a department."""

    user_id: str | None = None
    department_id: str | None = None


def _grantee(user_id: str | None, department_id: str | None, department_field: str) -> Grantee:
    if bool(user_id) == bool(department_id):
        raise InvalidInput(f"Give exactly one of userID and {department_field}.",
                           errors=[{"field": "userID", "message": f"exactly one of userID and "
                                                                  f"{department_field}"}])
    if user_id and db.session.get(User, user_id) is None:
        raise InvalidInput(f"Unknown user {user_id!r}.",
                           errors=[{"field": "userID", "message": "unknown user"}])
    if department_id and db.session.get(Department, department_id) is None:
        raise InvalidInput(f"Unknown department {department_id!r}.",
                           errors=[{"field": department_field, "message": "unknown department"}])
    return Grantee(user_id or None, department_id or None)


@dataclass(frozen=True)
class GrantGiven:
    """Access given (a new grant, or a changed access type) on ``target_class``
    (``Department`` or ``Project``) ``target_id``, to a user or a department's members."""

    target_class: str
    target_id: str
    target_name: str
    grantee: Grantee
    access_type: str
    actor_id: str | None


GrantObserver = Callable[[GrantGiven], None]
GRANTS = "grant"  # the application's observers of grants (labapp.entities.rules.Hooks)


def observe_grants(observer: GrantObserver) -> None:
    """Call ``observer`` inside the transaction of every grant that gives access (once per
    observer, however often it is installed)."""
    observe(GRANTS, observer)


def _announce_grant(given: GrantGiven) -> None:
    for observer in observers(GRANTS):
        observer(given)


def _check_access_type(access_type: Any) -> str:
    if not isinstance(access_type, str) or access_type not in ACCESS_TYPES:
        raise InvalidInput("accessType must be Read or Write.",
                           errors=[{"field": "accessType", "message": "Read or Write"}])
    return access_type


def get_department(department_id: str) -> Department:
    department = db.session.get(Department, department_id)
    if department is None:
        raise NotFound(f"No department {department_id!r}.")
    return department


def get_project(project_id: str) -> Project:
    project = db.session.get(Project, project_id)
    if project is None:
        raise NotFound(f"No project {project_id!r}.")
    return project


def _user_brief(user: User | None) -> dict[str, Any] | None:
    if user is None:
        return None
    return {"id": user.id, "name": user.name, "email": user.email,
            "departmentID": user.department_id, "isActive": user.is_active}


def _department_brief(department: Department | None) -> dict[str, Any] | None:
    return None if department is None else {"id": department.id, "name": department.name}


def department_access(department_id: str) -> list[dict[str, Any]]:
    """Members (Write, ``isMember``) and grants to users and departments, members first."""
    get_department(department_id)
    members = db.session.scalars(select(User).where(User.department_id == department_id)
                                 .order_by(User.id))
    entries = [{"isMember": True, "accessType": "Write", "userID": user.id,
                "user": _user_brief(user), "accessDepartmentID": None, "department": None}
               for user in members]
    grants = db.session.scalars(select(DepartmentAccess)
                                .where(DepartmentAccess.department_id == department_id)
                                .order_by(DepartmentAccess.id))
    for grant in grants:
        entries.append(_department_entry(grant))
    return entries


def _department_entry(grant: DepartmentAccess) -> dict[str, Any]:
    return {"isMember": False, "accessType": grant.access_type, "userID": grant.user_id,
            "user": _user_brief(db.session.get(User, grant.user_id) if grant.user_id else None),
            "accessDepartmentID": grant.access_department_id,
            "department": _department_brief(db.session.get(Department, grant.access_department_id)
                                            if grant.access_department_id else None)}


GrantRow = TypeVar("GrantRow", DepartmentAccess, ProjectAccess)


def _upsert_grant(model: type[GrantRow], target: Any, target_id: str, department_column: Any,
                  grantee: Grantee, access_type: str,
                  actor_id: str | None) -> tuple[GrantRow, bool]:
    """The one grant of ``grantee`` on a target, created or updated; (grant, created)."""
    grant = db.session.scalar(select(model).where(
        target == target_id,
        model.user_id.is_(None) if grantee.user_id is None
        else model.user_id == grantee.user_id,
        department_column.is_(None) if grantee.department_id is None
        else department_column == grantee.department_id))
    created = grant is None
    previous = None if grant is None else grant.access_type
    if grant is None:
        grant = model(**{target.key: target_id, "user_id": grantee.user_id,
                         department_column.key: grantee.department_id})
        db.session.add(grant)
    grant.access_type = access_type
    db.session.flush()
    if previous != access_type:
        target_entity = db.session.get(Entity, target_id)
        if target_entity is None:
            raise NotFound(f"No department or project {target_id!r}.")
        _announce_grant(GrantGiven(target_entity.eclass, target_id, target_entity.name,
                                   grantee, access_type, actor_id))
    return grant, created


def grant_department(department_id: str, access_type: Any, user_id: str | None,
                     access_department_id: str | None, *,
                     actor: Actor | None = None) -> tuple[dict[str, Any], bool]:
    """Add or update a grant on a department; returns the entry and whether it is new.
    ``actor`` (who gives the access) is what grant observers are told."""
    get_department(department_id)
    access_type = _check_access_type(access_type)
    grantee = _grantee(user_id, access_department_id, "accessDepartmentID")
    grant, created = _upsert_grant(DepartmentAccess, DepartmentAccess.department_id,
                                   department_id, DepartmentAccess.access_department_id,
                                   grantee, access_type, actor.user_id if actor else None)
    return _department_entry(grant), created


def revoke_department(department_id: str, *, user_id: str | None = None,
                      access_department_id: str | None = None) -> None:
    """Remove one grant on a department; 404 when there is none."""
    get_department(department_id)
    column, value = ((DepartmentAccess.user_id, user_id) if user_id is not None
                     else (DepartmentAccess.access_department_id, access_department_id))
    removed = rows_matched(delete(DepartmentAccess).where(
        DepartmentAccess.department_id == department_id, column == value))
    if not removed:
        raise NotFound(f"No grant on {department_id!r} for {value!r}.")


def project_access(project_id: str) -> list[dict[str, Any]]:
    """The grants on a project, to users and to departments."""
    get_project(project_id)
    grants = db.session.scalars(select(ProjectAccess).where(ProjectAccess.project_id == project_id)
                                .order_by(ProjectAccess.id))
    return [_project_entry(grant) for grant in grants]


def _project_entry(grant: ProjectAccess) -> dict[str, Any]:
    return {"accessType": grant.access_type, "userID": grant.user_id,
            "user": _user_brief(db.session.get(User, grant.user_id) if grant.user_id else None),
            "departmentID": grant.department_id,
            "department": _department_brief(db.session.get(Department, grant.department_id)
                                            if grant.department_id else None)}


def grant_project(project_id: str, access_type: Any, user_id: str | None,
                  department_id: str | None, *,
                  actor: Actor | None = None) -> tuple[dict[str, Any], bool]:
    """Add or update a grant on a project; returns the entry and whether it is new.
    ``actor`` (who gives the access) is what grant observers are told."""
    get_project(project_id)
    access_type = _check_access_type(access_type)
    grantee = _grantee(user_id, department_id, "departmentID")
    grant, created = _upsert_grant(ProjectAccess, ProjectAccess.project_id, project_id,
                                   ProjectAccess.department_id, grantee, access_type,
                                   actor.user_id if actor else None)
    return _project_entry(grant), created


def revoke_project(project_id: str, user_or_department_id: str) -> None:
    """Remove the grant of a user or department on a project; 404 when there is none."""
    get_project(project_id)
    removed = rows_matched(delete(ProjectAccess).where(
        ProjectAccess.project_id == project_id,
        or_(ProjectAccess.user_id == user_or_department_id,
            ProjectAccess.department_id == user_or_department_id)))
    if not removed:
        raise NotFound(f"No grant on {project_id!r} for {user_or_department_id!r}.")


SETTING_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def _setting_name(name: str) -> str:
    if not SETTING_NAME.fullmatch(name):
        raise InvalidInput("A setting name is 1 to 128 letters, digits or . _ -.",
                           errors=[{"field": "settingsName", "message": "invalid name"}])
    return name


def project_setting(project_id: str, name: str) -> dict[str, Any]:
    """The named settings object of a project; ``{}`` while it was never saved."""
    get_project(project_id)
    setting = db.session.get(ProjectSetting, (project_id, _setting_name(name)))
    return dict(setting.value) if setting is not None else {}


def save_project_setting(actor: Actor, project_id: str, name: str,
                         value: dict[str, Any]) -> dict[str, Any]:
    """Insert or replace the named settings object of a project; returns what is stored."""
    get_project(project_id)
    setting = db.session.get(ProjectSetting, (project_id, _setting_name(name)))
    if setting is None:
        setting = ProjectSetting(project_id=project_id, name=name)
        db.session.add(setting)
    setting.value = value
    setting.modified_by = actor.author_id
    setting.modified_utc = utc_now()
    db.session.flush()
    return dict(setting.value)


def _referencing_columns(table_name: str) -> list[Column[Any]]:
    """Every column whose foreign key points at ``table_name`` (or at ``entity``, which every
    class shares) and that does not vanish with the row: cascades and inheritance excluded."""
    columns = []
    for table in db.metadata.sorted_tables:
        for key in table.foreign_keys:
            target = key.column.table.name
            if (target in {table_name, Entity.__tablename__} and key.ondelete != "CASCADE"
                    and not key.parent.primary_key):
                columns.append(key.parent)
    return columns


def _refers(column: Column[Any], entity_id: str) -> ColumnElement[bool]:
    """Rows whose ``column`` names the entity (a department's or project's own id in its
    ``entity`` row does not count)."""
    condition = column == entity_id
    if column.table is Entity.__table__:
        condition = condition & (Entity.__table__.c.id != entity_id)
    return condition


def _in_use(entity_id: str, table_name: str) -> bool:
    """Whether any other row references the entity."""
    return any(db.session.scalar(select(exists().where(_refers(column, entity_id))))
               for column in _referencing_columns(table_name))


def _field_names() -> dict[Column[Any], str]:
    """The API field name of every column of every entity class (``parent_id`` of
    ``department`` → ``parentID``)."""
    return {spec.model.__mapper__.get_property(field.attr).columns[0]: field.name
            for spec in classes() for field in spec.fields.values() if field.attr}


def _clear_references(actor: Actor, entity_id: str, table_name: str) -> None:
    """Set every reference to the entity to null. Each entity holding one is changed as any
    update changes it: version + 1, modifiedBy/modifiedUtc and one ``update`` audit event
    naming every field cleared. Set-based: one UPDATE for the versions, one per column and
    one multi-row INSERT of audit events, however many entities are touched.

    The versions go first: that UPDATE locks every holder, so the holders read next, column
    by column, are exactly the rows it changed (none can move away meanwhile, and none can
    start to refer to the locked container).
    """
    entity = table_of(Entity)
    columns = _referencing_columns(table_name)
    now = utc_now()
    holders = or_(*(entity.c.id.in_(select(column.table.c.id)
                                    .where(_refers(column, entity_id)))
                    for column in columns))
    versions: dict[str, int] = dict(db.session.execute(
        update(entity).where(holders)
        .values(version=entity.c.version + 1, modified_by=actor.user_id, modified_utc=now)
        .returning(entity.c.id, entity.c.version)).all())
    cleared: dict[str, dict[str, tuple[Any, Any]]] = defaultdict(dict)
    names = _field_names()
    for column in columns:
        for holder in db.session.scalars(select(column.table.c.id)
                                         .where(_refers(column, entity_id))):
            cleared[holder][names[column]] = (entity_id, None)
        db.session.execute(update(column.table).where(_refers(column, entity_id))
                           .values({column.name: None}))
    record_updated_rows(((holder, versions[holder], changes)
                         for holder, changes in cleared.items()), actor.author_id, now)


def _delete_container(actor: Actor, entity_id: str, table_name: str, kind: str,
                      force: bool) -> None:
    # Locking the row first makes concurrent inserts that reference it wait (their foreign
    # key check needs a share lock on it) and then fail, so the references cleared here are
    # all there are.
    db.session.execute(select(Entity.__table__.c.id).where(Entity.__table__.c.id == entity_id)
                       .with_for_update())
    if _in_use(entity_id, table_name):
        if not force:
            raise Conflict(f"{kind} {entity_id} still owns or is referenced by entities; "
                           "delete with force=true (ADMIN) to clear those references.",
                           code="in_use")
        if not actor.is_admin:
            raise Forbidden(f"Only ADMIN may force the deletion of a {kind.lower()}.",
                            code="missing_scope")
        _clear_references(actor, entity_id, table_name)
    # Its reference to itself (a department's departmentID, a project's projectID) goes
    # first. Its other label stays, so the change log's ``delete`` is told to whoever reads
    # that department (the members of a project's department); it names the entity's last
    # modifier as its actor.
    own = {"Department": "department_id", "Project": "project_id"}[kind]
    db.session.execute(update(table_of(Entity)).where(table_of(Entity).c.id == entity_id)
                       .values({own: None, "modified_by": actor.author_id}))
    db.session.execute(delete(table_of(Entity)).where(table_of(Entity).c.id == entity_id))
    db.session.expire_all()


def delete_department(actor: Actor, department_id: str, force: bool) -> None:
    """Delete a department; one that still owns or is referenced by entities (members,
    sub-departments, notes...) is 409 unless ``force`` (ADMIN), which clears the references."""
    get_department(department_id)
    _delete_container(actor, department_id, Department.__tablename__, "Department", force)


def delete_project(actor: Actor, project_id: str, force: bool) -> None:
    """Delete a project; one that still owns or is referenced by entities is 409 unless
    ``force`` (ADMIN), which clears the references."""
    get_project(project_id)
    _delete_container(actor, project_id, Project.__tablename__, "Project", force)
