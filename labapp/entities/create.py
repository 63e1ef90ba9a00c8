"""Creating the new entities of a batch: defaults, inherited access, checks, bulk inserts.

Rows are inserted with SQLAlchemy Core in dependency order (an item that references another
new item comes after it), one executemany per run of rows of the same table, so a batch of
500 costs a handful of statements rather than a thousand.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert

from labapp.access.actor import Actor
from labapp.access.policy import may_create_class
from labapp.access.visibility import may_write_into
from labapp.db import db, table_of
from labapp.entities.audit import json_value
from labapp.entities.batch import BatchInputError, PreparedItem
from labapp.entities.notation import item_error
from labapp.entities.references import Target, first_parent, ref_values
from labapp.entities.rules import rules_of
from labapp.errors import Forbidden
from labapp.model import AuditEvent, Entity, EntityEvent
from labapp.model.types import utc_now

_ENTITY_COLUMNS = tuple(Entity.__table__.c.keys())


@dataclass
class NewRow:
    """A new entity as rows of ``entity`` and of its class table, plus its API form."""

    item: PreparedItem
    entity: dict[str, Any]
    own: dict[str, Any]

    def api(self) -> dict[str, Any]:
        merged = {**self.entity, **self.own}
        data = {name: merged.get(field.attr) for name, field in self.item.spec.fields.items()
                if field.attr is not None}
        rules_of(self.item.spec.name).created_api(data)
        return data


def dependency_order(items: list[PreparedItem]) -> list[PreparedItem]:
    """New items sorted so that every referenced new item comes first (stable otherwise)."""
    by_id = {item.id: item for item in items}
    depends = {item.id: {value for _, _, value in ref_values(item)
                         if value in by_id and value != item.id} for item in items}
    ordered: list[PreparedItem] = []
    placed: set[str] = set()
    while len(ordered) < len(items):
        progressed = False
        for item in items:
            if item.id not in placed and depends[item.id] <= placed:
                ordered.append(item)
                placed.add(item.id)
                progressed = True
        if not progressed:
            stuck = next(item for item in items if item.id not in placed)
            raise item_error(stuck.index, "id", "items of the batch reference each other in a "
                                                "circle", BatchInputError)
    return ordered


def _access_of(actor: Actor, item: PreparedItem,
               targets: dict[str, Target]) -> tuple[str | None, str | None]:
    values = item.values
    parent = first_parent(item, targets)
    department = values["departmentID"] if "departmentID" in values else (
        parent.department_id if parent else actor.department_id)
    project = values["projectID"] if "projectID" in values else (
        parent.project_id if parent else None)
    if item.spec.name == "Department":
        department = item.id
    if item.spec.name == "Project":
        project = item.id
    return department, project


def _check_allowed(actor: Actor, item: PreparedItem, department: str | None,
                   project: str | None) -> None:
    name = item.spec.name
    if not may_create_class(actor, name):
        raise Forbidden(f"entities[{item.index}]: you may not create {name} entities.",
                        item=item.index)
    if name in {"Department", "Project", "User"}:
        return
    if not may_write_into(actor, department, project):
        raise Forbidden(f"entities[{item.index}]: you have no write access to department "
                        f"{department!r} or project {project!r}.", item=item.index)


def _status_of(item: PreparedItem) -> str:
    workflow = item.spec.workflow
    status = item.values.get("status") or workflow.initial
    if status not in workflow.statuses:
        raise item_error(item.index, "status", f"{status!r} is not a status of "
                                               f"{item.spec.name} ({', '.join(workflow.statuses)})",
                         BatchInputError)
    return status


def _attributes_of(item: PreparedItem) -> dict[str, Any]:
    attributes = dict(item.attributes or {})
    attributes.update(item.attribute_keys)
    return {key: value for key, value in attributes.items() if value is not None}


def build_row(actor: Actor, item: PreparedItem, targets: dict[str, Target]) -> NewRow:
    """The rows of one new item, after every check; registers it as a reference target."""
    department, project = _access_of(actor, item, targets)
    _check_allowed(actor, item, department, project)
    now = utc_now()
    spec = item.spec
    entity = dict.fromkeys(_ENTITY_COLUMNS)
    own: dict[str, Any] = {"id": item.id}
    for field in spec.fields.values():
        if field.attr is None or field.name in {"id", "eClass"}:
            continue
        value = item.values.get(field.name, field.default)
        (entity if field.common else own)[field.attr] = value
    entity.update(id=item.id, eclass=spec.name, name=item.values.get("name") or item.id,
                  status=_status_of(item), type=item.values.get("type") or "Other",
                  user_id=item.values.get("userID") or actor.user_id,
                  department_id=department, project_id=project,
                  attributes=_attributes_of(item), created_by=actor.user_id,
                  modified_by=actor.user_id, created_utc=now, modified_utc=now, version=1)
    rules_of(spec.name).complete_new_row(item, own)
    targets[item.id] = Target(item.id, spec.name, department, project)
    return NewRow(item, entity, own)


def _audit_rows(row: NewRow, actor_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    data = row.api()
    changes = {name: {"old": None, "new": json_value(value)}
               for name, value in data.items()
               if value not in (None, {}, []) and not row.item.spec.fields[name].read_only}
    now = row.entity["created_utc"]
    audit = {"entity_id": row.item.id, "action": "create", "version": 1, "user_id": actor_id,
             "timestamp_utc": now, "changes": changes}
    event = {"entity_id": row.item.id, "kind": "Created", "user_id": actor_id,
             "timestamp_utc": now, "data": {}}
    return audit, event


_ATTACHMENT_EVENTS = {"Note": "NoteAdded", "File": "FileAdded"}


def insert_rows(rows: list[NewRow], actor_id: str) -> None:
    """Insert the rows (already in dependency order) with their audit trail and events."""
    db.session.flush()
    db.session.execute(insert(table_of(Entity)), [row.entity for row in rows])
    start = 0
    while start < len(rows):
        table = table_of(rows[start].item.spec.model)
        end = start
        while end < len(rows) and table_of(rows[end].item.spec.model) is table:
            end += 1
        db.session.execute(insert(table), [row.own for row in rows[start:end]])
        start = end
    audits, events = zip(*(_audit_rows(row, actor_id) for row in rows), strict=True)
    events = list(events)
    for row in rows:
        kind = _ATTACHMENT_EVENTS.get(row.item.spec.name)
        subject = row.own.get("subject_id")
        if kind and subject:
            events.append({"entity_id": subject, "kind": kind, "user_id": actor_id,
                           "timestamp_utc": row.entity["created_utc"],
                           "data": {"id": row.item.id, "name": row.entity["name"]}})
    db.session.execute(insert(table_of(AuditEvent)), list(audits))
    db.session.execute(insert(table_of(EntityEvent)), events)
