"""A chunk of spreadsheet rows into drafts of batch items: values parsed, the entity each row
updates found, references and locations resolved — each in bulk for the chunk.

The dry run and the commit build drafts the same way; the dry run also checks what the
batch would refuse (storage slots, taken barcodes, rights) so that every row gets its
outcome, while the commit leaves those checks to the entity batch itself. Where a row's
sample or plate goes is decided by the placement rule the batch applies
(:func:`labapp.storage.allocation.plan_moves`), chunk by chunk as the commit's batches do,
with each location's slots and room carried from one chunk to the next.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from labapp.access.actor import Actor
from labapp.access.policy import may_create_class
from labapp.access.visibility import WRITE, access_type
from labapp.db import db
from labapp.imports.cells import Measured, Named, attribute_value, cell_value, checked
from labapp.imports.mapping import ATTRIBUTE_PREFIX, header_unit
from labapp.imports.targets import (
    Found,
    Lookup,
    Place,
    Places,
    existing_by,
    taken_values,
    visible_names,
)
from labapp.imports.values import CellProblem, DateOrder, convert
from labapp.model import Entity, Location
from labapp.model.registry import ClassSpec, FieldSpec
from labapp.reading.wording import unit_field
from labapp.storage.allocation import Refusal, Request, Room, describe, plan_moves, stays
from labapp.storage.checkin import room_of
from labapp.storage.service import LOCATION, STORABLE_CLASSES

LOCATION_FIELD, POSITION_FIELD = "locationID", "position"


@dataclass(frozen=True, slots=True)
class FileRow:
    """A reference to the entity another row of the same file creates."""

    row: int


@dataclass(slots=True)
class Draft:
    """One row on its way to a batch item."""

    row: int
    values: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, str] = field(default_factory=dict)  # field → the column it came from
    errors: list[tuple[str, str]] = field(default_factory=list)
    existing: Entity | None = None
    unchanged: bool = False

    def fail(self, name: str, message: str) -> None:
        self.errors.append((self.columns.get(name, name), message))


@dataclass
class FileKeys:
    """The ids, barcodes and names of the rows of the file that create entities, for
    references between rows of the same file (a parent above or below its child)."""

    by_id: dict[str, int] = field(default_factory=dict)
    by_barcode: dict[str, int] = field(default_factory=dict)
    by_name: dict[str, list[int]] = field(default_factory=dict)

    def add(self, row: int, values: Mapping[str, Any]) -> None:
        for name, index in (("id", self.by_id), ("barcode", self.by_barcode)):
            if isinstance(values.get(name), str):
                index.setdefault(values[name], row)
        if isinstance(values.get("name"), str):
            self.by_name.setdefault(values["name"], []).append(row)

    def rows_named(self, key: str) -> list[int]:
        for index in (self.by_id, self.by_barcode):
            if key in index:
                return [index[key]]
        return self.by_name.get(key, [])


class RowBuilder:
    """Builds the drafts of one import, chunk by chunk (see the module docstring)."""

    def __init__(self, actor: Actor, spec: ClassSpec, headers: Sequence[str],
                 mapping: Mapping[str, str], match: str | None, *, checking: bool,
                 date_orders: Mapping[str, DateOrder] | None = None,
                 file_refs: Mapping[tuple[int, str], int] | None = None) -> None:
        self.actor, self.spec, self.checking = actor, spec, checking
        self.columns = [(index, header, mapping[header]) for index, header in enumerate(headers)
                        if header in mapping]
        self.units = {header: header_unit(header) for _, header, _ in self.columns}
        self.order = {header: index for index, header in enumerate(headers)}
        mapped = set(mapping.values())
        self.match = match or ("id" if "id" in mapped else "barcode" if "barcode" in mapped
                               else None)
        self.storable = spec.name in STORABLE_CLASSES
        self.lookups: dict[str, Lookup] = {}
        self.places = Places(actor)
        # Every location the rows fill or empty, as the rows before have left it.
        self.rooms: dict[str, Room] = {}
        # The slot the dry run gives each row that stores an item without naming one.
        self.slots: dict[int, str] = {}
        self.file_keys = FileKeys()
        # Same-file references are possible only when the class refers to itself.
        self.self_refs = {name for name in mapped if name in spec.fields
                          and spec.fields[name].type == "ref"
                          and spec.fields[name].ref in (spec.name, "*")}
        self.date_orders: dict[str, DateOrder] = dict(date_orders or {})
        # The rows claiming each id and barcode of the file: the same dicts as the file's
        # keys, so they are held once.
        self.claimed: dict[str, dict[str, int]] = {"id": self.file_keys.by_id,
                                                   "barcode": self.file_keys.by_barcode}
        # (row, field) → the row of the file it refers to, as the dry run decided.
        self.file_refs = dict(file_refs or {})

    # --- cells ---------------------------------------------------------------------

    def _parse(self, row: int, cells: list[Any]) -> Draft:
        draft = Draft(row)
        for index, header, name in self.columns:
            cell = cells[index]
            if cell is None or (isinstance(cell, str) and not cell.strip()):
                continue  # a blank cell never clears a value: it leaves the field alone
            draft.columns[name] = header
            if name.startswith(ATTRIBUTE_PREFIX):
                draft.values[name] = attribute_value(cell)
                continue
            try:
                draft.values[name] = cell_value(self.spec, self.spec.fields[name], cell,
                                                self.units[header],
                                                self.date_orders.get(header))
            except CellProblem as problem:
                draft.fail(name, str(problem))
        return draft

    @property
    def date_columns(self) -> list[tuple[int, str]]:
        """``(index, header)`` of the columns mapped to a date field."""
        return [(index, header) for index, header, name in self.columns
                if name in self.spec.fields and self.spec.fields[name].type == "date"]

    # --- the chunk -----------------------------------------------------------------

    def build(self, chunk: Sequence[tuple[int, list[Any]]]) -> list[Draft]:
        """The drafts of a chunk of ``(row number, cells)``."""
        drafts = [self._parse(row, cells) for row, cells in chunk]
        self._match(drafts)
        if self.checking:
            self._check_taken(drafts)
        self._resolve(drafts)
        if self.storable:
            self._place(drafts)
        for draft in drafts:
            self._finish(draft)
            draft.errors.sort(key=lambda error: self.order.get(error[0], len(self.order)))
        return drafts

    def _match(self, drafts: list[Draft]) -> None:
        """Find the stored entity each row updates, by the match field."""
        if self.match is None:
            return
        keys = {draft.row: draft.values.get(self.match) for draft in drafts}
        wanted = {str(key) for key in keys.values() if key is not None}
        found = existing_by(self.actor, self.spec, self.match, wanted) if wanted else {}
        for draft in drafts:
            key = keys[draft.row]
            matches = found.get(str(key), []) if key is not None else []
            if len(matches) > 1:
                draft.fail(self.match, f"{key!r} matches {len(matches)} entities ("
                                       f"{', '.join(sorted(e.id for e in matches))})")
            elif matches:
                draft.existing = matches[0]

    def _lookup(self, target: str | None) -> Lookup:
        key = target or "*"
        if key not in self.lookups:
            self.lookups[key] = Lookup(self.actor, None if key == "*" else target)
        return self.lookups[key]

    def _resolve(self, drafts: list[Draft]) -> None:
        """Every reference cell of the chunk to an id (or a :class:`FileRow`): one query per
        target class."""
        wanted: dict[str, set[str]] = {}
        for draft in drafts:
            for name, value in draft.values.items():
                if isinstance(value, Named) and not (name == LOCATION_FIELD and self.storable):
                    wanted.setdefault(self.spec.fields[name].ref or "*", set()).add(value.key)
        for target, keys in wanted.items():
            self._lookup(target).load(keys)
        for draft in drafts:
            for name, value in list(draft.values.items()):
                if not isinstance(value, Named) or (name == LOCATION_FIELD and self.storable):
                    continue
                draft.values[name] = self._reference(draft, name, value.key)
        if self.checking and self.self_refs:
            for draft in drafts:
                if draft.existing is None:
                    self.file_keys.add(draft.row, draft.values)

    def _reference(self, draft: Draft, name: str, key: str) -> Any:
        spec = self.spec.fields[name]
        if (draft.row, name) in self.file_refs:
            return FileRow(self.file_refs[draft.row, name])
        found, problem = self._lookup(spec.ref or "*").pick(key)
        in_file = self.file_keys.rows_named(key) if name in self.self_refs else []
        if problem is not None:
            draft.fail(name, problem)
            return None
        if found is not None and in_file:
            draft.fail(name, f"{key!r} is ambiguous: {found.id} and row {in_file[0]} of this file")
            return None
        if found is not None:
            return self._found(draft, name, found)
        if len(in_file) == 1:
            return FileRow(in_file[0])
        if in_file:
            draft.fail(name, f"{key!r} is ambiguous: rows "
                             f"{', '.join(str(row) for row in in_file[:5])} of this file")
            return None
        if name in self.self_refs and self.checking:
            return Named(key)  # perhaps a row further down: decided once every row is read
        draft.fail(name, f"unknown {spec.ref if spec.ref not in (None, '*') else 'entity'} "
                         f"{key!r}")
        return None

    @staticmethod
    def _found(draft: Draft, name: str, found: Found) -> str:
        if name == "parentID" and found.id == (draft.existing.id if draft.existing else None):
            draft.fail(name, "an entity cannot be its own parent")
        return found.id

    @staticmethod
    def _stored_place(draft: Draft) -> tuple[str | None, str | None]:
        existing = draft.existing
        if existing is None:
            return None, None
        return getattr(existing, "location_id", None), getattr(existing, "position", None)

    def _place_key(self, draft: Draft) -> str | None:
        """The location a row names, or the one its item is in when it gives a slot alone
        (a move within the location, as the batch reads it)."""
        named = draft.values.get(LOCATION_FIELD)
        if isinstance(named, Named):
            return named.key
        if draft.values.get(POSITION_FIELD) is not None:
            return self._stored_place(draft)[0]
        return None

    def _place(self, drafts: list[Draft]) -> None:
        self.places.load(key for draft in drafts if (key := self._place_key(draft)))
        asked: list[tuple[Draft, Request]] = []
        named: dict[str, Place] = {}
        for draft in drafts:
            key = self._place_key(draft)
            wanted = draft.values.get(POSITION_FIELD)
            place: Place | None = None
            if key is not None:
                place, problem = self.places.pick(key)
                if problem is not None or place is None:
                    draft.fail(LOCATION_FIELD, problem or f"unknown location {key!r}")
                    continue
                if LOCATION_FIELD in draft.values:
                    draft.values[LOCATION_FIELD] = place.id
            elif wanted is None:
                continue
            if not self.checking or draft.errors:
                continue
            request = self._request(draft, place, wanted)
            if place is not None and not stays(request):
                if access_type(self.actor, LOCATION, place.department_id,
                               place.project_id) != WRITE:
                    draft.fail(LOCATION_FIELD, f"you may read but not store into {place.name}")
                    continue
                named[place.id] = place
            asked.append((draft, request))
        if asked:
            self._allocate(asked, named)

    def _request(self, draft: Draft, place: Place | None, wanted: Any) -> Request:
        existing = draft.existing
        location_id, position = self._stored_place(draft)
        plate = (getattr(existing, "plate_id", None) if existing is not None
                 else draft.values.get("plateID"))
        return Request(draft.row, place.id if place else None, wanted,
                       existing.id if existing is not None else None, location_id, position,
                       plate if isinstance(plate, str) else None)

    def _allocate(self, asked: list[tuple[Draft, Request]], named: dict[str, Place]) -> None:
        """The placement rule over the chunk's rows, with the rooms the rows before left
        (the locations the rows fill, and those their items leave)."""
        for place in named.values():
            if place.id not in self.rooms:
                self.rooms[place.id] = room_of(place)
        left = {request.location_id for _, request in asked
                if request.location_id is not None and request.location_id not in self.rooms
                and not stays(request)}
        for location in db.session.scalars(select(Location).where(Location.id.in_(sorted(left)))):
            self.rooms[location.id] = room_of(location)
        allocation = plan_moves(self.rooms, [request for _, request in asked])
        self.rooms = dict(allocation.rooms)
        names = {place.id: place.name for place in named.values()}
        names.update(visible_names(self.actor, {refusal.holder for refusal in allocation.refusals
                                                if isinstance(refusal.holder, str)}))
        for (draft, request), outcome in zip(asked, allocation.outcomes, strict=True):
            if isinstance(outcome, Refusal):
                draft.fail(*self.refusal_words(draft, outcome, names))
            elif outcome.position is not None and request.wanted is not None:
                draft.values[POSITION_FIELD] = outcome.position  # as it is stored: B2, not b02
            elif outcome.position is not None and outcome.moves:
                self.slots[draft.row] = outcome.position

    def refusal_words(self, draft: Draft, refusal: Refusal,
                      names: Mapping[str, str] | None = None) -> tuple[str, str]:
        """The field a refusal of the placement rule is about (the slot when the row gives
        one) and the refusal in words: the location by its name, the item holding a slot
        by its name when the actor may see it (never otherwise). ``names`` (id → name) are
        read when not given."""
        if names is None:
            names = visible_names(self.actor, {key for key in (refusal.location_id,
                                                               refusal.holder)
                                               if isinstance(key, str)})
        holder = names.get(refusal.holder) if isinstance(refusal.holder, str) else None
        words = describe(refusal, names.get(refusal.location_id or "", "the location"), holder)
        field = POSITION_FIELD if draft.values.get(POSITION_FIELD) is not None else LOCATION_FIELD
        return field, words

    # --- one row -------------------------------------------------------------------

    def _finish(self, draft: Draft) -> None:
        """Units converted, values checked as the API checks them, rights, and whether an
        update changes anything (the commit converts units only: the batch checks)."""
        self._units(draft)
        if not self.checking:
            return
        typed: dict[str, Any] = {}
        for name, value in draft.values.items():
            if name.startswith(ATTRIBUTE_PREFIX) or isinstance(value, FileRow | Named):
                continue
            spec = self.spec.fields[name]
            try:
                typed[name] = checked(spec, value)
            except CellProblem as problem:
                draft.fail(name, str(problem))
        self._claim_match(draft)
        if draft.existing is None:
            self._check_new(draft)
        else:
            self._check_update(draft, typed)

    def _units(self, draft: Draft) -> None:
        """Each number written with a unit (in its cell or its header) in the unit it is
        stored in: the row's unit column, else the stored entity's unit, else the unit the
        header names (a column holds one unit); a field without a unit field keeps numbers
        in its header's unit. Converted, or a row error saying why not."""
        for name, value in list(draft.values.items()):
            if not isinstance(value, Measured):
                continue
            holder = unit_field(self.spec, name)
            target: str | None = value.column_unit
            if holder is not None:
                stored = (getattr(draft.existing, self.spec.fields[holder].stored_attr)
                          if draft.existing is not None else None)
                target = draft.values.get(holder) or stored or target or value.unit
                if not draft.values.get(holder) and not stored:
                    draft.values[holder] = target
            elif target is None:
                draft.fail(name, f"{value.unit!r}: {name} has no unit; give the number alone")
                draft.values[name] = None
                continue
            try:
                draft.values[name] = convert(value.value, value.unit, target)
            except CellProblem as problem:
                draft.fail(name, str(problem))
                draft.values[name] = None

    def _claim_match(self, draft: Draft) -> None:
        """Two rows may not create or update the same entity."""
        key = draft.values.get(self.match) if self.match else None
        if key is None or self.match in ("id", "barcode"):
            return
        earlier = self.claimed.setdefault("match", {}).setdefault(str(key), draft.row)
        if earlier != draft.row:
            draft.fail(self.match or "", f"{key!r} is also given to row {earlier}")

    def _check_new(self, draft: Draft) -> None:
        if not may_create_class(self.actor, self.spec.name):
            draft.fail("id", f"you may not create {self.spec.name} entities")
        if self.spec.prefix is None and "id" not in draft.values:
            draft.fail("id", f"an id is required for class {self.spec.name}")
        for name in ("id", "barcode"):
            value = draft.values.get(name)
            if isinstance(value, str):
                earlier = self.claimed[name].setdefault(value, draft.row)
                if earlier != draft.row:
                    draft.fail(name, f"{value!r} is also given to row {earlier}")

    def _check_update(self, draft: Draft, typed: dict[str, Any]) -> None:
        entity = draft.existing
        assert entity is not None
        earlier = self.claimed.setdefault("entity", {}).setdefault(entity.id, draft.row)
        if earlier != draft.row:
            draft.fail(self.match or "id", f"{entity.id} is also updated by row {earlier}")
        if access_type(self.actor, entity.eclass, entity.department_id,
                       entity.project_id) != WRITE:
            draft.fail(self.match or "id", f"you may read but not change {entity.id}")
            return
        status = typed.get("status")
        workflow = self.spec.workflow
        if status is not None and not workflow.can_move(entity.status, status):
            draft.fail("status", f"{entity.id} cannot go from {entity.status} to {status}")
        draft.unchanged = all(self._same(entity, name, value, typed)
                              for name, value in draft.values.items())

    def _same(self, entity: Entity, name: str, value: Any, typed: dict[str, Any]) -> bool:
        if name.startswith(ATTRIBUTE_PREFIX):
            return bool((entity.attributes or {}).get(name[len(ATTRIBUTE_PREFIX):]) == value)
        spec: FieldSpec = self.spec.fields[name]
        if spec.attr is None or isinstance(value, FileRow | Named):
            return False
        stored = getattr(entity, spec.attr)
        return bool(stored == typed.get(name, value))

    def _check_taken(self, drafts: list[Draft]) -> None:
        """Refuse new rows whose id or barcode another entity holds (visible or not): one
        query per chunk."""
        for name in ("id", "barcode"):
            keys = {draft.values[name] for draft in drafts if draft.existing is None
                    and isinstance(draft.values.get(name), str)}
            if not keys:
                continue
            taken = taken_values(name, keys)
            for draft in drafts:
                if draft.existing is None and draft.values.get(name) in taken:
                    draft.fail(name, f"{draft.values[name]!r} is already used by another entity")

