"""Where the entity batch puts samples and plates: through the one check-in rule.

``POST /api/entity`` (create, update, clone) and the entity forms may give a Sample or a
Plate a ``locationID`` and a ``position``. Such an item is a check-in (decisions §10): the
location must be visible, writable and Active, have room, and the slot must be inside its
grid and free; a slot left out is the first free one; the errors are those of
``/checkin``. ``locationID: null`` checks an item out; a ``position`` alone moves it within
the location it is in. Moves are logged as a check-out and a check-in, like every other.

:func:`plan` is installed as a planner of the batch (:func:`labapp.create_app`): it decides
before any row is written, writing the final ``locationID``/``position`` into the items so
the batch stores and audits them, and returns what follows once they are written (the log,
the events, the samples on moved plates).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from labapp.access.actor import Actor
from labapp.db import db
from labapp.entities.batch import PreparedItem
from labapp.entities.rules import WritePlan
from labapp.model.registry import existing_class
from labapp.model.types import utc_now
from labapp.storage import checkin
from labapp.storage.allocation import Room, stays
from labapp.storage.service import LOCATION, STORABLE_CLASSES

PLACEMENT_FIELDS = ("locationID", "position")


@dataclass
class _Request:
    """One batch item that asks to be placed, with the storage view of it."""

    prepared: PreparedItem
    item: checkin.Item
    wants_location: bool
    target: str | None = None


def _requests(items: list[PreparedItem]) -> list[_Request]:
    requests = []
    for prepared in items:
        if prepared.spec.name not in STORABLE_CLASSES:
            continue
        values = prepared.values
        if not any(name in values for name in PLACEMENT_FIELDS):
            continue
        wanted = values.get("position")
        wanted = wanted.strip() or None if isinstance(wanted, str) else None
        item = checkin.Item(prepared.index, prepared.spec.name, prepared.id, wanted,
                            body="entities")
        if prepared.is_new:
            item.plate_id = values.get("plateID")
        requests.append(_Request(prepared, item, "locationID" in values))
    return requests


def _changes_place(request: _Request) -> bool:
    """Whether an item asks to be somewhere else; one that is asked to stay where it is (an
    edit sending its stored place back) is left alone, its values set to where it is, and
    its location is not even looked at."""
    item, values = request.item, request.prepared.values
    if stays(item.request(request.target)):
        values["locationID"], values["position"] = item.location_id, item.position
        return False
    return True


def _new_location(prepared: PreparedItem) -> Room:
    """A location the same batch creates: nothing is stored there yet."""
    values = prepared.values
    status = values.get("status") or existing_class(LOCATION).workflow.initial
    return checkin.room_of(SimpleNamespace(id=prepared.id, status=status, rows=values.get("rows"),
                                           columns=values.get("columns"),
                                           capacity=values.get("capacity")), new=True)


def _targets(actor: Actor, requests: list[_Request], items: list[PreparedItem]
             ) -> dict[str, Room]:
    """Every location items go into, checked (visible, writable) and locked in id order."""
    created = {prepared.id: prepared for prepared in items
               if prepared.is_new and prepared.spec.name == LOCATION}
    rooms: dict[str, Room] = {}
    for target in sorted({request.target for request in requests
                          if request.target is not None}):
        rooms[target] = (_new_location(created[target]) if target in created
                         else checkin.room_of(checkin.lock_target(actor, target)))
    return rooms


def plan(actor: Actor, items: list[PreparedItem]) -> WritePlan | None:
    """Place the batch's samples and plates that give a ``locationID`` or ``position``;
    None when none does. Raises what ``/checkin`` raises (400, 403, 404, 409)."""
    requests = _requests(items)
    if not requests:
        return None
    stored = [request for request in requests if not request.prepared.is_new]
    checkin.lock_items([request.item for request in stored])
    for request in stored:
        db.session.expire(request.prepared.existing, ["location_id", "position"])
    for request in requests:
        item = request.item
        request.target = (request.prepared.values["locationID"] if request.wants_location
                          else item.location_id)
    requests = [request for request in requests if _changes_place(request)]
    if not requests:
        return None
    moves = checkin.settle(_targets(actor, requests, items),
                           [(request.item, request.target) for request in requests])
    moving = {item.id for group in moves.values() for item in group}
    for request in requests:
        item, values = request.item, request.prepared.values
        if item.id in moving:
            values["locationID"], values["position"] = request.target, item.new_position
        else:
            values["locationID"], values["position"] = item.location_id, item.position
    if not moving:
        return None

    def record() -> None:
        # The storage log's moment is the updates' own (the batch gives them one): SQLite's
        # change log names an update a check-in or check-out by that moment.
        updated = [request.prepared.existing.modified_utc for request in requests
                   if request.prepared.existing is not None]
        now = updated[0] if updated else utc_now()
        for target, group in moves.items():
            if group:
                checkin.record_moves(group, target, actor.author_id, now)

    return record
