"""Suggestions for pickers and filter inputs, and the uniqueness check of forms.

Suggestions show only what the actor may see (decisions §5). ``is_unique`` is the one careful
exception: it answers False when any row holds the value, visible or not, because the
database enforces uniqueness over all rows; it never says which entity holds it.

Text matches are ``contains`` with ``%`` and ``_`` taken literally, ignoring the case of ASCII
letters on both databases: SQLite's ``LIKE`` does exactly that, and PostgreSQL's ``lower()``
under the ``C`` collation does the same at half the cost of a locale-aware ``ILIKE``. A
contains match cannot use a b-tree index, so every query carries its LIMIT into the database,
and common fields are read from the ``entity`` table alone when nothing needs the class's own
table.
"""
from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

from sqlalchemy import ColumnElement, String, case, func, literal, or_, select

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.errors import InvalidInput
from labapp.jsonprovider import format_utc
from labapp.model import Entity
from labapp.model.registry import ClassSpec, FieldSpec
from labapp.query.fields import TEXT_TYPES, entity_fields
from labapp.query.filter import compile_filter

MAX_ENTITIES = 20
MAX_VALUES = 50
# Unique across every class: ids by design, barcodes by the database constraint.
_UNIQUE_EVERYWHERE = frozenset({"id", "barcode"})
_STREAM_ROWS = 500


def _matches(column: ColumnElement[Any], query: str, template: str) -> ColumnElement[bool]:
    """``column`` matches ``template`` (``{}``, ``{}%``, ``%{}%``) around ``query``, ignoring
    the case of ASCII letters, with the wildcards of ``query`` escaped."""
    escaped = re.sub(r"[/%_]", lambda match: "/" + match.group(), query)
    pattern = literal(template.format(escaped), String())
    if db.engine.dialect.name == "sqlite":
        return column.like(pattern, escape="/")
    return func.lower(column.collate("C")).like(func.lower(pattern.collate("C")), escape="/")


def suggest_entities(actor: Actor, spec: ClassSpec, query: str | None,
                     limit: int = MAX_ENTITIES) -> list[dict[str, Any]]:
    """Up to ``limit`` visible entities of the class whose id, name or barcode contains
    ``query``: ``[{id, name, eClass}]``. Exact matches come first, then prefix matches, then
    the rest; ties by name and id. Without a query: the first entities by name and id."""
    statement = select(Entity.id, Entity.name, Entity.eclass).where(
        Entity.eclass == spec.name, readable(actor))
    if query:
        searched = (Entity.id, Entity.name, Entity.barcode)

        def matching(template: str) -> ColumnElement[bool]:
            return or_(*(_matches(column, query, template) for column in searched))

        rank = case((matching("{}"), 0), (matching("{}%"), 1), else_=2)
        statement = statement.where(matching("%{}%")).order_by(rank)
    rows = db.session.execute(statement.order_by(Entity.name, Entity.id).limit(limit))
    return [{"id": entity_id, "name": name, "eClass": eclass} for entity_id, name, eclass in rows]


def _unsupported(spec: ClassSpec, field: FieldSpec, reason: str) -> InvalidInput:
    return InvalidInput(f"Field '{field.name}' of {spec.name} {reason}.",
                        code="unsupported_field")


def _field(spec: ClassSpec, field_name: str) -> FieldSpec:
    """The stored field called ``field_name`` (case-insensitive); InvalidInput (400) for an
    unknown field or a computed one."""
    field = spec.field(field_name)
    if field is None:
        raise InvalidInput(f"Unknown field '{field_name}' of {spec.name}.",
                           code="unknown_field")
    if field.attr is None:
        raise _unsupported(spec, field, "is computed, not stored")
    return field


def _as_text(value: Any) -> str:
    """A value as its JSON text (``true``, ``2026-03-01``, ``2026-03-01T12:00:00.000Z``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return format_utc(value)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _matching_texts(statement: Any, query: str | None) -> list[str]:
    """Values of a non-text column as text, in column order, each once, containing ``query``
    (case-insensitive) when given. Text forms differ between databases (and timestamps shown
    to the millisecond can coincide), so the match runs here, on a stream that stops at
    :data:`MAX_VALUES`."""
    needle = (query or "").lower()
    found: list[str] = []
    result = db.session.scalars(statement, execution_options={"yield_per": _STREAM_ROWS})
    try:
        for value in result:
            text = _as_text(value)
            if needle in text.lower() and (not found or found[-1] != text):
                found.append(text)
                if len(found) == MAX_VALUES:
                    break
    finally:
        result.close()
    return found


def suggest_field(actor: Actor, spec: ClassSpec, field_name: str, query: str | None,
                  filter_text: str | None) -> list[dict[str, Any]]:
    """The distinct values of a field among the visible entities of the class that pass
    ``filter_text`` (``$filter``), containing ``query``: at most :data:`MAX_VALUES`
    ``[{value, name}]`` in column order, values as text, nulls and empty strings left out.

    ``name`` is the referenced entity's name when the field is a reference and the actor may
    see that entity, else None. Raises InvalidInput (400) for an unknown or JSON field and
    FilterError (400, with the position) for a bad filter.
    """
    field = _field(spec, field_name)
    if field.type == "json":
        raise _unsupported(spec, field, "holds JSON: it has no values to suggest")
    if field.common and not filter_text:
        column = getattr(Entity, field.attr)
        source, scope = Entity, (Entity.eclass == spec.name, readable(actor))
    else:
        column = spec.column(field)
        source, scope = spec.model, (readable(actor, spec.model), compile_filter(
            filter_text, entity_fields(spec), user_id=actor.user_id))
    statement = (select(column).select_from(source).distinct()
                 .where(*scope, column.is_not(None)).order_by(column))
    if field.type in TEXT_TYPES:
        statement = statement.where(column != "")
        if query:
            statement = statement.where(_matches(column, query, "%{}%"))
        values = list(db.session.scalars(statement.limit(MAX_VALUES)))
    else:
        values = _matching_texts(statement, query)
    names: dict[str, str] = {}
    if field.type == "ref" and values:
        names = dict(db.session.execute(select(Entity.id, Entity.name).where(
            Entity.id.in_(values), readable(actor))).all())
    return [{"value": value, "name": names.get(value)} for value in values]


def is_unique(spec: ClassSpec, field_name: str, value: str) -> bool:
    """True when no row holds ``value`` (case-sensitive, exact) in the field, whoever may
    see the rows. ``id`` and ``barcode`` are checked across every class, other fields within
    the class. Only string fields can be checked: any other is InvalidInput (400)."""
    field = _field(spec, field_name)
    if field.type != "str":
        raise _unsupported(spec, field, "is not a string field: uniqueness cannot be checked")
    if field.common:
        column = getattr(Entity, field.attr)
        # ``eclass || ''``: the class test must not lead SQLite (which keeps no statistics)
        # to the class index, one class's rows, instead of the index of the value.
        scope = (() if field.name in _UNIQUE_EVERYWHERE
                 else (Entity.eclass + "" == spec.name,))
    else:
        column, scope = spec.column(field), ()
    return db.session.scalar(select(column).where(column == value, *scope).limit(1)) is None
