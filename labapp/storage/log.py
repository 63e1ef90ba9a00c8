"""The storage log: who checked what in or out, or moved which location, where and when.

Entries are written in the transaction of the change (one ``executemany``) and read newest
first. A reader sees only the entries about entities they may see (decisions §5: storage
logs follow the visibility rule); ``total`` counts those.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, or_, select

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db, table_of
from labapp.model import Entity, StorageLogEntry
from labapp.query.listing import Page, parse_paging

CHECKIN, CHECKOUT, MOVE = "checkin", "checkout", "move"
LOG_PAGE_SIZE = 500


@dataclass(frozen=True)
class LogEntry:
    """One entry about to be written."""

    action: str
    eclass: str
    entity_id: str
    location_id: str | None
    position: str | None = None
    from_location_id: str | None = None


def write(entries: list[LogEntry], user_id: str, now: datetime) -> None:
    """Write ``entries`` in the current transaction, stamped with the user and time."""
    if not entries:
        return
    db.session.execute(insert(table_of(StorageLogEntry)), [
        {"action": entry.action, "eclass": entry.eclass, "entity_id": entry.entity_id,
         "location_id": entry.location_id, "from_location_id": entry.from_location_id,
         "position": entry.position, "user_id": user_id, "timestamp_utc": now}
        for entry in entries])


def counts(location_ids: list[str]) -> dict[str, tuple[int, int]]:
    """``location id → (check-ins, check-outs)`` ever logged there (all items, visible or
    not: the counts stay true)."""
    if not location_ids:
        return {}
    table = StorageLogEntry
    rows = db.session.execute(
        select(table.location_id, table.action, func.count())
        .where(table.location_id.in_(location_ids), table.action.in_((CHECKIN, CHECKOUT)))
        .group_by(table.location_id, table.action))
    found: dict[str, list[int]] = {}
    for location_id, action, count in rows:
        if location_id is None:  # not reachable: the query asks for given ids
            continue
        found.setdefault(location_id, [0, 0])[0 if action == CHECKIN else 1] = count
    return {key: (value[0], value[1]) for key, value in found.items()}


def to_api(entry: StorageLogEntry) -> dict[str, Any]:
    """A log entry as the API shows it (decisions §10, plus ``fromLocationID`` of moves)."""
    return {"id": entry.id, "action": entry.action, "eClass": entry.eclass,
            "entityID": entry.entity_id, "locationID": entry.location_id,
            "fromLocationID": entry.from_location_id, "position": entry.position,
            "userID": entry.user_id, "timestampUtc": entry.timestamp_utc}


def page(actor: Actor, location_id: str, *, top: str | int | None = None,
         skip: str | int | None = None) -> Page:
    """The entries of one location, newest first: its check-ins and check-outs, locations
    moved into or out of it and its own moves. The caller has checked the location is
    visible; entries about entities the actor may not see are left out."""
    limit, offset = parse_paging(top, skip, max_top=LOG_PAGE_SIZE)
    table = StorageLogEntry
    about = or_(table.location_id == location_id, table.from_location_id == location_id,
                (table.entity_id == location_id) & (table.action == MOVE))
    visible = select(Entity.id).where(Entity.id == table.entity_id, readable(actor)).exists()
    condition = (about, visible)
    entries = db.session.scalars(select(table).where(*condition)
                                 .order_by(table.id.desc()).limit(limit).offset(offset))
    total = db.session.execute(
        select(func.count()).select_from(table).where(*condition)).scalar_one()
    return Page([to_api(entry) for entry in entries], total, offset, LOG_PAGE_SIZE)
