"""Entity data as a lab member reads it: references by name (linked, the id beside them),
numbers with their unit and no float noise, dates and timestamps as ``<time>`` elements
that ``static/app.js`` shows in the viewer's locale, empty fields set apart, and the audit
trail one changed field per row.

Pure functions of the service's results and of the names the page looked up in one query
(:func:`labapp.entities.loading.visible_names`); no queries here. A reference whose target
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
from labapp.reading.marks import mark_of
from labapp.reading.places import Place as Place
from labapp.reading.wording import iso as iso
from labapp.reading.wording import label_of, words_of
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
STATUS_FIELD = "status"  # its value is a key of the workflow (InProgress), shown in words
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
    fallback the browser replaces), whether it is a number (aligned right), and the word it
    is marked with (``expired``, ``overdue``, ``low``, ``empty``: :mod:`labapp.reading.marks`),
    and the whole of a value shown shortened (its tooltip: the full path of a place a list
    names by its last two parts)."""

    text: str
    href: str | None = None
    note: str | None = None
    moment: str | None = None
    numeric: bool = False
    mark: str | None = None
    title: str | None = None


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


def place_cell(location_id: str, slot: str | None, places: Places,
               brief: bool = False) -> Cell:
    """Where an item is: the location's name path and the slot, linked to the box with the
    location's id beside it when the viewer may open it, the path alone otherwise (a tube of
    one's own in another department's box). An unknown location shows its id only. A list
    (``brief``) shows the path's last two parts, the whole path as the tooltip."""
    place = places.get(location_id)
    if place is None:
        return Cell(location_id)
    path = place.brief if brief else place.path
    shown = f"{path} · {slot}" if slot else path
    title = (f"{place.path} · {slot}" if slot else place.path) if path != place.path else None
    if not place.visible:
        return Cell(shown, title=title)
    return Cell(shown, location_url(location_id, slot), location_id, title=title)


def reference(entity_id: str, names: Names) -> Cell:
    """A reference: the target's name linked to its page with the id beside it, or the id
    alone when the target is unknown or invisible (its name is never shown then)."""
    if entity_id not in names:
        return Cell(entity_id)
    eclass, name = names[entity_id]
    return Cell(name or entity_id, detail_url(eclass, entity_id), entity_id if name else None)


def cell(spec: ClassSpec, name: str, value: Any, row: Mapping[str, Any], names: Names,
         places: Places | None = None, brief: bool = False) -> Cell:
    """The cell of field ``name`` of an entity of ``spec``; ``row`` holds its other values
    (the unit of a number, the slot of a location, what its mark reads). A stored item's
    location is shown by its place in ``places`` (by its last two parts in a list:
    ``brief``); an expired date, an overdue one or a low amount carries its mark."""
    field = spec.fields.get(name)
    if value is None:
        return Cell("")
    if is_place(spec, name):
        return place_cell(value, row.get(SLOT_FIELD), places or {}, brief)
    if field is not None and field.type == "ref":
        return reference(value, names)
    if isinstance(value, datetime | date):
        return Cell(iso(value), moment=iso(value), mark=mark_of(spec, name, row))
    if isinstance(value, int | float) and not isinstance(value, bool):
        unit = row.get(unit_field(spec, name) or "")
        return Cell(f"{text(value)} {unit}" if unit else text(value), numeric=True,
                    mark=mark_of(spec, name, row))
    if name == STATUS_FIELD and isinstance(value, str):
        return Cell(words_of(value))
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
        content = (Markup('<a href="{}" title="{}">{}</a>').format(shown.href, shown.title,
                                                                    content)
                   if shown.title else Markup('<a href="{}">{}</a>').format(shown.href, content))
    elif shown.title:
        content = Markup('<span title="{}">{}</span>').format(shown.title, content)
    if shown.note:
        content += Markup(' <span class="muted ref-id">{}</span>').format(shown.note)
    if shown.mark:
        content += mark_badge(shown.mark)
    return content


def mark_badge(word: str) -> Markup:
    """A mark as the pages show it: the word in a coloured badge (text, not colour alone)."""
    return Markup(' <span class="mark mark-{}">{}</span>').format(word, word)


def moment(value: datetime | date | None) -> Markup:
    """A date or timestamp as ``<time>`` (the ``moment`` template filter); empty for None."""
    if value is None:
        return Markup("")
    return show(Cell(iso(value), moment=iso(value)))


def person(user_id: str | None, names: Names) -> Markup:
    """A user shown by name, linked, the username beside (the ``person`` template filter)."""
    return show(reference(user_id, names)) if user_id else Markup("")


def named(entity_id: str | None, names: Names) -> Markup:
    """Any entity shown by name, linked, its id beside; its id alone when the viewer may
    not see it (the ``named`` template filter)."""
    return show(reference(entity_id, names)) if entity_id else Markup("")


@dataclass(frozen=True)
class AuditRow:
    """One changed field of one audit event: the field's ``label`` (``key`` kept for an
    attribute, shown as code), its ``old`` and ``new`` cells; ``first``/``span`` group the
    event's rows."""

    event: Mapping[str, Any]
    field: str
    label: str
    old: Cell
    new: Cell
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


def _exact(value: Any) -> str:
    """A value as the trail shows it: exact (a change however small shows), but a whole
    float without ``.0``."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return text(value, exact=True)


def _side(changes: Mapping[str, Any], entity: Mapping[str, Any], name: str | None,
          side: str) -> Any:
    """The ``side`` (``old``/``new``) value of companion field ``name`` at an event: changed
    by it, else as stored now."""
    if not name:
        return None
    change = changes.get(name)
    return change.get(side) if isinstance(change, dict) else entity.get(name)


def _change_cell(spec: ClassSpec, entity: Mapping[str, Any], changes: Mapping[str, Any],
                 name: str, value: Any, side: str, names: Names, places: Places) -> Cell:
    """One side of a changed field: a reference by name, a place by path and slot, a number
    exactly with its unit at the time."""
    if value is None or value == "":
        return Cell("")
    if is_place(spec, name):
        return place_cell(value, _side(changes, entity, SLOT_FIELD, side), places)
    field = spec.fields.get(name)
    if field is not None and field.type == "ref" and isinstance(value, str):
        return reference(value, names)
    if isinstance(value, int | float) and not isinstance(value, bool):
        unit = _side(changes, entity, unit_field(spec, name), side)
        return Cell(f"{_exact(value)} {unit}" if unit else _exact(value), numeric=True)
    if name == STATUS_FIELD and isinstance(value, str):
        return Cell(words_of(value))
    return Cell(_exact(value))


def audit_rows(spec: ClassSpec, entity: Mapping[str, Any], names: Names,
               places: Places | None = None) -> list[AuditRow]:
    """The entity's audit trail (newest first) as table rows: when, who, action, and per
    changed field its label and old → new in words."""
    rows: list[AuditRow] = []
    for event in entity.get("auditEvents", []):
        changes = event.get("changes") or {}
        listed = list(_changes(changes)) or [("", None, None)]
        rows.extend(AuditRow(event, name, label_of(name) if name else "",
                             _change_cell(spec, entity, changes, name, old, "old", names,
                                          places or {}),
                             _change_cell(spec, entity, changes, name, new, "new", names,
                                          places or {}),
                             index == 0, len(listed))
                    for index, (name, old, new) in enumerate(listed))
    return rows


# Events whose data names a place (``locationID``, ``position``): the words before it.
_PLACE_EVENTS = {"CheckedIn": "Checked in to", "CheckedOut": "Checked out of"}
# Events whose data names another entity: the words before it and the key of its id.
_ENTITY_EVENTS = {"Cloned": ("Cloned from", "sourceID"), "NoteAdded": ("Note added", "id"),
                  "FileAdded": ("File added", "id")}


def event_text(event: Mapping[str, Any], names: Names, places: Places | None = None) -> Markup:
    """What an event says, in words: ``Checked in to Lab 2 / Box 12 · A1`` (linked as the
    place is), ``Status changed from Initial to InProgress``, ``Cloned from <name>``; an
    unknown kind in words (``SomethingHappened`` → ``Something happened``) with its data."""
    kind, data = event.get("kind") or "", event.get("data") or {}
    if kind in _PLACE_EVENTS and data.get(PLACE_FIELD):
        where = place_cell(data[PLACE_FIELD], data.get(SLOT_FIELD), places or {})
        return Markup("<strong>{}</strong> {}").format(_PLACE_EVENTS[kind], show(where))
    if kind == "StatusChanged":
        return Markup("<strong>Status changed</strong> from {} to {}").format(
            words_of(str(data.get("from") or "—")), words_of(str(data.get("to") or "—")))
    if kind in _ENTITY_EVENTS:
        words, key = _ENTITY_EVENTS[kind]
        other = data.get(key)
        return (Markup("<strong>{}</strong> {}").format(words, show(reference(other, names)))
                if isinstance(other, str) else Markup("<strong>{}</strong>").format(words))
    sentence = Markup("<strong>{}</strong>").format(words_of(kind) if kind else "Event")
    if data:
        sentence += Markup(' <span class="muted small">{}</span>').format(text(data))
    return sentence


def history_ids(spec: ClassSpec, entity: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """The ids the events and audit trail of a detail page name, to look up with the page's
    others: ``(entities, locations)`` (a location by where an item was checked in or out)."""
    entities: set[str] = set()
    locations = {event["data"][PLACE_FIELD] for event in entity.get("events", [])
                 if event.get("kind") in _PLACE_EVENTS
                 and isinstance((event.get("data") or {}).get(PLACE_FIELD), str)}
    for event in entity.get("events", []):
        if event.get("kind") in _ENTITY_EVENTS:
            other = (event.get("data") or {}).get(_ENTITY_EVENTS[event["kind"]][1])
            if isinstance(other, str):
                entities.add(other)
    for audit in entity.get("auditEvents", []):
        for name, change in (audit.get("changes") or {}).items():
            field = spec.fields.get(name)
            if field is None or field.type != "ref" or not isinstance(change, dict):
                continue
            target = locations if is_place(spec, name) else entities
            target.update(value for value in (change.get("old"), change.get("new"))
                          if isinstance(value, str))
    return entities, locations


def page_people(entity: Mapping[str, Any], notes: Iterable[Mapping[str, Any]]) -> set[str]:
    """The users a detail page names besides its fields: authors of its notes and files, who
    made its audit events and events."""
    named = ({note.get("createdBy") for note in notes}
             | {item.get("createdBy") for item in entity.get("files", [])}
             | {event.get("userID") for event in entity.get("auditEvents", [])}
             | {event.get("userID") for event in entity.get("events", [])})
    return {user_id for user_id in named if user_id is not None}
