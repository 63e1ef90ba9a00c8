"""One statement per request to authenticate: the credential, the user and, when this worker
does not know them yet, the user's roles and grant sets.

Each worker process keeps, per application, the roles and grant sets of the users it has
seen, with the user's ``actor_version``: a number the database's triggers replace by a
never-used one on any change of the user's roles, grants (their own or their home
department's), account or home department (migration ``7b1d3f5a9c20``), so that an equal
number means an unchanged actor even across rolled-back transactions. The one statement
that checks a credential also reads the user's row and version; only when the version
differs from the remembered one do its correlated subqueries aggregate the roles and grants
(a ``CASE`` evaluates them only then). Whatever another worker changed, the next request of
any worker sees it: a revoked token, an ended login or a deactivated account fail the
statement's own conditions, and a role or grant taken away renews the version it compares.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from flask import current_app
from sqlalchemy import (
    ColumnElement,
    Row,
    Select,
    and_,
    bindparam,
    case,
    func,
    or_,
    select,
)
from sqlalchemy.orm import InstrumentedAttribute

from labapp.access.actor import Actor
from labapp.auth import pats
from labapp.auth import secrets as tokens
from labapp.db import db
from labapp.model import Entity, LoginSession, PersonalAccessToken, SecondFactor, User
from labapp.model.access import DepartmentAccess, ProjectAccess
from labapp.model.org import UserRole
from labapp.model.types import utc_now

WRITE = "Write"
_SEPARATOR = "\x1f"  # the ASCII unit separator: in no role name and no id
_UNKNOWN = -1  # a version no user has (they are never negative): aggregate everything
_EXTENSION = "labapp.actor_grants"

_user = User.__table__
_entity = Entity.__table__


@dataclass(frozen=True)
class GrantSets:
    """What the worker remembers of a user at one ``actor_version``."""

    roles: frozenset[str]
    read_departments: frozenset[str]
    write_departments: frozenset[str]
    read_projects: frozenset[str]
    write_projects: frozenset[str]


def _remembered() -> dict[str, tuple[int, GrantSets]]:
    """This worker's memory for the current application: user id → (version, grant sets).

    Per application, so that two applications in one process (tests, or two databases)
    never share it."""
    memory: dict[str, tuple[int, GrantSets]] = current_app.extensions.setdefault(_EXTENSION, {})
    return memory


def _aggregated(column: ColumnElement[Any] | InstrumentedAttribute[Any],
                *conditions: ColumnElement[bool]) -> Any:
    return select(func.aggregate_strings(column, _SEPARATOR)).where(*conditions)\
        .scalar_subquery()


def _grant_columns() -> list[Any]:
    """Roles, department grants and project grants as ``access:target`` strings, each
    aggregated only when the user's version is not the ``known_version`` parameter."""
    home = _entity.c.department_id
    department_grants = _aggregated(
        DepartmentAccess.access_type + ":" + DepartmentAccess.department_id,
        or_(DepartmentAccess.user_id == _user.c.id,
            DepartmentAccess.access_department_id == home))
    project_grants = _aggregated(
        ProjectAccess.access_type + ":" + ProjectAccess.project_id,
        or_(ProjectAccess.user_id == _user.c.id, ProjectAccess.department_id == home))
    roles = _aggregated(UserRole.role_name, UserRole.user_id == _user.c.id)
    known = _user.c.actor_version == bindparam("known_version")
    return [case((known, None), else_=subquery).label(name) for name, subquery in (
        ("roles", roles), ("department_grants", department_grants),
        ("project_grants", project_grants))]


def _statement(*columns: Any) -> Select[Any]:
    """The row of the ``user_id`` parameter's user joined with ``columns``' tables, plus the
    grant columns. Built once per statement kind (:func:`functools.cache`): building it
    cost more than running it."""
    return (select(_user.c.id, _entity.c.name, _entity.c.department_id, _user.c.is_active,
                   _user.c.actor_version, *_grant_columns(), *columns)
            .select_from(_user.join(_entity, _entity.c.id == _user.c.id))
            .where(_user.c.id == bindparam("user_id")))


def _parameters(user_id: str, **others: Any) -> dict[str, Any]:
    """The parameters of a statement of :func:`_statement`: the user and the version this
    worker remembers of them."""
    return {"user_id": user_id,
            "known_version": _remembered().get(user_id, (_UNKNOWN, None))[0], **others}


@cache
def _pat_statement() -> Select[Any]:
    token = PersonalAccessToken.__table__
    return (_statement(token.c.id.label("token_id"), token.c.last_used_utc)
            .join(token, token.c.user_id == _user.c.id)
            .where(token.c.token_hash == bindparam("token_hash"),
                   token.c.revoked_utc.is_(None),
                   or_(token.c.expires_utc.is_(None), token.c.expires_utc > bindparam("now")),
                   _user.c.is_active.is_(True)))


@cache
def _login_statement() -> Select[Any]:
    login = LoginSession.__table__
    return (_statement().join(login, and_(login.c.user_id == _user.c.id,
                                          login.c.id == bindparam("session_id")))
            .where(login.c.revoked_utc.is_(None), login.c.expires_utc > bindparam("now"),
                   _user.c.is_active.is_(True)))


@cache
def _password_statement() -> Select[Any]:
    factor = SecondFactor.__table__
    has_second_factor = select(factor.c.user_id).where(
        factor.c.user_id == _user.c.id, factor.c.confirmed_utc.is_not(None)).exists()
    return _statement(_user.c.password_hash, _user.c.auth_source,
                      has_second_factor.label("has_second_factor"))


def _split(aggregated: str | None) -> list[str]:
    return aggregated.split(_SEPARATOR) if aggregated else []


def _grant_sets(row: Row[Any]) -> GrantSets:
    """The row's grant sets: remembered for its version, or read from its aggregates (and
    remembered). The home department is always writable (membership); Write implies Read."""
    memory = _remembered()
    remembered = memory.get(row.id)
    if remembered is not None and remembered[0] == row.actor_version:
        return remembered[1]
    department_grants = [grant.split(":", 1) for grant in _split(row.department_grants)]
    project_grants = [grant.split(":", 1) for grant in _split(row.project_grants)]
    write_departments = {target for kind, target in department_grants if kind == WRITE}
    if row.department_id:
        write_departments.add(row.department_id)
    write_projects = {target for kind, target in project_grants if kind == WRITE}
    sets = GrantSets(
        roles=frozenset(_split(row.roles)),
        write_departments=frozenset(write_departments),
        read_departments=frozenset(write_departments | {t for _, t in department_grants}),
        write_projects=frozenset(write_projects),
        read_projects=frozenset(write_projects | {t for _, t in project_grants}))
    memory[row.id] = (row.actor_version, sets)
    return sets


def actor_of(row: Row[Any], method: str, session_id: str | None = None) -> Actor:
    """The actor of a row read by one of the functions below."""
    sets = _grant_sets(row)
    return Actor(user_id=row.id, name=row.name, department_id=row.department_id,
                 roles=sets.roles, method=method, session_id=session_id,
                 on_premises=current_app.config["LABAPP"]["ON_PREMISES"],
                 read_departments=sets.read_departments,
                 write_departments=sets.write_departments,
                 read_projects=sets.read_projects, write_projects=sets.write_projects)


@dataclass(frozen=True)
class PatUse:
    """The actor of a valid PAT; ``stale_use`` when its last-used time needs writing."""

    actor: Actor
    token_id: str
    stale_use: bool


def actor_for_pat(username: str, value: str) -> PatUse | None:
    """The actor of the active owner of a valid, unexpired, unrevoked PAT, or None: one
    statement."""
    now = utc_now()
    row = db.session.execute(_pat_statement(), _parameters(
        username, token_hash=tokens.token_hash(value), now=now)).first()
    if row is None:
        return None
    last_used: datetime | None = row.last_used_utc
    stale = last_used is None or now - last_used > pats.LAST_USED_RESOLUTION
    return PatUse(actor_of(row, "pat"), row.token_id, stale)


def actor_for_login(user_id: str, session_id: str, method: str) -> Actor | None:
    """The actor of an active user's login that is neither revoked nor expired, or None:
    one statement (a Bearer token's or a browser cookie's login)."""
    row = db.session.execute(_login_statement(), _parameters(
        user_id, session_id=session_id, now=utc_now())).first()
    return actor_of(row, method, session_id) if row is not None else None


def user_with_password(username: str) -> Row[Any] | None:
    """The user's row with its password hash, where they sign in and whether they have a
    second factor (Basic ``username:password``), or None: one statement, whose row
    :func:`actor_of` turns into the actor."""
    if not username:
        return None
    return db.session.execute(_password_statement(), _parameters(username)).first()
