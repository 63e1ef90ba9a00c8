"""Entity data as the pages show it: values as text, references as links, the audit trail
one changed field per row. Pure functions of the service's results; no queries."""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from flask import url_for

from labapp.entities.forms import label_of
from labapp.model.registry import ClassSpec, find_class


def text(value: Any) -> str:
    """A value as one line of text; empty for null."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def detail_url(eclass: str, entity_id: str, **args: Any) -> str:
    """The detail page of an entity (``args`` become query parameters, None left out)."""
    return url_for("entity_views.detail", eclass=eclass, entity_id=entity_id,
                   **{name: value for name, value in args.items() if value is not None})


@dataclass(frozen=True)
class Cell:
    """One shown value, with the page it links to (a referenced entity) if any."""

    text: str
    href: str | None = None


def cell(spec: ClassSpec, name: str, value: Any, row: Mapping[str, Any]) -> Cell:
    """The cell of field ``name`` of an entity of ``spec`` (``row`` holds its other values).

    A reference links to its target when the class of the target is known: from the
    registry, or for ``subjectID`` from the row's ``subjectClass``.
    """
    field = spec.fields.get(name)
    if value is None or field is None or field.type != "ref":
        return Cell(text(value))
    target = field.ref
    if target == "*" and name == "subjectID":
        target = row.get("subjectClass")
    known = find_class(target) if target and target != "*" else None
    return Cell(text(value), detail_url(known.name, value) if known else None)


def field_rows(spec: ClassSpec, entity: Mapping[str, Any]) -> list[tuple[str, Cell]]:
    """``(label, cell)`` of every field of a detail page except the attributes."""
    return [(label_of(name), cell(spec, name, entity.get(name), entity))
            for name in spec.fields if name != "attributes"]


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
        rows.extend(AuditRow(event, name, text(old), text(new), index == 0, len(changes))
                    for index, (name, old, new) in enumerate(changes))
    return rows
