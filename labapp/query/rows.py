"""Reading rows of an entity class or of a database view as API dicts.

The view endpoint and the dataset read through a :class:`Target`: the field source that
queries resolve names against, every column by API name, and the rows the actor may read.
Rows are read as plain columns (no ORM objects) and keyed by API name; ``attributes.key``
picks one key out of ``attributes``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, SQLColumnExpression, func, select

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.model.registry import ClassSpec
from labapp.query.dbviews import ViewSpec
from labapp.query.fields import FieldSource, entity_fields
from labapp.query.filter import compile_filter
from labapp.query.listing import Page, parse_orderby, parse_paging, parse_select

_ATTRIBUTE_PREFIX = "attributes."


@dataclass(frozen=True)
class Target:
    """What a query reads: its name, field source, columns by API name (in row order), the
    predicate of the rows the actor may read, where rows come from, and the unique key that
    ends every sort order."""

    name: str
    source: FieldSource
    columns: Mapping[str, ColumnElement[Any]]
    visible: ColumnElement[bool]
    origin: Any
    key: SQLColumnExpression[Any]


def entity_target(actor: Actor, spec: ClassSpec) -> Target:
    """The entities of a class: every stored field, the visibility rule of decisions §5."""
    columns = {name: spec.column(field) for name, field in spec.fields.items()
               if field.attr is not None}
    return Target(spec.name, entity_fields(spec), columns, readable(actor, spec.model),
                  spec.model, spec.model.id)


def view_target(actor: Actor, view: ViewSpec) -> Target:
    """The rows of a database view as ``actor`` may see them (guarded columns masked)."""
    fields = view.fields(actor)
    return Target(view.name, fields, fields.columns(), fields.visible(), fields.table,
                  fields.table.c.id)


def field_value(row: Mapping[str, Any], name: str) -> Any:
    """The value of field ``name`` (canonical, or ``attributes.key``) in a full row."""
    if name.startswith(_ATTRIBUTE_PREFIX):
        return (row.get("attributes") or {}).get(name[len(_ATTRIBUTE_PREFIX):])
    return row[name]


def read_rows(target: Target, names: Sequence[str], *, condition: ColumnElement[bool],
              order: Sequence[ColumnElement[Any]], limit: int,
              offset: int = 0) -> list[dict[str, Any]]:
    """The visible rows of ``target`` matching ``condition``, as dicts of ``names``.

    ``names`` are canonical field names (as :func:`~labapp.query.listing.parse_select`
    gives them, ``attributes.key`` included); empty means every column.
    """
    plain = [name for name in names if not name.startswith(_ATTRIBUTE_PREFIX)]
    keys = [name for name in names if name.startswith(_ATTRIBUTE_PREFIX)]
    fetched = list(plain) if names else list(target.columns)
    if keys and "attributes" not in fetched:
        fetched.append("attributes")
    statement = (select(*(target.columns[name] for name in fetched))
                 .select_from(target.origin).where(target.visible, condition)
                 .order_by(*order).limit(limit).offset(offset))
    rows = [dict(zip(fetched, row, strict=True)) for row in db.session.execute(statement)]
    if keys:
        for row in rows:
            for key in keys:
                row[key] = field_value(row, key)
            if "attributes" not in plain:
                del row["attributes"]
    return rows


def count_rows(target: Target, condition: ColumnElement[bool]) -> int:
    """How many visible rows of ``target`` match ``condition``."""
    return db.session.execute(select(func.count()).select_from(target.origin)
                              .where(target.visible, condition)).scalar_one()


def list_view(actor: Actor, view: ViewSpec, *, filter_text: str | None = None,
              orderby: str | None = None, select_text: str | None = None,
              top: str | None = None, skip: str | None = None) -> Page:
    """One page of a view's visible rows (at most 500) with the total, like the entity list:
    ``$filter``, ``$orderby``, ``$select``, ``$top`` and ``$skip`` with the same rules."""
    target = view_target(actor, view)
    limit, offset = parse_paging(top, skip)
    condition = compile_filter(filter_text, target.source, user_id=actor.user_id)
    order = parse_orderby(orderby, target.source, target.key.asc())
    names = parse_select(select_text, target.source)
    data = read_rows(target, names, condition=condition, order=order, limit=limit,
                     offset=offset)
    return Page(data=data, total=count_rows(target, condition), skip=offset)
