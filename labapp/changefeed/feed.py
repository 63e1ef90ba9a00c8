"""Reading the change log as one caller may: pages of changes after a cursor.

A cursor is the ``seq`` of the last change a client has seen (or the current end of the log,
when it has seen none that concern it). A caller is shown the changes to what the one
visibility rule lets them read, judged by the entity's department and project after the
change against the grants they hold now; a change that took an entity they could read (its
department and project before it) to where they cannot is shown as ``hidden``, with no
entity. ``entity``, when asked for, is the entity as the caller reads it now.
"""
from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, or_, select

from labapp.access.actor import Actor
from labapp.access.labels import actor_labels
from labapp.access.visibility import readable, readable_through
from labapp.db import db
from labapp.errors import Gone
from labapp.model import ChangeLogEntry, ChangeLogHorizon
from labapp.model.registry import find_class
from labapp.reading.lookup import to_api

HIDDEN = "hidden"
CURSOR = re.compile(r"^([0-9]{1,18})(?:-([0-9a-f]{8}))?$")
# A page looks at most this many numbers past its cursor at a time, and at most
# SCAN_WINDOWS windows in all, so a caller who may read little of a busy log costs bounded
# work per request; the page's ``next`` then moves past what was looked at.
SCAN_WINDOW = 10_000
SCAN_WINDOWS = 10


class CursorExpired(Gone):
    """410: the changes after the cursor are no longer all kept (retention), or the cursor
    is not one this log gave (from another database, or before a restore)."""

    code = "cursor_expired"


@dataclass(frozen=True)
class FeedPage:
    """The changes of one page in order, and the cursor to read on from."""

    changes: list[dict[str, Any]]
    next: int


def access_print(actor: Actor) -> str:
    """Eight hex digits that change whenever what ``actor`` may read changes (a grant given
    or taken, another home department, ADMIN given or taken)."""
    labels = actor_labels(actor)
    text = "all" if labels is None else "\n".join(sorted(labels))
    return hashlib.blake2b(text.encode(), digest_size=4).hexdigest()


def cursor_text(actor: Actor, seq: int) -> str:
    """The cursor a client is given: the position and the caller's :func:`access_print`."""
    return f"{seq}-{access_print(actor)}"


def cursor_position(actor: Actor, text: str) -> int:
    """The position of a cursor :func:`cursor_text` gave (or a bare number). Raises
    :class:`CursorExpired` when the caller's access has changed since: entities came into
    or went out of their sight with no change of their own, so the client must read the
    current state again."""
    matched = CURSOR.match(text)
    if matched is None:
        raise ValueError(f"not a cursor: {text!r}")
    if matched.group(2) is not None and matched.group(2) != access_print(actor):
        raise CursorExpired(
            "What you may read has changed since this cursor was given (a grant given or "
            "taken): read the current state again, then follow the changes from the cursor "
            "GET /api/changes gives without one.")
    return int(matched.group(1))


def current_cursor() -> int:
    """The end of the log: the largest number a committed change holds (0: none yet)."""
    return db.session.scalar(select(func.coalesce(func.max(ChangeLogEntry.seq), 0))) or 0


def removed_through() -> int:
    """The largest number the retention has removed (0: none)."""
    return db.session.scalar(select(ChangeLogHorizon.removed_through)) or 0


def read_page(actor: Actor, after: int, top: int, expand: bool = False) -> FeedPage:
    """Up to ``top`` changes after ``after`` that ``actor`` may be told of, oldest first.

    Raises :class:`CursorExpired` when changes after ``after`` have been removed, or when
    ``after`` lies past the end of the log. Call it inside a unit of work.
    """
    latest = current_cursor()
    removed = removed_through()
    if after > latest or after < removed:
        raise CursorExpired(
            f"Cursor {after} is no longer served: the change log holds the changes after "
            f"{removed} up to {latest}. Read the current state again (the entity lists), "
            f"then follow the changes from cursor {latest}.")
    visible_now = readable(actor, ChangeLogEntry)
    visible_before = readable_through(actor, ChangeLogEntry.was_department_id,
                                      ChangeLogEntry.was_project_id)
    rows: list[Any] = []
    position = after
    for _ in range(SCAN_WINDOWS):
        if position >= latest or len(rows) >= top:
            break
        upper = min(latest, position + SCAN_WINDOW)
        found = db.session.execute(
            select(ChangeLogEntry, visible_now.label("visible"))
            .where(ChangeLogEntry.seq > position, ChangeLogEntry.seq <= upper,
                   or_(visible_now, visible_before))
            .order_by(ChangeLogEntry.seq).limit(top - len(rows))).all()
        rows.extend(found)
        position = upper if len(rows) < top else _number(found[-1][0])
    if removed_through() > after:  # the retention removed some of them meanwhile
        raise CursorExpired(f"Cursor {after} is no longer served: the changes after it "
                            "were removed while they were read. Read the current state "
                            "again, then follow the changes from the current cursor.")
    changes = [_change(entry, bool(visible)) for entry, visible in rows]
    if expand:
        _add_entities(actor, changes)
    return FeedPage(changes, position)


def _number(entry: ChangeLogEntry) -> int:
    if entry.seq is None:  # a read change always has its number: the query asks for one
        raise ValueError(f"change {entry.id} has no number")
    return entry.seq


def _change(entry: ChangeLogEntry, visible: bool) -> dict[str, Any]:
    return {"seq": entry.seq, "entityID": entry.entity_id, "eClass": entry.eclass,
            "kind": entry.kind if visible else HIDDEN, "version": entry.version,
            "actorID": entry.actor_id, "createdUtc": entry.created_utc}


def _add_entities(actor: Actor, changes: list[dict[str, Any]]) -> None:
    """Give each change but deletions and hidden ones ``entity``: the entity as ``actor``
    reads it now, or None when it is gone or no longer readable. One statement per class."""
    wanted: dict[str, set[str]] = defaultdict(set)
    for change in changes:
        if change["kind"] not in (HIDDEN, "delete"):
            wanted[change["eClass"]].add(change["entityID"])
    found: dict[str, dict[str, Any]] = {}
    for eclass, ids in wanted.items():
        spec = find_class(eclass)
        if spec is None:  # a class the data model has since lost
            continue
        for entity in db.session.scalars(select(spec.model).where(
                spec.model.id.in_(sorted(ids)), readable(actor, spec.model))):
            found[entity.id] = to_api(entity, spec)
    for change in changes:
        if change["kind"] not in (HIDDEN, "delete"):
            change["entity"] = found.get(change["entityID"])
