"""What a rule matches, and who a rule tells: the pieces the evaluation, the API's
``matches`` and the ``alerts`` widget share.

A rule's filter is compiled against its class's fields with ``now()`` fixed for the whole
tick. The rules of one class are evaluated in one scan of that class: each rule's condition
becomes a bit of one column of the scan, so twenty rules on Sample read the samples once,
not twenty times (bench/alerts.py).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, case, func, literal, or_, select

from labapp.access.actor import Actor
from labapp.access.grant_sets import actor_for
from labapp.access.visibility import NONE, access_type, readable
from labapp.alerts.reach import within_reach
from labapp.db import db
from labapp.errors import InvalidInput
from labapp.model import AlertRule, Entity, User, UserRole
from labapp.model.access import ProjectAccess
from labapp.model.registry import ClassSpec, find_class
from labapp.query.fields import entity_fields
from labapp.query.filter import compile_filter

RULES_PER_SCAN = 60  # rules sharing one scan: their bits fit a 64-bit integer
CHUNK = 500  # ids per IN list


class RuleBroken(Exception):
    """A stored rule no longer applies: its class is gone or its filter no longer compiles
    against the class's fields (a data-model sync changed them since it was saved)."""


@dataclass(frozen=True)
class Item:
    """A matching item with what visibility needs: its department and project."""

    id: str
    department_id: str | None
    project_id: str | None


def condition(spec: ClassSpec, text: str | None, now: datetime,
              user_id: str | None = None) -> ColumnElement[bool]:
    """The WHERE condition of filter ``text`` over ``spec`` (InvalidInput if it does not
    compile); ``now()`` is ``now``."""
    return compile_filter(text, entity_fields(spec), user_id=user_id, now=now)


def rule_class(rule: AlertRule) -> ClassSpec:
    """The class of a stored rule (RuleBroken when the data model lost it)."""
    spec = find_class(rule.eclass)
    if spec is None:
        raise RuleBroken(f"class {rule.eclass!r} no longer exists")
    return spec


def rule_condition(rule: AlertRule, now: datetime) -> tuple[ClassSpec, ColumnElement[bool]]:
    """The class and compiled condition of a stored rule (RuleBroken if either is gone).
    ``'!me'`` in a rule's filter is its owner."""
    spec = rule_class(rule)
    try:
        return spec, condition(spec, rule.filter, now, rule.owner_id)
    except InvalidInput as error:
        raise RuleBroken(f"filter no longer compiles: {error.detail}") from None


def scan(rules: Sequence[AlertRule], now: datetime
         ) -> tuple[dict[str, set[str]], dict[str, str]]:
    """The ids of the items each rule matches now, by rule id, reading each class once; and
    the rules that no longer apply, with why.

    Each row of a class's scan carries one number whose bits say which of (up to
    :data:`RULES_PER_SCAN`) rules it matches: Python then looks only at the bits set, not at
    every rule for every row."""
    by_class: dict[str, list[tuple[AlertRule, ColumnElement[bool]]]] = defaultdict(list)
    specs: dict[str, ClassSpec] = {}
    broken: dict[str, str] = {}
    for rule in rules:
        try:
            spec, where = rule_condition(rule, now)
        except RuleBroken as error:
            broken[rule.id] = str(error)
            continue
        specs[spec.name] = spec
        by_class[spec.name].append((rule, where))
    matched: dict[str, set[str]] = {rule.id: set() for rule in rules if rule.id not in broken}
    for name, pairs in by_class.items():
        model = specs[name].model
        for first in range(0, len(pairs), RULES_PER_SCAN):
            part = pairs[first:first + RULES_PER_SCAN]
            bits: ColumnElement[int] = sum(
                (case((where, 1 << number), else_=0) for number, (_, where) in enumerate(part)),
                start=literal(0))
            query = select(model.id, bits).where(model.eclass == name,
                                                 or_(*(where for _, where in part)))
            for entity_id, mask in db.session.execute(query):
                number = 0
                while mask:
                    if mask & 1:
                        matched[part[number][0].id].add(entity_id)
                    mask >>= 1
                    number += 1
    return matched, broken


def placed(ids: Iterable[str]) -> dict[str, Item]:
    """The department and project of each of ``ids`` (what visibility needs), by id."""
    found: dict[str, Item] = {}
    wanted = sorted(set(ids))
    for start in range(0, len(wanted), CHUNK):
        found.update((row.id, Item(row.id, row.department_id, row.project_id))
                     for row in db.session.execute(
                         select(Entity.id, Entity.department_id, Entity.project_id)
                         .where(Entity.id.in_(wanted[start:start + CHUNK]))))
    return found


def may_read(actor: Actor, eclass: str, item: Item) -> bool:
    """The one visibility rule, for one matching item."""
    return access_type(actor, eclass, item.department_id, item.project_id) != NONE


def recipient_ids(recipients: dict[str, Any]) -> set[str]:
    """The active users a rule's recipients name: the users, the home members of the
    departments, the members of the projects (users granted access to it and the home
    members of departments granted it) and the holders of the roles."""
    users = set(recipients.get("userIDs") or ())
    departments = set(recipients.get("departmentIDs") or ())
    projects = sorted(recipients.get("projectIDs") or ())
    roles = sorted(recipients.get("userRoles") or ())
    if projects:
        for user_id, department_id in db.session.execute(
                select(ProjectAccess.user_id, ProjectAccess.department_id)
                .where(ProjectAccess.project_id.in_(projects))):
            if user_id:
                users.add(user_id)
            if department_id:
                departments.add(department_id)
    terms = [User.id.in_(sorted(users))] if users else []
    if departments:
        terms.append(User.department_id.in_(sorted(departments)))
    if roles:
        terms.append(User.id.in_(select(UserRole.user_id)
                                 .where(UserRole.role_name.in_(roles))))
    if not terms:
        return set()
    return set(db.session.scalars(select(User.id).where(User.is_active.is_(True), or_(*terms))))


class Actors:
    """The actors of recipients, each built once per tick (roles and grants read once)."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[Actor, str | None] | None] = {}

    def get(self, user_id: str) -> tuple[Actor, str | None] | None:
        """The user's actor and e-mail address; None for an unknown or inactive user."""
        if user_id not in self._known:
            user = db.session.get(User, user_id)
            self._known[user_id] = (None if user is None or not user.is_active else
                                    (actor_for(user, method=None), user.email or None))
        return self._known[user_id]


def told_ids(rule: AlertRule, actors: Actors) -> set[str]:
    """The active users ``rule`` tells now: its recipients within its owner's reach of this
    moment (:mod:`labapp.alerts.reach`); nobody when the owner is inactive."""
    owner = actors.get(rule.owner_id)
    return recipient_ids(within_reach(owner[0] if owner else None, rule.recipients))


def visible_matches(actor: Actor, rule: AlertRule, now: datetime, limit: int
                    ) -> tuple[int, list[dict[str, Any]]]:
    """How many items ``rule`` matches now that ``actor`` may read, and the first ``limit``
    of them by name (``{id, eClass, name}``). RuleBroken if the rule no longer applies."""
    spec, where = rule_condition(rule, now)
    model = spec.model
    visible = (model.eclass == spec.name, readable(actor, model), where)
    count = db.session.execute(select(func.count()).select_from(model)
                               .where(*visible)).scalar_one()
    rows = db.session.execute(select(model.id, model.name).where(*visible)
                              .order_by(model.name, model.id).limit(limit)) if limit else ()
    return count, [{"id": row.id, "eClass": spec.name, "name": row.name} for row in rows]

