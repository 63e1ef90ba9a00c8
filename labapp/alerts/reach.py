"""Who may address whom (decisions §16): the recipients an alert rule's owner may name.

An alert rule is a messaging channel: its messages go to its recipients' bells and inboxes
and name its owner. A member may address themselves, the departments they belong to or hold
Write on (their home department and their Write grants, the actor's ``write_departments``)
and the projects they hold Write on, as a whole or their members one by one. Other users,
departments and projects, and any role, need ADMIN.

A rule is limited by its OWNER's reach, whoever saves it: an administrator editing a
member's rule cannot make it speak for the member to people the member may not address. The
reach is checked when a rule is saved (403 naming every recipient out of reach) and again at
each evaluation against the owner's grants of that moment: a recipient the owner can no
longer address (a grant was taken back, the owner moved) is skipped, the rest are told, and
the rule's page says who is skipped. An inactive owner addresses nobody.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import or_, select

from labapp.access.actor import Actor
from labapp.access.sharing import SHARE_FIELDS
from labapp.db import db
from labapp.model import User
from labapp.model.access import ProjectAccess

# The kind of party each recipient list names ("departmentIDs": "department").
RECIPIENT_KINDS = {field: kind for field, (kind, _) in SHARE_FIELDS.items()}


def _users_within(owner: Actor, users: Iterable[str]) -> set[str]:
    """Those of ``users`` who are members of a department the owner may address (their
    home department) or of a project the owner may address (granted it themselves, or
    through their home department)."""
    wanted = sorted(set(users))
    departments, projects = sorted(owner.write_departments), sorted(owner.write_projects)
    if not wanted or not (departments or projects):
        return set()
    terms = []
    if departments:
        terms.append(User.department_id.in_(departments))
    if projects:
        members = select(ProjectAccess.user_id).where(ProjectAccess.project_id.in_(projects),
                                                      ProjectAccess.user_id.is_not(None))
        departments_granted = select(ProjectAccess.department_id).where(
            ProjectAccess.project_id.in_(projects), ProjectAccess.department_id.is_not(None))
        terms += [User.id.in_(members), User.department_id.in_(departments_granted)]
    return set(db.session.scalars(select(User.id).where(User.id.in_(wanted), or_(*terms))))


def out_of_reach(owner: Actor | None, recipients: Mapping[str, Sequence[str] | None]
                 ) -> list[tuple[str, str]]:
    """``(field, id)`` of each of ``recipients`` (the API's four lists) that ``owner`` may
    not address, in the lists' order; every one when there is no (active) owner."""
    named = [(field, value) for field in RECIPIENT_KINDS
             for value in sorted(set(recipients.get(field) or ()))]
    if owner is None:
        return named
    if owner.is_admin:
        return []
    users = _users_within(owner, (value for field, value in named if field == "userIDs"))
    allowed = {"userIDs": users | {owner.user_id}, "departmentIDs": owner.write_departments,
               "projectIDs": owner.write_projects, "userRoles": frozenset()}
    return [(field, value) for field, value in named if value not in allowed[field]]


def within_reach(owner: Actor | None, recipients: Mapping[str, Sequence[str] | None]
                 ) -> dict[str, Any]:
    """``recipients`` without those ``owner`` may not address (:func:`out_of_reach`)."""
    beyond = set(out_of_reach(owner, recipients))
    return {field: [value for value in sorted(set(recipients.get(field) or ()))
                    if (field, value) not in beyond] for field in RECIPIENT_KINDS}


def describe(field: str, value: str) -> str:
    """A recipient as a message names it: "department 'D-2'", "role 'ADMIN'"."""
    return f"{RECIPIENT_KINDS[field]} {value!r}"
