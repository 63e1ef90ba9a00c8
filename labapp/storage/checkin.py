"""Check-in and check-out of samples and plates (decisions §10).

A request is one transaction: every item is read and checked before anything is written,
and any refusal leaves everything as it was. Check-in locks the target location's row first
(``SELECT … FOR UPDATE`` on PostgreSQL; on SQLite the unit of work already holds the write
lock from ``BEGIN IMMEDIATE``), so concurrent check-ins into one location queue and the
placement rule (:mod:`labapp.storage.allocation`, asked by :func:`settle`) counts what is
really there. Items are locked in id order.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from marshmallow import Schema, ValidationError
from sqlalchemy import bindparam, insert, select, update

from labapp.access.actor import Actor
from labapp.access.visibility import require_writable
from labapp.db import db, table_of
from labapp.entities.audit import json_value
from labapp.errors import AppError, Conflict, InvalidInput, NotFound
from labapp.model import AuditEvent, Entity, EntityEvent, Location, Plate, Sample
from labapp.model.types import utc_now
from labapp.storage import log
from labapp.storage.allocation import Move, Refusal, Request, Room, plan_moves
from labapp.storage.schemas import MAX_ITEMS, ItemRefSchema, StoredItemSchema
from labapp.storage.service import get_location, locations_api, stored_counts

_ENTITY = table_of(Entity)
_TABLES = {"Sample": table_of(Sample), "Plate": table_of(Plate)}


class StorageInputError(InvalidInput):
    code = "invalid_storage_item"


class RefusedPosition(StorageInputError):
    """400: the placement rule refused the slot an item asks for (the refusal as data)."""

    def __init__(self, refusal: Refusal, detail: str, *,
                 errors: list[dict[str, str]]) -> None:
        super().__init__(detail, errors=errors, item=refusal.index)
        self.refusal = refusal


class RefusedPlacement(Conflict):
    """409: the placement rule refused to put an item where it was asked to go (the
    refusal as data)."""

    def __init__(self, refusal: Refusal, detail: str, *, code: str) -> None:
        super().__init__(detail, code=code, item=refusal.index)
        self.refusal = refusal


def refusal_of(error: AppError) -> Refusal | None:
    """The placement rule's refusal behind an error, if it is one."""
    if isinstance(error, RefusedPosition | RefusedPlacement):
        return error.refusal
    return None


def _item_error(index: int, field: str, message: str) -> StorageInputError:
    """A 400 naming one item of a storage body by its index, and its field."""
    return StorageInputError(f"[{index}].{field}: {message}",
                             errors=[{"field": f"[{index}].{field}", "message": message}])


@dataclass
class Item:
    """One requested item with what is stored about it."""

    index: int
    eclass: str
    id: str
    wanted_position: str | None = None
    location_id: str | None = None
    position: str | None = None
    plate_id: str | None = None
    version: int = 0
    new_position: str | None = None
    body: str = ""  # what the index counts in: "" for a storage request, "entities" for a batch

    @property
    def tag(self) -> str:
        """How errors name the item: ``[3]`` or ``entities[3]``."""
        return f"{self.body}[{self.index}]"

    def error(self, field: str, message: str) -> StorageInputError:
        """A 400 about one field of the item, named as its body names it (``[3].position``
        or, in an entity batch, ``entities.3.position``)."""
        return StorageInputError(f"{self.tag}.{field}: {message}",
                                 errors=[{"field": self._path(field), "message": message}],
                                 item=self.index)

    def _path(self, field: str) -> str:
        return f"{self.body}.{self.index}.{field}" if self.body else f"[{self.index}].{field}"

    def request(self, target: str | None) -> Request:
        """The item as the placement rule sees it, asked to be at ``target``."""
        return Request(self.index, target, self.wanted_position, self.id, self.location_id,
                       self.position, self.plate_id)

    def refused(self, refusal: Refusal) -> AppError:
        """The API's error for a refusal of the placement rule about this item: 400
        ``invalid_storage_item`` naming ``position``, or 409 with the refusal's code."""
        location, reason = refusal.location_id, refusal.reason
        if reason in ("no_location", "no_grid", "not_a_slot"):
            message = ("a position needs a locationID" if reason == "no_location" else
                       f"location {location} has no rows × columns grid" if reason == "no_grid"
                       else f"{refusal.slot!r} is not a slot of the {refusal.rows} × "
                            f"{refusal.columns} grid of {location}")
            return RefusedPosition(refusal, f"{self.tag}.position: {message}",
                                   errors=[{"field": self._path("position"),
                                            "message": message}])
        code, detail = {
            "on_plate": ("on_plate", f"Sample {self.id} is on plate {refusal.plate_id}; it is "
                                     "stored with its plate."),
            "inactive": ("location_inactive", f"Location {location} is {refusal.status}; "
                                              "nothing can be checked in."),
            "full": ("location_full", f"{self.eclass} {self.id} does not fit: location "
                                      f"{location} holds at most {refusal.limit} items."),
            "slot_taken": ("slot_taken", f"slot {refusal.slot} of location {location} is "
                                         "taken."),
            "no_free_slot": ("location_full", f"no free slot left in location {location}."),
        }[reason]
        return RefusedPlacement(refusal, f"{self.tag}: {detail}", code=code)


def read_request(raw: Any, *, positions: bool) -> list[Item]:
    """The items of a body: an array of ``{eClass, id}`` (plus ``position`` on check-in),
    each loaded through its schema (:mod:`labapp.storage.schemas`); the first error found
    is a 400 naming the item's index and field."""
    if not isinstance(raw, list) or not raw:
        raise StorageInputError("The body must be a non-empty JSON array of {eClass, id}.")
    if len(raw) > MAX_ITEMS:
        raise StorageInputError(f"At most {MAX_ITEMS} items per request.")
    schema = StoredItemSchema() if positions else ItemRefSchema()
    items: list[Item] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise _item_error(index, "_item", "expected an object {eClass, id}")
        try:
            loaded = schema.load(entry)
        except ValidationError as error:
            raise _item_error(index, *_first_error(schema, error)) from None
        entity_id = loaded["id"]
        if entity_id in seen:
            raise _item_error(index, "id", f"{entity_id!r} is also items[{seen[entity_id]}]")
        seen[entity_id] = index
        items.append(Item(index, loaded["eClass"], entity_id, loaded.get("position")))
    return items


def _first_error(schema: Schema, error: ValidationError) -> tuple[str, str]:
    """The field and message to report: an unknown property first, then the schema's
    fields in their order."""
    # marshmallow leaves normalized_messages unannotated; it returns a dict by field.
    messages: dict[str, Any] = error.normalized_messages()  # type: ignore[no-untyped-call]
    order = list(schema.fields)
    field = min(messages, key=lambda name: (order.index(name) if name in order else -1, name))
    found = messages[field]
    return field, found[0] if isinstance(found, list) else str(found)


def _load_items(actor: Actor, items: list[Item]) -> None:
    """Fill in where each item is; 404 (never revealing) / 403 naming the first bad item."""
    by_id = {item.id: item for item in items}
    ids = sorted(by_id)
    found: dict[str, tuple[str, str | None, str | None]] = {}
    for start in range(0, len(ids), 1000):
        chunk = ids[start:start + 1000]
        for row in db.session.execute(select(_ENTITY.c.id, _ENTITY.c.eclass,
                                             _ENTITY.c.department_id, _ENTITY.c.project_id)
                                      .where(_ENTITY.c.id.in_(chunk))):
            found[row.id] = (row.eclass, row.department_id, row.project_id)
    for item in items:
        stored = found.get(item.id)
        hidden = f"[{item.index}]: no {item.eclass} {item.id!r}."
        if stored is None or stored[0] != item.eclass:
            raise NotFound(hidden)
        require_writable(actor, *stored, hidden=hidden, read_only=(
            f"[{item.index}]: you may read but not move {item.eclass} {item.id!r}."))
    lock_items(items)
    for item in items:
        refuse_plated(item)


def refuse_plated(item: Item) -> None:
    """409 ``on_plate`` for a sample on a plate: it is stored with its plate (checked in
    or out only with it)."""
    if item.plate_id is not None:
        raise item.refused(Refusal(item.index, "on_plate", plate_id=item.plate_id))


def lock_items(items: list[Item]) -> None:
    """Read where each stored item is (and the plate of a sample), locking its rows in id
    order."""
    by_id = {item.id: item for item in items}
    ids = sorted(by_id)
    for eclass, table in _TABLES.items():
        wanted = [item_id for item_id in ids if by_id[item_id].eclass == eclass]
        plate = table.c.plate_id if eclass == "Sample" else None
        columns = [table.c.id, table.c.location_id, table.c.position, _ENTITY.c.version]
        for start in range(0, len(wanted), 1000):
            query = (select(*columns, *(() if plate is None else (plate,)))
                     .join_from(table, _ENTITY, table.c.id == _ENTITY.c.id)
                     .where(table.c.id.in_(wanted[start:start + 1000]))
                     .order_by(table.c.id).with_for_update())
            for row in db.session.execute(query):
                item = by_id[row.id]
                item.location_id, item.position, item.version = (row.location_id,
                                                                 row.position, row.version)
                item.plate_id = row.plate_id if plate is not None else None


def lock_target(actor: Actor, location_id: str) -> Location:
    """The location items go into: visible (404), writable (403), its row locked until the
    transaction ends (whether it takes them is the placement rule's: :func:`settle`)."""
    location = get_location(actor, location_id)
    require_writable(actor, location.eclass, location.department_id, location.project_id,
                     hidden=f"No location {location_id!r}.",
                     read_only=f"You may read but not store into location {location_id!r}.")
    db.session.execute(select(Location.__table__.c.id)
                       .where(Location.__table__.c.id == location_id).with_for_update())
    return location


def room_of(location: Any, *, new: bool = False) -> Room:
    """A location as the placement rule sees it: its status, grid and capacity, the items
    stored in it and the slots they hold (none for a location the same batch creates)."""
    return Room(location.id, location.status, location.rows, location.columns,
                location.capacity,
                0 if new else stored_counts([location.id]).get(location.id, 0),
                {} if new else occupied_positions(location.id))


def occupied_positions(location_id: str) -> dict[str, str]:
    """``position → item id`` of the slots taken in a location."""
    taken: dict[str, str] = {}
    for eclass, table in _TABLES.items():
        extra = (table.c.plate_id.is_(None),) if eclass == "Sample" else ()
        for item_id, position in db.session.execute(
                select(table.c.id, table.c.position)
                .where(table.c.location_id == location_id, table.c.position.is_not(None),
                       *extra)):
            taken[position] = item_id
    return taken


def settle(rooms: Mapping[str, Room], placed: Sequence[tuple[Item, str | None]]
           ) -> dict[str | None, list[Item]]:
    """Ask the placement rule where each item goes (``(item, target)``; target None: out of
    storage) and set each moving item's ``new_position``. Returns the items that change
    place, by target; raises the first refusal (a bad position before a conflict)."""
    allocation = plan_moves(rooms, [item.request(target) for item, target in placed])
    by_index = {item.index: item for item, _target in placed}
    refusal = allocation.first_refusal()
    if refusal is not None:
        raise by_index[refusal.index].refused(refusal)
    moving: dict[str | None, list[Item]] = {}
    for outcome in allocation.outcomes:
        if isinstance(outcome, Move) and outcome.moves:
            item = by_index[outcome.index]
            item.new_position = outcome.position
            moving.setdefault(outcome.location_id, []).append(item)
    return moving


def _write(items: list[Item], location_id: str | None, user_id: str) -> None:
    """Store ``items`` at ``location_id`` (None: nowhere) with their new positions: rows,
    versions, audit trail, events and the samples on moved plates."""
    now = utc_now()
    for eclass, table in _TABLES.items():
        rows = [{"key": item.id, "loc": location_id, "pos": item.new_position}
                for item in items if item.eclass == eclass]
        if rows:
            db.session.execute(update(table).where(table.c.id == bindparam("key"))
                               .values(location_id=bindparam("loc"),
                                       position=bindparam("pos")), rows,
                               execution_options={"synchronize_session": False})
    _version_moves([_Moved(item.id, item.version, item.location_id, item.position,
                           item.new_position) for item in items], location_id, user_id, now)
    record_moves(items, location_id, user_id, now)
    db.session.expire_all()


@dataclass(frozen=True)
class _Moved:
    """An entity that changes place: its id and version, where it was and its new slot."""

    id: str
    version: int
    location_id: str | None
    position: str | None
    new_position: str | None


def _version_moves(moved: list[_Moved], location_id: str | None, user_id: str,
                   now: datetime) -> None:
    """Each of ``moved``, now at ``location_id``, gets its next version (modified by
    ``user_id`` at ``now``) and an ``update`` audit event of its locationID and position."""
    db.session.execute(update(_ENTITY).where(_ENTITY.c.id == bindparam("key"))
                       .values(version=bindparam("ver"), modified_by=user_id,
                               modified_utc=now),
                       [{"key": entity.id, "ver": entity.version + 1} for entity in moved],
                       execution_options={"synchronize_session": False})
    audits = []
    for entity in moved:
        changes = {}
        if entity.location_id != location_id:
            changes["locationID"] = {"old": entity.location_id, "new": location_id}
        if entity.position != entity.new_position:
            changes["position"] = {"old": entity.position, "new": entity.new_position}
        audits.append({"entity_id": entity.id, "action": "update",
                       "version": entity.version + 1, "user_id": user_id,
                       "timestamp_utc": now, "changes": changes})
    db.session.execute(insert(table_of(AuditEvent)), audits)


def _carry_plate_samples(plates: list[str], location_id: str | None, user_id: str,
                         now: datetime) -> None:
    """The samples on the moved ``plates`` travel along to ``location_id`` (None: nowhere),
    with no position of their own there. Each one whose place changes gets a new version
    and an audit event of its ``locationID``, like any sample that moves, so the change log
    (and the change feed, webhooks and mirrors reading it) tells of it as an ``update``."""
    sample = table_of(Sample)
    carried = db.session.execute(
        select(sample.c.id, sample.c.location_id, sample.c.position, _ENTITY.c.version)
        .join(_ENTITY, _ENTITY.c.id == sample.c.id)
        .where(sample.c.plate_id.in_(plates))).all()
    moved = [row for row in carried
             if row.location_id != location_id or row.position is not None]
    if not moved:
        return
    db.session.execute(update(sample).where(sample.c.plate_id.in_(plates))
                       .values(location_id=location_id, position=None),
                       execution_options={"synchronize_session": False})
    _version_moves([_Moved(row.id, row.version, row.location_id, row.position, None)
                    for row in moved], location_id, user_id, now)


def record_moves(items: list[Item], location_id: str | None, user_id: str,
                 now: datetime) -> None:
    """What follows once ``items`` are written at ``location_id`` (None: nowhere) with their
    ``new_position``: their ``CheckedOut``/``CheckedIn`` events, the storage log (a move is
    its check-out and its check-in) and the samples on moved plates, which travel along."""
    plates = [item.id for item in items if item.eclass == "Plate"]
    if plates:
        _carry_plate_samples(plates, location_id, user_id, now)
    events = []
    for item in items:
        if item.location_id is not None:
            events.append({"entity_id": item.id, "kind": "CheckedOut", "user_id": user_id,
                           "timestamp_utc": now,
                           "data": {"locationID": item.location_id, "position": item.position}})
        if location_id is not None:
            events.append({"entity_id": item.id, "kind": "CheckedIn", "user_id": user_id,
                           "timestamp_utc": now,
                           "data": {"locationID": location_id,
                                    "position": json_value(item.new_position)}})
    if events:
        db.session.execute(insert(table_of(EntityEvent)), events)
    entries = [log.LogEntry(log.CHECKOUT, item.eclass, item.id, item.location_id, item.position)
               for item in items if item.location_id is not None]
    if location_id is not None:
        entries += [log.LogEntry(log.CHECKIN, item.eclass, item.id, location_id,
                                 item.new_position) for item in items]
    log.write(entries, user_id, now)


def check_in(actor: Actor, location_id: str, raw_items: Any) -> dict[str, Any]:
    """Store every item in the location (decisions §10) and return the location.

    Raises 400 (bad body, bad position), 404 (location or item not visible), 403 (not
    writable), 409 ``location_full``, ``slot_taken``, ``on_plate`` or ``location_inactive``.
    """
    items = read_request(raw_items, positions=True)
    location = lock_target(actor, location_id)
    _load_items(actor, items)
    moving = settle({location.id: room_of(location)}, [(item, location.id) for item in items])
    if moving:
        _write(moving[location.id], location.id, actor.author_id)
    return locations_api([get_location(actor, location_id)])[0]


def check_out(actor: Actor, raw_items: Any) -> dict[str, Any]:
    """Take every item out of where it is stored. Answers the location when all came from
    one location the actor may see, else ``{locations: [...]}`` (the visible ones)."""
    items = read_request(raw_items, positions=False)
    _load_items(actor, items)
    for item in items:
        if item.location_id is None:
            raise Conflict(f"[{item.index}]: {item.eclass} {item.id} is not stored anywhere.",
                           code="not_stored")
    _write(items, None, actor.author_id)
    sources = sorted({item.location_id for item in items if item.location_id is not None})
    visible = []
    for source in sources:
        try:
            visible.append(get_location(actor, source))
        except NotFound:
            continue
    answer = locations_api(visible)
    if len(sources) == 1 and len(answer) == 1:
        return answer[0]
    return {"locations": answer}
