"""Sharing a user's thing (a dashboard, a saved view) with users, departments, projects and
roles, and who sees it then (decisions §12).

A user sees what they own and what is shared with them, with their home department, with a
project they can read or with one of their roles; ADMIN sees all. Each thing keeps its shares
in a table of its own (``kind``, ``target`` and the thing's id), so they cascade with it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from sqlalchemy import ColumnElement, and_, exists, or_, select, true
from sqlalchemy.orm import InstrumentedAttribute

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.errors import InvalidInput
from labapp.model import Department, Project, Role, User

SHARE_FIELDS = {"userIDs": ("user", User.id), "departmentIDs": ("department", Department.id),
                "projectIDs": ("project", Project.id), "userRoles": ("role", Role.name)}
"""The API's four share lists, each with its ``kind`` and the column its ids name."""


class Share(Protocol):
    kind: str
    target: str


ShareT = TypeVar("ShareT", bound=Share)


def visible(actor: Actor, owner: InstrumentedAttribute[str],
            share_kind: InstrumentedAttribute[str], share_target: InstrumentedAttribute[str],
            shared_thing: ColumnElement[bool]) -> ColumnElement[bool]:
    """SQL predicate: the things the actor may see. ``owner`` is the thing's owner column,
    ``share_kind``/``share_target`` its share table's columns and ``shared_thing`` the
    condition joining a share row to the thing."""
    if actor.is_admin:
        return true()
    terms = [and_(share_kind == "user", share_target == actor.user_id)]
    if actor.department_id:
        terms.append(and_(share_kind == "department", share_target == actor.department_id))
    if actor.read_projects:
        terms.append(and_(share_kind == "project",
                          share_target.in_(sorted(actor.read_projects))))
    if actor.roles:
        terms.append(and_(share_kind == "role", share_target.in_(sorted(actor.roles))))
    return or_(owner == actor.user_id, exists().where(shared_thing, or_(*terms)))


def shares_of(shares: Iterable[Share]) -> dict[str, list[str]]:
    """The shares as the API shows them: four sorted lists."""
    by_kind = {kind: field for field, (kind, _) in SHARE_FIELDS.items()}
    found: dict[str, list[str]] = {field: [] for field in SHARE_FIELDS}
    for share in shares:
        found[by_kind[share.kind]].append(share.target)
    return {field: sorted(values) for field, values in found.items()}


def no_shares() -> dict[str, list[str]]:
    """The four share lists, empty (shared with nobody)."""
    return {field: [] for field in SHARE_FIELDS}


def check_shares(shares: Mapping[str, Sequence[str] | None], what: str) -> None:
    """400 naming the field when a share names a user, department, project or role that
    does not exist; ``what`` names the thing in the message ("dashboard")."""
    errors = []
    for field, (_, column) in SHARE_FIELDS.items():
        wanted = set(shares.get(field) or ())
        if not wanted:
            continue
        found = set(db.session.scalars(select(column).where(column.in_(sorted(wanted)))))
        for missing in sorted(wanted - found):
            errors.append({"field": f"shares.{field}", "message": f"unknown {missing!r}"})
    if errors:
        raise InvalidInput(f"The {what} is shared with parties that do not exist.",
                           errors=errors)


def replace_shares(current: list[ShareT], shares: Mapping[str, Sequence[str] | None],
                   make: Callable[[str, str], ShareT]) -> tuple[list[ShareT], set[str]]:
    """The share rows ``shares`` asks for: those of ``current`` kept, new ones made by
    ``make(kind, target)``; with the users newly shared with."""
    before = {share.target for share in current if share.kind == "user"}
    wanted = {(kind, target) for field, (kind, _) in SHARE_FIELDS.items()
              for target in shares.get(field) or ()}
    kept = [share for share in current if (share.kind, share.target) in wanted]
    present = {(share.kind, share.target) for share in kept}
    kept += [make(kind, target) for kind, target in sorted(wanted - present)]
    return kept, {target for kind, target in wanted if kind == "user"} - before


def share_choices(actor: Actor) -> dict[str, list[tuple[str, str]]]:
    """What the sharing pickers offer: ``(id, label)`` of active users, departments, the
    projects the actor can read, and roles."""
    def pairs(query: Any) -> list[tuple[str, str]]:
        return [(key, f"{name} ({key})" if name and name != key else key)
                for key, name in db.session.execute(query)]
    return {
        "userIDs": pairs(select(User.id, User.name).where(User.is_active.is_(True))
                         .order_by(User.id)),
        "departmentIDs": pairs(select(Department.id, Department.name).order_by(Department.id)),
        "projectIDs": pairs(select(Project.id, Project.name)
                            .where(readable(actor, Project)).order_by(Project.id)),
        "userRoles": pairs(select(Role.name, Role.name).order_by(Role.name)),
    }
