"""Finding what the cells of a chunk of rows name, in bulk: one query per chunk and target
class, never one per row.

A cell names an entity by its id, its barcode or its name, tried in that order; only
entities the actor may see are found, so a hidden entity is reported as unknown. A name two
entities share is ambiguous: the problem names the candidates. A location may also be named
by its path (``Freezer 1 / Rack 2 / Box 12``).
"""
from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from sqlalchemy import or_, select

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.model import Entity, Location
from labapp.model.registry import ClassSpec

_PATH_SEPARATOR = re.compile(r"\s*[/>\\]\s*")
PATH_SEPARATOR = " / "
_QUERY_KEYS = 300  # keys per statement: three IN lists of them stay far below any limit
_CANDIDATES_SHOWN = 5


@dataclass(frozen=True, slots=True)
class Found:
    """One visible entity a cell may name."""

    id: str
    eclass: str
    name: str
    barcode: str | None
    department_id: str | None
    project_id: str | None


@dataclass(frozen=True, slots=True)
class Place:
    """A visible location with what a dry run checks of a check-in into it."""

    id: str
    name: str
    status: str
    department_id: str | None
    project_id: str | None
    rows: int | None
    columns: int | None
    capacity: int | None


def candidates_text(found: Iterable[str]) -> str:
    """Ids of candidates as a problem lists them (the first few)."""
    ids = sorted(found)
    shown = ", ".join(ids[:_CANDIDATES_SHOWN])
    return shown + (f" and {len(ids) - _CANDIDATES_SHOWN} more" if len(ids) > _CANDIDATES_SHOWN
                    else "")


def pick(key: str, by_id: dict[str, Found], by_barcode: dict[str, Found],
         by_name: dict[str, list[Found]]) -> tuple[Found | None, str | None]:
    """``(entity, None)`` for the one entity ``key`` names, else ``(None, problem)``."""
    if key in by_id:
        return by_id[key], None
    if key in by_barcode:
        return by_barcode[key], None
    named = by_name.get(key, [])
    if len(named) == 1:
        return named[0], None
    if named:
        return None, (f"{key!r} is ambiguous: {len(named)} entities have that name "
                      f"({candidates_text(entity.id for entity in named)}); give the id or "
                      "barcode")
    return None, None


class Lookup:
    """The visible entities of one target class named by the keys of a chunk."""

    def __init__(self, actor: Actor, target_class: str | None) -> None:
        self.actor = actor
        self.target_class = target_class  # None: any class
        self.by_id: dict[str, Found] = {}
        self.by_barcode: dict[str, Found] = {}
        self.by_name: dict[str, list[Found]] = {}

    def load(self, keys: Collection[str]) -> None:
        """Find every entity named by one of ``keys`` (replacing what an earlier chunk
        loaded)."""
        self.by_id, self.by_barcode, self.by_name = {}, {}, {}
        ordered = sorted(set(keys))
        for start in range(0, len(ordered), _QUERY_KEYS):
            part = ordered[start:start + _QUERY_KEYS]
            query = select(Entity.id, Entity.eclass, Entity.name, Entity.barcode,
                           Entity.department_id, Entity.project_id).where(
                or_(Entity.id.in_(part), Entity.barcode.in_(part), Entity.name.in_(part)),
                readable(self.actor))
            if self.target_class is not None:
                query = query.where(Entity.eclass == self.target_class)
            for row in db.session.execute(query):
                found = Found(*row)
                self.by_id[found.id] = found
                if found.barcode is not None:
                    self.by_barcode[found.barcode] = found
                self.by_name.setdefault(found.name, []).append(found)

    def pick(self, key: str) -> tuple[Found | None, str | None]:
        return pick(key, self.by_id, self.by_barcode, self.by_name)


def path_key(text: str) -> str:
    """A location path spelled as the hierarchy stores it (``Freezer 1/Rack 2`` →
    ``Freezer 1 / Rack 2``)."""
    return PATH_SEPARATOR.join(part for part in _PATH_SEPARATOR.split(text.strip()) if part)


class Places:
    """Visible locations named by id, barcode, path or name; cached for the whole import
    (a file names few locations, many times)."""

    def __init__(self, actor: Actor) -> None:
        self.actor = actor
        self._known: dict[str, tuple[Place | None, str | None]] = {}

    def load(self, keys: Iterable[str]) -> None:
        wanted = sorted({key for key in keys if key not in self._known})
        paths = {key: path_key(key) for key in wanted}
        found: list[tuple[Place, str | None, str | None]] = []
        location = Location.__table__.c
        for start in range(0, len(wanted), _QUERY_KEYS):
            part = wanted[start:start + _QUERY_KEYS]
            part_paths = sorted({paths[key] for key in part})
            query = (select(Entity.id, Entity.name, Entity.status, Entity.department_id,
                            Entity.project_id, location.rows, location.columns,
                            location.capacity, Entity.barcode, location.hierarchy)
                     .join_from(Entity, Location.__table__, location.id == Entity.id)
                     .where(or_(Entity.id.in_(part), Entity.barcode.in_(part),
                                Entity.name.in_(part), location.hierarchy.in_(part_paths)),
                            readable(self.actor)))
            for row in db.session.execute(query):
                found.append((Place(*row[:8]), row.barcode, row.hierarchy))
        for key in wanted:
            self._known[key] = self._choose(key, paths[key], found)

    @staticmethod
    def _choose(key: str, path: str, found: list[tuple[Place, str | None, str | None]]
                ) -> tuple[Place | None, str | None]:
        for matches in ([place for place, _, _ in found if place.id == key],
                        [place for place, barcode, _ in found if barcode == key],
                        [place for place, _, hierarchy in found if hierarchy == path],
                        [place for place, _, _ in found if place.name == key]):
            if len(matches) == 1:
                return matches[0], None
            if matches:
                return None, (f"location {key!r} is ambiguous: {len(matches)} locations are "
                              f"called that ({candidates_text(p.id for p in matches)}); give "
                              "its path, barcode or id")
        return None, f"unknown location {key!r}"

    def pick(self, key: str) -> tuple[Place | None, str | None]:
        return self._known.get(key, (None, f"unknown location {key!r}"))


def existing_by(actor: Actor, spec: ClassSpec, field: str,
                keys: Collection[str]) -> dict[str, list[Entity]]:
    """``key → the visible entities of the class whose ``field`` holds it`` (for matching
    rows to the entities they update)."""
    column = spec.column(spec.fields[field])
    found: dict[str, list[Entity]] = {}
    ordered = sorted(set(keys))
    for start in range(0, len(ordered), _QUERY_KEYS * 3):
        query = select(spec.model).where(column.in_(ordered[start:start + _QUERY_KEYS * 3]),
                                         readable(actor))
        for entity in db.session.scalars(query):
            found.setdefault(str(getattr(entity, spec.fields[field].stored_attr)),
                             []).append(entity)
    return found


def taken_values(column: str, keys: Collection[str]) -> set[str]:
    """Which of ``keys`` are already the ``id`` or ``barcode`` of some entity, visible or not
    (both are unique over every entity)."""
    attribute = Entity.id if column == "id" else Entity.barcode
    taken: set[str] = set()
    ordered = sorted(set(keys))
    for start in range(0, len(ordered), _QUERY_KEYS * 3):
        taken.update(value for value in db.session.scalars(
            select(attribute).where(attribute.in_(ordered[start:start + _QUERY_KEYS * 3])))
            if value is not None)
    return taken


def visible_names(actor: Actor, ids: Collection[str]) -> dict[str, str]:
    """``id → name`` of those of ``ids`` the actor may see (an item holding a slot is named
    to them only then)."""
    names: dict[str, str] = {}
    ordered = sorted(set(ids))
    for start in range(0, len(ordered), _QUERY_KEYS * 3):
        for entity_id, name in db.session.execute(select(Entity.id, Entity.name).where(
                Entity.id.in_(ordered[start:start + _QUERY_KEYS * 3]), readable(actor))):
            names[entity_id] = name
    return names
