"""Updating stored entities: only the given properties, conditionally on ``version``.

One helper applies the changes and returns ``{field: (old, new)}``; that dict is the audit
record. An update that changes nothing leaves the version alone.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from labapp.access.actor import Actor
from labapp.access.visibility import may_write_into, require_writable
from labapp.changes import assign, diff
from labapp.entities.audit import record_event, record_updated
from labapp.entities.batch import BatchInputError, PreparedItem
from labapp.entities.notation import item_error
from labapp.entities.rules import EntityChange, announce, rules_of
from labapp.errors import Conflict, Forbidden
from labapp.model import Entity

# A Department's departmentID and a Project's projectID are their own ids, never changed.
_OWN_ID_FIELDS = {("Department", "departmentID"), ("Project", "projectID")}


def check_writable(actor: Actor, item: PreparedItem, entity: Entity) -> None:
    """404 when the actor cannot see the entity (never revealing it), 403 when read-only."""
    require_writable(
        actor, entity.eclass, entity.department_id, entity.project_id,
        hidden=f"entities[{item.index}]: no {item.spec.name} {item.id!r}.",
        read_only=f"entities[{item.index}]: you may read but not change {item.id!r}.",
        item=item.index)


def _stored_attributes(item: PreparedItem, names: Iterable[str]) -> dict[str, str]:
    """The model attribute of each named field of the item's class."""
    return {name: item.spec.fields[name].stored_attr for name in names}


def merged_attributes(current: dict[str, Any], item: PreparedItem) -> dict[str, Any]:
    """Current attributes with the item's object and dot keys merged in; null removes a key."""
    merged = dict(current or {})
    for source in (item.attributes or {}, item.attribute_keys):
        for key, value in source.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
    return merged


def _check_status(item: PreparedItem, entity: Entity, target: str) -> None:
    workflow = item.spec.workflow
    if target not in workflow.statuses:
        raise item_error(item.index, "status", f"{target!r} is not a status of "
                                               f"{item.spec.name} ({', '.join(workflow.statuses)})",
                         BatchInputError)
    if not workflow.can_move(entity.status, target):
        allowed = ", ".join(workflow.allowed_from(entity.status)) or "none"
        raise Conflict(f"entities[{item.index}]: {item.spec.name} {item.id} cannot go from "
                       f"{entity.status} to {target} (allowed: {allowed}).",
                       code="invalid_transition", item=item.index)


def apply_update(actor: Actor, item: PreparedItem, now: datetime
                 ) -> dict[str, tuple[Any, Any]]:
    """Apply one item to its stored entity, modified at ``now`` (the batch's moment); returns
    the changes (empty when nothing changed)."""
    entity = item.existing
    if entity is None:
        raise TypeError(f"entities[{item.index}]: {item.id} is new; there is nothing to update")
    check_writable(actor, item, entity)
    if item.version is not None and item.version != entity.version:
        raise Conflict(f"entities[{item.index}]: {item.id} is at version {entity.version}, not "
                       f"{item.version}; reload it and apply your change again.",
                       code="stale_version", item=item.index)
    if "status" in item.values:
        _check_status(item, entity, item.values["status"])
    values = {name: value for name, value in item.values.items()
              if (item.spec.name, name) not in _OWN_ID_FIELDS}
    changes = diff(entity, values, _stored_attributes(item, values))
    if item.attributes is not None or item.attribute_keys:
        new_attributes = merged_attributes(entity.attributes, item)
        if new_attributes != (entity.attributes or {}):
            changes["attributes"] = (entity.attributes, new_attributes)
    if "departmentID" in changes or "projectID" in changes:
        department = changes.get("departmentID", (None, entity.department_id))[1]
        project = changes.get("projectID", (None, entity.project_id))[1]
        if not may_write_into(actor, department, project):
            raise Forbidden(f"entities[{item.index}]: you have no write access to department "
                            f"{department!r} or project {project!r}.", item=item.index)
    if not changes:
        return changes
    rules = rules_of(item.spec.name)
    rules.before_update(entity, changes)
    assign(entity, changes, _stored_attributes(item, changes))
    entity.version += 1
    entity.modified_by = actor.author_id
    entity.modified_utc = now
    record_updated(entity, actor.author_id, changes)
    rules.after_update(actor, entity, changes)
    if "status" in changes:
        old_status, new_status = changes["status"]
        record_event(entity.id, "StatusChanged", actor.author_id,
                     {"from": old_status, "to": new_status})
    announce(actor, EntityChange(entity.eclass, entity.id, entity.name, entity.user_id,
                                 changes, created=False))
    return changes
