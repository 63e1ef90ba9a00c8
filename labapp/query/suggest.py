"""Field-value suggestions for filter inputs, and the uniqueness check of forms.

Suggestions show only what the actor may see (decisions §5). ``is_unique`` is the one careful
exception: it answers False when any row holds the value, visible or not, because the
database enforces uniqueness over all rows; it never says which entity holds it.

A field's distinct values are found by *walking* an index on ``(column, id)`` when the field
has one (the units, ``status``, ``type``): the next value is one index seek, and each value
that contains the query is kept when one visible row passing the filter holds it (a probe
that stops at the first such row). A handful of units among 100,000 samples costs a handful
of seeks, not a pass over 100,000 visible rows. The walk gives up after :data:`WALK_STEPS`
values (the field is then nearly unique per row, a name for instance) and so do fields
without an index: their values are read from one pass over the visible rows, with the LIMIT
carried into the database. Entity suggestions live in :mod:`labapp.query.entity_suggest`.
"""
from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import Column, ColumnElement, and_, func, literal, or_, select

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.errors import InvalidInput
from labapp.jsonprovider import format_utc
from labapp.model import Entity
from labapp.model.registry import ClassSpec, FieldSpec
from labapp.query.fields import TEXT_TYPES, entity_fields
from labapp.query.filter import compile_filter
from labapp.query.textmatch import matches

MAX_VALUES = 50
WALK_STEPS = 200
# Unique across every class: ids by design, barcodes by the database constraint.
_UNIQUE_EVERYWHERE = frozenset({"id", "barcode"})
_STREAM_ROWS = 500


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


def _table_column(spec: ClassSpec, field: FieldSpec) -> Column[Any]:
    """The table's own column behind a stored field (a subclass attribute would bring the
    inheritance join along)."""
    mapped = spec.column(field).property.columns[0]
    column: Column[Any] = mapped.table.c[mapped.key]
    return column


def _walkable(column: Column[Any], common: bool) -> bool:
    """Whether an index serves the walk: ``(column, id)`` on a class table, ``(eclass,
    column, id)`` on ``entity`` (a common field is walked within one class)."""
    wanted = ["eclass", column.name, "id"] if common else [column.name, "id"]
    return any([each.name for each in index.columns][:len(wanted)] == wanted
               for index in column.table.indexes)


def _walk(actor: Actor, spec: ClassSpec, field: FieldSpec, query: str | None,
          filter_text: str | None) -> list[str] | None:
    """The first :data:`MAX_VALUES` values of a text field along its index (see the module's
    docstring), or None when the walk gave up before it found them all.

    The probe for a value reads the index in ``(value, id)`` order: asked for its first row
    in id order, PostgreSQL cannot prefer a sequential scan that it wrongly expects to meet
    the value early (values cluster; the planner assumes they are spread evenly)."""
    column = _table_column(spec, field)
    in_class = (column.table.c.eclass == spec.name,) if field.common else ()
    walk = (select(func.min(column).label("value"), literal(1).label("step"))
            .where(*in_class, column > "").cte("walk", recursive=True))
    previous = walk.alias("previous")
    following = select(func.min(column)).where(*in_class, column > previous.c.value)
    walk = walk.union_all(select(following.scalar_subquery(), previous.c.step + 1).where(
        previous.c.value.is_not(None), previous.c.step < WALK_STEPS))
    holder = (select(column.table.c.id).select_from(spec.model).where(
        column == walk.c.value, *in_class, readable(actor, spec.model),
        compile_filter(filter_text, entity_fields(spec), user_id=actor.user_id))
        .order_by(column.table.c.id).limit(1))
    kept: list[ColumnElement[bool]] = [holder.scalar_subquery().is_not(None)]
    if query:
        kept.append(matches(walk.c.value, query, "%{}%"))
    values = list(db.session.scalars(select(walk.c.value).where(
        or_(walk.c.value.is_(None), and_(*kept))).order_by(walk.c.step).limit(MAX_VALUES + 1)))
    if values and values[-1] is None:
        return values[:-1]
    return values[:MAX_VALUES] if len(values) > MAX_VALUES else None


def _scanned(actor: Actor, spec: ClassSpec, field: FieldSpec, query: str | None,
             filter_text: str | None) -> list[Any]:
    """The first :data:`MAX_VALUES` values of a field from one pass over the visible rows."""
    if field.common and not filter_text:
        column = getattr(Entity, field.stored_attr)
        source, scope = Entity, (Entity.eclass == spec.name, readable(actor))
    else:
        column = spec.column(field)
        source, scope = spec.model, (readable(actor, spec.model), compile_filter(
            filter_text, entity_fields(spec), user_id=actor.user_id))
    statement = (select(column).select_from(source).distinct()
                 .where(*scope, column.is_not(None)).order_by(column))
    if field.type not in TEXT_TYPES:
        return _matching_texts(statement, query)
    statement = statement.where(column != "")
    if query:
        statement = statement.where(matches(column, query, "%{}%"))
    return list(db.session.scalars(statement.limit(MAX_VALUES)))


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
    values = None
    if field.type in TEXT_TYPES and _walkable(_table_column(spec, field), field.common):
        values = _walk(actor, spec, field, query, filter_text)
    if values is None:
        values = _scanned(actor, spec, field, query, filter_text)
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
        column = getattr(Entity, field.stored_attr)
        # ``eclass || ''``: the class test must not lead SQLite (which keeps no statistics)
        # to the class index, one class's rows, instead of the index of the value.
        scope = (() if field.name in _UNIQUE_EVERYWHERE
                 else (Entity.eclass + "" == spec.name,))
    else:
        column, scope = spec.column(field), ()
    return db.session.scalar(select(column).where(column == value, *scope).limit(1)) is None
