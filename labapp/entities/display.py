"""Entity data as a lab member reads it: references by name (linked, the id beside them),
numbers with their unit and no float noise, dates and timestamps as ``<time>`` elements
that ``static/app.js`` shows in the viewer's locale, empty fields set apart, and the audit
trail one changed field per row.

Pure functions of the service's results and of the names the page looked up in one query
(:func:`labapp.entities.reading.visible_names`); no queries here. A reference whose target
the viewer may not see has no name in that lookup, so it shows its id only. The one
exception is where a sample or plate is stored: its location shows by name path with the
slot beside it (:class:`Place`, looked up by :func:`labapp.entities.navigation.stored_places`),
linked to the box only when the viewer may open the location.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from flask import url_for
from markupsafe import Markup, escape

from labapp.model.registry import ClassSpec
from labapp.reading.wording import iso as iso
from labapp.reading.wording import label_of
from labapp.reading.wording import number_text as number_text
from labapp.reading.wording import text as text
from labapp.reading.wording import unit_field as unit_field

# id → (class, name) of the visible entities a page refers to.
Names = Mapping[str, tuple[str, str]]

# The classes storage checks in and out (labapp.storage.service.STORABLE_CLASSES), their
# reference to where they are stored and their slot there.
STORED_CLASSES = frozenset({"Sample", "Plate"})
PLACE_FIELD = "locationID"
SLOT_FIELD = "position"
# Bookkeeping shown after the lab's own fields on a detail page.
_BOOKKEEPING = ("id", "eClass", "createdBy", "createdUtc", "modifiedBy", "modifiedUtc",
                "version")


def detail_url(eclass: str, entity_id: str, **args: Any) -> str:
    """The detail page of an entity (``args`` become query parameters, None left out)."""
    return url_for("entity_views.detail", eclass=eclass, entity_id=entity_id,
                   **{name: value for name, value in args.items() if value is not None})


@dataclass(frozen=True)
class Cell:
    """One shown value: its text, the page it links to, a note shown beside it in grey
    (the id of a reference shown by name), the ISO value of a moment (the text is then the
    fallback the browser replaces), and whether it is a number (aligned right)."""

    text: str
    href: str | None = None
    note: str | None = None
    moment: str | None = None
    numeric: bool = False


@dataclass(frozen=True)
class Place:
    """A storage location as the items stored in it show it: its name path (``Lab 2 /
    Freezer -80 / Box 12``) and whether the viewer may open it."""

    path: str
    visible: bool


# location id → Place of the locations the items of a page are stored in.
Places = Mapping[str, Place]


def is_place(spec: ClassSpec, name: str) -> bool:
    """Whether field ``name`` of ``spec`` says where a stored item is (``locationID`` of a
    Sample or Plate)."""
    return spec.name in STORED_CLASSES and name == PLACE_FIELD and name in spec.fields


def companion_field(spec: ClassSpec, name: str) -> str | None:
    """The field shown inside the cell of field ``name``: the unit of a number, the slot of
    a stored item's location."""
    if is_place(spec, name):
        return SLOT_FIELD if SLOT_FIELD in spec.fields else None
    return unit_field(spec, name)


def location_url(location_id: str, slot: str | None = None) -> str:
    """The storage page of a location, the item's ``slot`` of its box grid marked."""
    return url_for("storage_views.location", location_id=location_id, slot=slot or None)


def place_cell(location_id: str, slot: str | None, places: Places) -> Cell:
    """Where an item is: the location's name path and the slot, linked to the box with the
    location's id beside it when the viewer may open it, the path alone otherwise (a tube of
    one's own in another department's box). An unknown location shows its id only."""
    place = places.get(location_id)
    if place is None:
        return Cell(location_id)
    shown = f"{place.path} · {slot}" if slot else place.path
    if not place.visible:
        return Cell(shown)
    return Cell(shown, location_url(location_id, slot), location_id)


def reference(entity_id: str, names: Names) -> Cell:
    """A reference: the target's name linked to its page with the id beside it, or the id
    alone when the target is unknown or invisible (its name is never shown then)."""
    if entity_id not in names:
        return Cell(entity_id)
    eclass, name = names[entity_id]
    return Cell(name or entity_id, detail_url(eclass, entity_id), entity_id if name else None)


def cell(spec: ClassSpec, name: str, value: Any, row: Mapping[str, Any], names: Names,
         places: Places | None = None) -> Cell:
    """The cell of field ``name`` of an entity of ``spec``; ``row`` holds its other values
    (the unit of a number, the slot of a location). A stored item's location is shown by
    its place in ``places``."""
    field = spec.fields.get(name)
    if value is None:
        return Cell("")
    if is_place(spec, name):
        return place_cell(value, row.get(SLOT_FIELD), places or {})
    if field is not None and field.type == "ref":
        return reference(value, names)
    if isinstance(value, datetime | date):
        return Cell(iso(value), moment=iso(value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        unit = row.get(unit_field(spec, name) or "")
        return Cell(f"{text(value)} {unit}" if unit else text(value), numeric=True)
    return Cell(text(value))


def referenced_ids(spec: ClassSpec, rows: Iterable[Mapping[str, Any]],
                   columns: Iterable[str]) -> set[str]:
    """The ids the reference fields among ``columns`` hold in ``rows``."""
    references = [name for name in columns
                  if name in spec.fields and spec.fields[name].type == "ref"]
    return {row[name] for row in rows for name in references if row.get(name)}


def place_ids(spec: ClassSpec, rows: Iterable[Mapping[str, Any]],
              columns: Iterable[str]) -> set[str]:
    """The locations ``rows`` are stored in, when ``columns`` show where (else none)."""
    if not any(is_place(spec, name) for name in columns):
        return set()
    return {row[PLACE_FIELD] for row in rows if row.get(PLACE_FIELD)}


def _folded(spec: ClassSpec, entity: Mapping[str, Any]) -> set[str]:
    """The fields shown inside another's cell (units, slots), so not on their own."""
    return {companion for name in spec.fields
            if (companion := companion_field(spec, name)) and entity.get(name) is not None}


def field_rows(spec: ClassSpec, entity: Mapping[str, Any], names: Names,
               places: Places | None = None) -> tuple[list[tuple[str, Cell]], list[str]]:
    """The fields of a detail page but the attributes: ``(label, cell)`` of those with a
    value, the lab's own before the bookkeeping, and the labels of the empty ones."""
    folded = _folded(spec, entity)
    order = [name for name in spec.fields if name not in _BOOKKEEPING] + [
        name for name in _BOOKKEEPING if name in spec.fields]
    filled, empty = [], []
    for name in order:
        if name == "attributes" or name in folded:
            continue
        shown = cell(spec, name, entity.get(name), entity, names, places)
        if shown.text:
            filled.append((label_of(name), shown))
        else:
            empty.append(label_of(name))
    return filled, empty


@dataclass(frozen=True)
class Storage:
    """The storage part of the page of a sample or plate: its ``place`` (None when it is not
    stored), ``slot`` and the box grid to open (``href``, None when the viewer may not open
    the location), or the ``plate`` a sample on a plate is stored with."""

    place: Place | None
    slot: str | None
    href: str | None
    plate: str | None


def storage(spec: ClassSpec, entity: Mapping[str, Any], places: Places) -> Storage | None:
    """Where the entity is stored; None for a class that is never stored."""
    if not is_place(spec, PLACE_FIELD):
        return None
    location_id, slot = entity.get(PLACE_FIELD), entity.get(SLOT_FIELD)
    place = places.get(location_id) if location_id else None
    href = (location_url(location_id, slot)
            if location_id and place is not None and place.visible else None)
    return Storage(place, slot, href, entity.get("plateID"))


def show(shown: Cell) -> Markup:
    """The HTML of a cell (the ``show`` template filter)."""
    content = (Markup('<time datetime="{}">{}</time>').format(shown.moment, shown.text)
               if shown.moment else escape(shown.text))
    if shown.href:
        content = Markup('<a href="{}">{}</a>').format(shown.href, content)
    if shown.note:
        content += Markup(' <span class="muted ref-id">{}</span>').format(shown.note)
    return content


def moment(value: datetime | date | None) -> Markup:
    """A date or timestamp as ``<time>`` (the ``moment`` template filter); empty for None."""
    if value is None:
        return Markup("")
    return show(Cell(iso(value), moment=iso(value)))


def person(user_id: str | None, names: Names) -> Markup:
    """A user shown by name, linked, the username beside (the ``person`` template filter)."""
    return show(reference(user_id, names)) if user_id else Markup("")


@dataclass(frozen=True)
class AuditRow:
    """One changed field of one audit event; ``first``/``span`` group the event's rows."""

    event: Mapping[str, Any]
    field: str
    old: str
    new: str
    first: bool
    span: int


def _changes(changes: Mapping[str, Any]) -> Iterable[tuple[str, Any, Any]]:
    """``(field, old, new)``; a change of ``attributes`` becomes one row per changed key."""
    for name, change in changes.items():
        old, new = change.get("old"), change.get("new")
        if name == "attributes" and isinstance(old or {}, dict) and isinstance(new or {}, dict):
            old, new = old or {}, new or {}
            for key in sorted(set(old) | set(new)):
                if old.get(key) != new.get(key):
                    yield f"attributes.{key}", old.get(key), new.get(key)
        else:
            yield name, old, new


def audit_rows(events: Iterable[Mapping[str, Any]]) -> list[AuditRow]:
    """The audit trail (newest first) as table rows: when, who, action, field, old → new."""
    rows: list[AuditRow] = []
    for event in events:
        changes = list(_changes(event.get("changes") or {})) or [("", None, None)]
        # Exact values: the trail must show a change however small.
        rows.extend(AuditRow(event, name, text(old, exact=True), text(new, exact=True),
                             index == 0, len(changes))
                    for index, (name, old, new) in enumerate(changes))
    return rows


def page_people(entity: Mapping[str, Any], notes: Iterable[Mapping[str, Any]]) -> set[str]:
    """The users a detail page names besides its fields: authors of its notes and files, who
    made its audit events and events."""
    named = ({note.get("createdBy") for note in notes}
             | {item.get("createdBy") for item in entity.get("files", [])}
             | {event.get("userID") for event in entity.get("auditEvents", [])}
             | {event.get("userID") for event in entity.get("events", [])})
    return {user_id for user_id in named if user_id is not None}
