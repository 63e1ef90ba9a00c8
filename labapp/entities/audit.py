"""The audit trail and domain events, written in the same transaction as the change."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from sqlalchemy import insert

from labapp.db import db
from labapp.jsonprovider import format_utc
from labapp.model import AuditEvent, Entity, EntityEvent
from labapp.model.registry import existing_class
from labapp.model.types import utc_now

SYSTEM_ACTOR = "system"


def json_value(value: Any) -> Any:
    """A value as it is stored in an audit record (timestamps and dates as ISO text)."""
    if isinstance(value, datetime):
        return format_utc(value)
    if isinstance(value, date):
        return value.isoformat()
    return value


def stamp_created(entity: Entity, actor_id: str) -> None:
    """Set the audit columns of a new entity."""
    now = utc_now()
    entity.created_by = entity.modified_by = actor_id
    entity.created_utc = entity.modified_utc = now
    entity.version = 1


def record_created(entity: Entity, actor_id: str) -> None:
    """Write the ``create`` audit event (every stored field, old = null) and ``Created``."""
    spec = existing_class(entity.eclass)
    changes = {}
    for field in spec.fields.values():
        if field.attr is None or field.read_only:
            continue
        value = getattr(entity, field.attr)
        if value is not None and value != {}:
            changes[field.name] = {"old": None, "new": json_value(value)}
    now = entity.created_utc
    db.session.add(AuditEvent(entity_id=entity.id, action="create", version=entity.version,
                              user_id=actor_id, timestamp_utc=now, changes=changes))
    db.session.add(EntityEvent(entity_id=entity.id, kind="Created", user_id=actor_id,
                               timestamp_utc=now, data={}))


def _changes_record(changes: dict[str, tuple[Any, Any]]) -> dict[str, dict[str, Any]]:
    return {name: {"old": json_value(old), "new": json_value(new)}
            for name, (old, new) in changes.items()}


def record_updated(entity: Entity, actor_id: str,
                   changes: dict[str, tuple[Any, Any]]) -> None:
    """Write the ``update`` audit event of a change already applied to ``entity``."""
    db.session.add(AuditEvent(
        entity_id=entity.id, action="update", version=entity.version, user_id=actor_id,
        timestamp_utc=entity.modified_utc, changes=_changes_record(changes)))


def record_updated_rows(updates: Iterable[tuple[str, int, dict[str, tuple[Any, Any]]]],
                        actor_id: str, timestamp: datetime) -> None:
    """Write the ``update`` audit events of rows changed by set-based statements, in one
    multi-row insert: ``(entity id, new version, {field: (old, new)})`` each."""
    rows = [{"entity_id": entity_id, "action": "update", "version": version,
             "user_id": actor_id, "timestamp_utc": timestamp,
             "changes": _changes_record(changes)}
            for entity_id, version, changes in updates]
    if rows:
        db.session.execute(insert(AuditEvent), rows)


def record_event(entity_id: str, kind: str, actor_id: str,
                 data: dict[str, Any] | None = None) -> None:
    """Write a domain event (``StatusChanged``, ``NoteAdded``, ``FileAdded``, ``Cloned``...)."""
    db.session.add(EntityEvent(entity_id=entity_id, kind=kind, user_id=actor_id,
                               timestamp_utc=utc_now(), data=data or {}))
