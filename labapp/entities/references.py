"""Checking reference fields: the target exists, is visible to the actor and has the right class.

A reference to an entity the actor cannot see is reported exactly like one to an entity that
does not exist, so references never reveal what is hidden.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.entities.batch import BatchInputError, PreparedItem
from labapp.entities.notation import item_error
from labapp.model import Entity
from labapp.model.registry import PARENT_LINKS


@dataclass(frozen=True)
class Target:
    """What a reference points at: enough to check its class and inherit access from it."""

    id: str
    eclass: str
    department_id: str | None
    project_id: str | None


def ref_values(item: PreparedItem) -> Iterable[tuple[str, str, str]]:
    """``(field, target class, id)`` for every reference an item sets or changes.

    A reference the entity already holds (an update sending it back: fetch-merge-save) or
    that a clone copies from its visible source is not re-checked: the caller may not see
    that target, and is not the one choosing it.
    """
    kept_from = item.existing if item.existing is not None else item.source
    for name, value in item.values.items():
        spec = item.spec.fields[name]
        if spec.type != "ref" or value is None:
            continue
        if kept_from is not None and getattr(kept_from, spec.stored_attr) == value:
            continue
        yield name, spec.ref or "*", value


def load_targets(actor: Actor, ids: set[str]) -> dict[str, Target]:
    """The visible entities among ``ids``."""
    found: dict[str, Target] = {}
    ordered = sorted(ids)
    for start in range(0, len(ordered), 1000):
        rows = db.session.execute(
            select(Entity.id, Entity.eclass, Entity.department_id, Entity.project_id)
            .where(Entity.id.in_(ordered[start:start + 1000]), readable(actor)))
        found.update({row.id: Target(*row) for row in rows})
    return found


def check_references(actor: Actor, items: list[PreparedItem],
                     batch_targets: dict[str, Target]) -> dict[str, Target]:
    """Every target the batch references, checked; ``batch_targets`` are the batch's own
    entities (new ones included). Raises 400 naming the item and field."""
    wanted = {value for item in items for _, _, value in ref_values(item)}
    targets = load_targets(actor, wanted - batch_targets.keys())
    targets.update(batch_targets)
    for item in items:
        links = PARENT_LINKS.get(item.spec.name, ())
        for name, target_class, value in ref_values(item):
            target = targets.get(value)
            if target is None:
                wanted_class = "entity" if target_class == "*" else target_class
                raise item_error(item.index, name, f"unknown {wanted_class} {value!r}",
                                 BatchInputError)
            if target_class != "*" and target.eclass != target_class:
                raise item_error(item.index, name, f"{value!r} is a {target.eclass}, "
                                                   f"expected a {target_class}", BatchInputError)
            if name in links and value == item.id:
                raise item_error(item.index, name, "an entity cannot be its own parent",
                                 BatchInputError)
    return targets


# References to any class and the field that names the class of their target.
_CLASS_FIELDS = {"subjectID": "subjectClass", "inputID": "inputClass"}


def fill_subject_classes(items: list[PreparedItem], targets: dict[str, Target]) -> None:
    """Set ``subjectClass``/``inputClass`` of new items from the checked target; a class that
    contradicts the target is 400."""
    for item in items:
        for ref_field, class_field in _CLASS_FIELDS.items():
            value = item.values.get(ref_field)
            if value is None or class_field not in item.spec.fields or value not in targets:
                continue  # absent, or copied unchanged by a clone with its class
            actual = targets[value].eclass
            given = item.values.get(class_field)
            if given is None:
                item.values[class_field] = actual
            elif given != actual:
                raise item_error(item.index, class_field, f"{value!r} is a {actual}, not a "
                                                          f"{given}", BatchInputError)


def first_parent(item: PreparedItem, targets: dict[str, Target]) -> Target | None:
    """The first parent link the item sets (data-model order), for inheriting access."""
    for link in PARENT_LINKS.get(item.spec.name, ()):
        value = item.values.get(link)
        if value is not None and value in targets:
            return targets[value]
    return None
