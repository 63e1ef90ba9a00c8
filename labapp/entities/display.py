"""Entity data as a lab member reads it: references by name (linked, the id beside them),
numbers with their unit and no float noise, dates and timestamps as ``<time>`` elements
that ``static/app.js`` shows in the viewer's locale, empty fields set apart, and the audit
trail one changed field per row.

Pure functions of the service's results and of the names the page looked up in one query
(:func:`labapp.entities.reading.visible_names`); no queries here. A reference whose target
the viewer may not see has no name in that lookup, so it shows its id only.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from flask import url_for
from markupsafe import Markup, escape

from labapp.entities.forms import label_of
from labapp.model.registry import ClassSpec

# id → (class, name) of the visible entities a page refers to.
Names = Mapping[str, tuple[str, str]]

# Decimals a number shows at most; below 1 as many as keep this many significant digits.
DECIMALS = 4
# Fields that hold the unit of another when ``<name>Unit`` does not: the amount's is ``unit``.
_UNIT_FIELDS = {"amount": "unit"}
# Bookkeeping shown after the lab's own fields on a detail page.
_BOOKKEEPING = ("id", "eClass", "createdBy", "createdUtc", "modifiedBy", "modifiedUtc",
                "version")


def number_text(value: float) -> str:
    """A float without its binary noise: at most :data:`DECIMALS` decimals, more below 1 to
    keep as many significant digits, trailing zeros dropped (``38.14494730136748`` →
    ``38.1449``, ``0.000123456`` → ``0.0001235``, ``25.0`` → ``25``)."""
    if not math.isfinite(value) or value == 0:
        return "0" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    return f"{value:.{max(DECIMALS, DECIMALS - 1 - magnitude)}f}".rstrip("0").rstrip(".")


def iso(value: datetime | date) -> str:
    """A timestamp as ISO 8601 in UTC to the second (``2024-03-05T22:30:00Z``); a date as
    ``2024-03-05``."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value.isoformat()


def text(value: Any, *, exact: bool = False) -> str:
    """A value as one line of text; empty for null. Numbers are rounded as
    :func:`number_text` says unless ``exact``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and not exact:
        return number_text(value)
    if isinstance(value, datetime | date):
        return iso(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


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


def unit_field(spec: ClassSpec, name: str) -> str | None:
    """The field of ``spec`` that holds the unit of the number field ``name``, if any."""
    for candidate in (f"{name}Unit", _UNIT_FIELDS.get(name)):
        if candidate and candidate in spec.fields:
            return candidate
    return None


def reference(entity_id: str, names: Names) -> Cell:
    """A reference: the target's name linked to its page with the id beside it, or the id
    alone when the target is unknown or invisible (its name is never shown then)."""
    if entity_id not in names:
        return Cell(entity_id)
    eclass, name = names[entity_id]
    return Cell(name or entity_id, detail_url(eclass, entity_id), entity_id if name else None)


def cell(spec: ClassSpec, name: str, value: Any, row: Mapping[str, Any], names: Names) -> Cell:
    """The cell of field ``name`` of an entity of ``spec``; ``row`` holds its other values
    (the unit of a number)."""
    field = spec.fields.get(name)
    if value is None:
        return Cell("")
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


def _folded_units(spec: ClassSpec, entity: Mapping[str, Any]) -> set[str]:
    """The unit fields shown beside their number, so not on their own."""
    return {unit for name in spec.fields
            if (unit := unit_field(spec, name)) and entity.get(name) is not None}


def field_rows(spec: ClassSpec, entity: Mapping[str, Any],
               names: Names) -> tuple[list[tuple[str, Cell]], list[str]]:
    """The fields of a detail page but the attributes: ``(label, cell)`` of those with a
    value, the lab's own before the bookkeeping, and the labels of the empty ones."""
    folded = _folded_units(spec, entity)
    order = [name for name in spec.fields if name not in _BOOKKEEPING] + [
        name for name in _BOOKKEEPING if name in spec.fields]
    filled, empty = [], []
    for name in order:
        if name == "attributes" or name in folded:
            continue
        shown = cell(spec, name, entity.get(name), entity, names)
        if shown.text:
            filled.append((label_of(name), shown))
        else:
            empty.append(label_of(name))
    return filled, empty


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
    return ({note.get("createdBy") for note in notes}
            | {item.get("createdBy") for item in entity.get("files", [])}
            | {event.get("userID") for event in entity.get("auditEvents", [])}
            | {event.get("userID") for event in entity.get("events", [])}) - {None}
