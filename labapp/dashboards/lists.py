"""The rows of a saved-list widget as a person reads them (issue 21): references by the
names the reader may see, a stored item's place by its name path and slot, numbers without
float noise and with their unit (the unit column folded into its number), moments as ISO
text the page shows in the reader's time, an expired date, an overdue one or a low amount
with its ``mark`` (:mod:`labapp.reading.marks`, the rule the entity list uses). The same
wording as the entity detail pages (:mod:`labapp.entities.display`), as JSON-ready cells: the
API answers them and the page draws them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from labapp.access.actor import Actor
from labapp.entities.loading import visible_names
from labapp.model.registry import ClassSpec
from labapp.reading import marks
from labapp.reading.places import Place, stored_places
from labapp.reading.wording import iso, text, unit_field, words_of

# Where a stored item is, and its slot there (shown together: "Box 12 · A1").
PLACE_FIELD, SLOT_FIELD = "locationID", "position"
STORED_CLASSES = frozenset({"Sample", "Plate"})


def _reference_cell(entity_id: str, names: Mapping[str, tuple[str, str]]) -> dict[str, Any]:
    """A reference as the detail pages show it: the target's name, linked, its id beside;
    the id alone when the reader may not see the target (no name is ever shown then)."""
    if entity_id not in names:
        return {"text": entity_id, "ref": True}
    eclass, name = names[entity_id]
    return {"text": name or entity_id, "ref": True, "eClass": eclass, "id": entity_id,
            "note": entity_id if name else None}


def _place_cell(location_id: str, slot: str | None,
                places: Mapping[str, Place]) -> dict[str, Any]:
    """Where a listed item is stored: the location's name path and the slot, linked to the
    box with its id beside when the reader may open it; an unknown location by id. ``short``
    is what a list with little room shows: the path's last two parts and the slot."""
    place = places.get(location_id)
    if place is None:
        return {"text": location_id, "ref": True}
    shown = f"{place.path} · {slot}" if slot else place.path
    short = f"{place.brief} · {slot}" if slot else place.brief
    cell: dict[str, Any] = {"text": shown, "short": short, "ref": True}
    if place.visible:
        cell.update(location=location_id, slot=slot, note=location_id)
    return cell


def _cell(spec: ClassSpec, name: str, item: Mapping[str, Any],
          names: Mapping[str, tuple[str, str]],
          places: Mapping[str, Place]) -> dict[str, Any]:
    """The cell of column ``name`` of one saved-list row, worded as the detail page words
    it: references by name, numbers without float noise and with their unit, moments as
    ISO text the page turns into ``<time>``, and the ``mark`` of an expired date, an overdue
    one or a low amount."""
    value, field = item.get(name), spec.fields.get(name)
    if value is None:
        return {"text": ""}
    if name == PLACE_FIELD and spec.name in STORED_CLASSES:
        return _place_cell(value, item.get(SLOT_FIELD), places)
    if field is not None and field.type == "ref":
        return _reference_cell(value, names)
    shown: dict[str, Any]
    if isinstance(value, datetime | date):
        shown = {"text": iso(value), "moment": iso(value)}
    elif isinstance(value, int | float) and not isinstance(value, bool):
        unit = item.get(unit_field(spec, name) or "")
        shown = {"text": f"{text(value)} {unit}" if unit else text(value), "numeric": True}
    elif name == "status" and isinstance(value, str):
        return {"text": words_of(value)}
    else:
        return {"text": text(value)}
    mark = marks.mark_of(spec, name, item)
    return {**shown, "mark": mark} if mark else shown


def companions(spec: ClassSpec, columns: list[str]) -> list[str]:
    """The fields read for another column's cell but not shown as columns themselves: a
    number's unit, a location's slot, and what a mark reads (the status, the attributes)."""
    found = [unit_field(spec, name) for name in columns]
    if PLACE_FIELD in columns and SLOT_FIELD in spec.fields:
        found.append(SLOT_FIELD)
    found += [name for name in marks.inputs(spec, columns) if name not in columns]
    return list(dict.fromkeys(name for name in found if name))


def row_cells(actor: Actor, spec: ClassSpec, shown: list[str],
              items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each item's ``id`` and the cells of its ``shown`` columns (items hold the columns'
    stored values and their companions), the names and places they refer to looked up in
    one query each."""
    references = [name for name in shown
                  if name in spec.fields and spec.fields[name].type == "ref"]
    names = visible_names(actor, (item[name] for item in items for name in references
                                  if item.get(name)))
    found = (stored_places(actor, (item[PLACE_FIELD] for item in items if item.get(PLACE_FIELD)))
             if PLACE_FIELD in shown and spec.name in STORED_CLASSES else {})
    return [{"id": item["id"],
             "cells": [_cell(spec, name, item, names, found) for name in shown]}
            for item in items]
