"""Sharing a user's thing (a dashboard, a saved view) with users, departments, projects and
roles (decisions §12), and the same four lists naming an alert rule's recipients (§16).

A user is shared with a thing when it names them, their home department, a project they can
read or one of their roles. Each thing keeps its shares in a table of its own (``kind``,
``target`` and the thing's id), so they cascade with it. Who reads and changes a shared thing
is :mod:`labapp.access.owned`.

A thing may name only parties its saver may see: every user, department and role (the
directory, and the pickers offer every role), and the projects the saver can read. A project
they cannot read is refused exactly like one that does not exist, so naming parties never
reveals a hidden project; one the thing already names is kept without that check (its owner
chose it when they could read it, and sends it back as read).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from sqlalchemy import ColumnElement, and_, exists, false, or_, select
from sqlalchemy.orm import InstrumentedAttribute

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.errors import InvalidInput
from labapp.model import Department, Project, Role, User

SHARE_FIELDS = {"userIDs": ("user", User.id), "departmentIDs": ("department", Department.id),
                "projectIDs": ("project", Project.id), "userRoles": ("role", Role.name)}
"""The API's four lists of parties, each with its ``kind`` and the column its ids name."""

Parties = Mapping[str, Sequence[str] | None]
"""Parties as the API names them: some of the four lists of :data:`SHARE_FIELDS`."""


class Share(Protocol):
    kind: str
    target: str


ShareT = TypeVar("ShareT", bound=Share)


@dataclass(frozen=True, eq=False)
class ShareTable:
    """Where a kind of thing keeps its shares: ``rows``, the thing's relationship to its
    share rows; the share table's ``kind`` and ``target`` columns; and ``of_thing``, the
    condition joining a share row to its thing."""

    rows: InstrumentedAttribute[Any]
    kind: InstrumentedAttribute[str]
    target: InstrumentedAttribute[str]
    of_thing: ColumnElement[bool]

    def row(self, kind: str, target: str) -> Any:
        """A new row of the share table: the thing is shared with ``target`` of ``kind``."""
        return self.kind.parent.class_(kind=kind, target=target)


def shared_with(actor: Actor, table: ShareTable) -> ColumnElement[bool]:
    """SQL predicate: the things shared with the actor, their home department, a project
    they can read or one of their roles."""
    if not actor.is_authenticated:
        return false()
    terms = [and_(table.kind == "user", table.target == actor.user_id)]
    if actor.department_id:
        terms.append(and_(table.kind == "department", table.target == actor.department_id))
    if actor.read_projects:
        terms.append(and_(table.kind == "project", table.target.in_(sorted(actor.read_projects))))
    if actor.roles:
        terms.append(and_(table.kind == "role", table.target.in_(sorted(actor.roles))))
    return exists().where(table.of_thing, or_(*terms))


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


def unknown_parties(actor: Actor, parties: Parties, where: str,
                    kept: Parties | None = None) -> list[dict[str, str]]:
    """An error (``{where}.{list}``: "unknown 'X'") for each party that does not exist or
    that the actor may not see, unless ``kept`` (what the thing names now) names it already;
    both are answered alike (module docstring). Empty when every party may be named."""
    errors = []
    for field, (kind, column) in SHARE_FIELDS.items():
        wanted = sorted(set(parties.get(field) or ()))
        if not wanted:
            continue
        query = select(column).where(column.in_(wanted))
        if kind == "project":
            named = sorted(set((kept or {}).get(field) or ()))
            query = query.where(or_(readable(actor, Project), Project.id.in_(named))
                                if named else readable(actor, Project))
        found = set(db.session.scalars(query))
        errors += [{"field": f"{where}.{field}", "message": f"unknown {missing!r}"}
                   for missing in wanted if missing not in found]
    return errors


def check_shares(actor: Actor, shares: Parties, what: str,
                 kept: Iterable[Share] = ()) -> None:
    """400 naming the field when a share names a party that does not exist or that the
    actor may not see (:func:`unknown_parties`; ``kept``: the thing's shares now); ``what``
    names the thing in the message ("dashboard")."""
    errors = unknown_parties(actor, shares, "shares", shares_of(kept))
    if errors:
        raise InvalidInput(f"The {what} is shared with parties that do not exist.",
                           errors=errors)


def replace_shares(current: list[ShareT], shares: Parties,
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
