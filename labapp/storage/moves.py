"""Moving and renaming locations: the stored ``hierarchy`` path, cycle refusal, the log.

``hierarchy`` is the names from the root down to the location itself, joined by `` / ``
(``Freezer A / Rack 2 / Box 5``). It is computed when a location is created and refreshed
for the location and every descendant when it moves (a new ``parentID``) or is renamed.
Items inside a location keep their ``locationID``, so they move with it; one ``move`` entry
is logged per moved location.
"""
from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import Row, bindparam, select, text, update

from labapp.access.actor import Actor
from labapp.access.visibility import writable
from labapp.db import db, table_of, unit_state
from labapp.errors import Conflict
from labapp.model import Entity, Location
from labapp.storage import log
from labapp.storage.service import name_order, stored_counts

SEPARATOR = " / "
_TABLE = table_of(Location)
_ENTITY = table_of(Entity)
_NEW_PATHS = "labapp.storage.new_paths"  # hierarchy of locations created in this unit
_PATHS_LOCK = 0x53544F52  # "STOR": the PostgreSQL advisory lock of location paths
_LOCKED = "labapp.storage.paths_locked"


def serialize_paths() -> None:
    """Hold the lock of location paths until the unit of work ends, so that moves, renames
    and new children are decided one at a time: two moves can never make a cycle together,
    and no path is computed from a parent's path another transaction is changing. On
    PostgreSQL a transaction-scoped advisory lock; SQLite's units of work already hold the
    database's write lock."""
    if db.session.get_bind().dialect.name != "postgresql" or unit_state(_LOCKED, dict[str, bool]):
        return
    db.session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PATHS_LOCK})
    unit_state(_LOCKED, dict[str, bool])["held"] = True


def _stored_path(location_id: str) -> str | None:
    known = unit_state(_NEW_PATHS, dict[str, str]).get(location_id)
    if known is not None:
        return known
    return db.session.scalar(select(_TABLE.c.hierarchy).where(_TABLE.c.id == location_id))


def path_of(parent_id: str | None, name: str) -> str:
    """The hierarchy of a location named ``name`` under ``parent_id``."""
    parent_path = _stored_path(parent_id) if parent_id else None
    return f"{parent_path}{SEPARATOR}{name}" if parent_path else name


def remember_new(location_id: str, path: str) -> None:
    """Note the path of a location the unit of work creates, for children in the same batch
    (inserted only after every row is built)."""
    unit_state(_NEW_PATHS, dict[str, str])[location_id] = path


def descendant_ids(location_id: str) -> list[str]:
    """Every location below ``location_id``, breadth first."""
    found: list[str] = []
    level = [location_id]
    seen = {location_id}
    while level:
        below: list[str] = []
        for start in range(0, len(level), 1000):
            chunk = level[start:start + 1000]
            below.extend(db.session.scalars(select(_TABLE.c.id)
                                            .where(_TABLE.c.parent_id.in_(chunk))))
        level = [child for child in below if child not in seen]
        seen.update(level)
        found.extend(level)
    return found


def refuse_cycle(location_id: str, new_parent: str | None) -> None:
    """409 ``location_cycle`` when ``new_parent`` is the location or lies below it."""
    if new_parent is None:
        return
    if new_parent == location_id or new_parent in set(descendant_ids(location_id)):
        raise Conflict(f"Location {location_id} cannot be moved into {new_parent}: a location "
                       "cannot become its own ancestor.", code="location_cycle")


def refresh_descendants(location_id: str, path: str) -> int:
    """Recompute the hierarchy of every location below ``location_id`` (whose own path is
    now ``path``); returns how many were refreshed."""
    paths: dict[str, str] = {location_id: path}
    level = [location_id]
    changed: list[dict[str, str]] = []
    while level:
        rows: list[Row[str, str | None, str]] = []
        for start in range(0, len(level), 1000):
            rows.extend(db.session.execute(
                select(_TABLE.c.id, _TABLE.c.parent_id, _ENTITY.c.name)
                .join_from(_TABLE, _ENTITY, _TABLE.c.id == _ENTITY.c.id)
                .where(_TABLE.c.parent_id.in_(level[start:start + 1000]))))
        level = []
        for child_id, parent_id, name in rows:
            if child_id in paths or parent_id is None:
                continue
            paths[child_id] = f"{paths[parent_id]}{SEPARATOR}{name}"
            changed.append({"key": child_id, "path": paths[child_id]})
            level.append(child_id)
    if changed:
        db.session.execute(update(_TABLE).where(_TABLE.c.id == bindparam("key"))
                           .values(hierarchy=bindparam("path")), changed,
                           execution_options={"synchronize_session": False})
        for child in changed:  # keep loaded objects truthful
            loaded = db.session.identity_map.get(db.session.identity_key(Location,
                                                                          child["key"]))
            if loaded is not None:
                db.session.expire(loaded, ["hierarchy"])
    return len(changed)


def log_move(location: Location, old_parent: str | None, new_parent: str | None,
             user_id: str) -> None:
    """One ``move`` entry: the location left ``old_parent`` for ``new_parent``, at the time
    of the location's change (the change log ties the two by it)."""
    log.write([log.LogEntry(log.MOVE, "Location", location.id, new_parent,
                            location.position, old_parent)], user_id, location.modified_utc)


def items_below(location_id: str) -> Mapping[str, int]:
    """How many locations and stored items move with ``location_id`` (itself included):
    ``{"locations": n, "items": m}``; for the move confirmation."""
    ids = [location_id, *descendant_ids(location_id)]
    return {"locations": len(ids), "items": sum(stored_counts(ids).values())}


def move_targets(actor: Actor, location_id: str) -> list[tuple[str, str]]:
    """``(id, hierarchy)`` of the locations the actor may move ``location_id`` into: those
    they may write, but not the location itself or anything below it; by path, numbers by
    value (:func:`name_order`)."""
    excluded = {location_id, *descendant_ids(location_id)}
    rows = db.session.execute(select(Location.id, Location.hierarchy)
                              .where(writable(actor, Location)))
    return sorted(((row.id, row.hierarchy or row.id) for row in rows if row.id not in excluded),
                  key=lambda target: name_order(target[1], target[0]))
