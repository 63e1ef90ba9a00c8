"""The database views (datamodel.md "Database views"): names, columns, and how queries reach them.

The views themselves are created by a migration; this module describes them for the view
endpoint, the dataset and OData. There is one flat view per entity class, named after it
(every stored field of the class, ``attributes`` as JSON text), and four overview views
that join related data: ``SampleOverview``, ``StorageOverview``, ``StepSampleInput`` and
``ExperimentProgress``. Every view has one row per entity and carries ``id``, ``eClass``,
``departmentID`` and ``projectID``, so the row-level security of decisions §5 applies to it
as to the entity it shows (:meth:`ViewFields.visible`).

Database columns are snake_case; queries and rows use the API names (``departmentID``,
``createdUtc``). On PostgreSQL a view is called exactly like its API name (``"Sample"``,
quoted); SQLite matches names case-insensitively, so ``Sample`` would clash with the table
``sample`` and every view is called ``v_<Name>`` there (:meth:`ViewSpec.db_name`).

Overview columns that come from a joined entity (the experiment name of a sample, the step
of an input...) name that entity's id column as a *guard*: a caller who may not read the
joined entity gets null there, in rows, filters and sorting alike, so a view never shows
more than the entity API would.

``attributes`` of the flat views is JSON text in the database; ``attributes.key`` works in
``$filter``/``$orderby``/``$select`` exactly as on entities, through the database's JSON
functions on that text (``CAST(... AS JSONB)`` on PostgreSQL, SQLite's ``json_extract``),
and rows show ``attributes`` as an object.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ColumnElement,
    Date,
    Dialect,
    Float,
    Integer,
    String,
    Text,
    and_,
    case,
    cast,
    column,
    exists,
    table,
    type_coerce,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import aliased
from sqlalchemy.sql.expression import TableClause
from sqlalchemy.types import TypeDecorator

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.model import Entity
from labapp.model.registry import api_name, classes, generation
from labapp.model.types import UtcDateTime
from labapp.query.fields import FilterField

SQLITE_PREFIX = "v_"


class JsonText(TypeDecorator[Any]):
    """JSON stored as text (the views' ``attributes``), read back as a Python value."""

    impl = Text
    cache_ok = True

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        return None if value is None else json.loads(value)


_SQL_TYPES = {"str": String, "ref": String, "text": Text, "int": Integer, "float": Float,
              "bool": Boolean, "date": Date, "datetime": UtcDateTime, "json": JsonText}


@dataclass(frozen=True)
class ViewColumn:
    """One column: API name, database column, registry type name (str, text, ref, int,
    float, bool, date, datetime, json) and the guard columns (ids of joined entities the
    caller must be able to read to see the value)."""

    name: str
    column: str
    type: str
    guards: tuple[str, ...] = ()


@dataclass(frozen=True)
class ViewSpec:
    """One database view: its API name, a description and its columns in row order."""

    name: str
    description: str
    columns: tuple[ViewColumn, ...]
    _by_lower: dict[str, ViewColumn] = field(init=False, repr=False, compare=False,
                                             hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_lower", {c.name.lower(): c for c in self.columns})

    def column(self, name: str) -> ViewColumn | None:
        """The column with API name ``name`` (case-insensitive), or None."""
        return self._by_lower.get(name.lower())

    @property
    def has_attributes(self) -> bool:
        """Whether the view shows the free ``attributes`` (the flat views)."""
        found = self.column("attributes")
        return found is not None and found.type == "json"

    def db_name(self, dialect: str) -> str:
        """The view's name in the database: the API name, ``v_<Name>`` on SQLite."""
        return SQLITE_PREFIX + self.name if dialect == "sqlite" else self.name

    def table(self, dialect: str | None = None) -> TableClause:
        """The view as a typed SQLAlchemy table (``dialect`` defaults to the app's)."""
        return _table(self, dialect or db.engine.dialect.name)

    def fields(self, actor: Actor, dialect: str | None = None) -> ViewFields:
        """What ``actor``'s queries may name in this view: a FieldSource."""
        dialect = dialect or db.engine.dialect.name
        return ViewFields(self, actor, dialect, _table(self, dialect))


@cache
def _table(spec: ViewSpec, dialect: str) -> TableClause:
    return table(spec.db_name(dialect),
                 *(column(c.column, _SQL_TYPES[c.type]) for c in spec.columns))


@dataclass(frozen=True)
class ViewFields:
    """A view's columns as one actor's queries see them (the FieldSource of a view).

    Guarded columns are masked to null where the actor may not read the joined entity.
    """

    view: ViewSpec
    actor: Actor
    dialect: str
    table: TableClause

    def expression(self, spec: ViewColumn) -> ColumnElement[Any]:
        """The SQL of one column, masked by its guards for this actor."""
        expression = self.table.c[spec.column]
        if not spec.guards or self.actor.is_admin:
            return expression
        checks = []
        for guard in spec.guards:
            joined = aliased(Entity)
            checks.append(exists().where(joined.id == self.table.c[guard],
                                         readable(self.actor, joined)))
        return case((and_(*checks), expression))

    def field(self, name: str) -> FilterField | None:
        found = self.view.column(name)
        if found is None:
            return None
        return FilterField(found.name, self.expression(found), found.type)

    def attribute(self, key: str) -> ColumnElement[Any] | None:
        if not self.view.has_attributes:
            return None
        text = self.table.c.attributes
        if self.dialect == "postgresql":
            return cast(text, JSONB)[key]
        return type_coerce(text, JSON)[key]

    def columns(self) -> dict[str, ColumnElement[Any]]:
        """Every column by API name, in row order, masked for this actor."""
        return {spec.name: self.expression(spec) for spec in self.view.columns}

    def visible(self) -> ColumnElement[bool]:
        """The rows the actor may read: the visibility rule on the row's own entity."""
        return readable(self.actor, self.table.c)


def _column(name: str, type_name: str, *guards: str) -> ViewColumn:
    """A column whose API name is the camelCase of its database name (``eclass``: eClass)."""
    return ViewColumn("eClass" if name == "eclass" else api_name(name), name, type_name,
                      guards)


def _flat_views() -> list[ViewSpec]:
    return [ViewSpec(spec.name, f"Every stored field of each {spec.name} entity.",
                     tuple(ViewColumn(f.name, f.attr, f.type)
                           for f in spec.fields.values() if f.attr is not None))
            for spec in classes()]


_ROW = (_column("id", "str"), _column("eclass", "str"), _column("name", "str"))
_OWNERSHIP = (_column("department_id", "ref"), _column("project_id", "ref"))

SAMPLE_OVERVIEW = ViewSpec(
    "SampleOverview",
    "Each sample with its owner, experiment, step, plate and well, and where it is stored: "
    "its own location or, when it has none, its plate's.",
    (*_ROW, _column("barcode", "str"), _column("status", "str"), _column("type", "str"),
     _column("user_id", "ref"), _column("owner_name", "str"), *_OWNERSHIP,
     _column("experiment_id", "ref"), _column("experiment_name", "str", "experiment_id"),
     _column("step_id", "ref"), _column("step_name", "str", "step_id"),
     _column("plate_id", "ref"), _column("plate_name", "str", "plate_id"),
     _column("well", "str"), _column("location_id", "ref", "location_id"),
     _column("location_name", "str", "location_id"),
     _column("location_path", "str", "location_id"), _column("position", "str"),
     _column("amount", "float"), _column("unit", "str"), _column("concentration", "float"),
     _column("concentration_unit", "str"), _column("date_taken", "date"),
     _column("expiry_date", "date"), _column("created_utc", "datetime"),
     _column("modified_utc", "datetime")))

STORAGE_OVERVIEW = ViewSpec(
    "StorageOverview",
    "Each location with its capacity, what is stored in it (plates, and samples not on a "
    "plate), the places still available (the capacity, or the slots of a grid without one, "
    "the smaller when both are set, minus what is stored; null when unlimited) and its path.",
    (*_ROW, _column("barcode", "str"), _column("status", "str"), *_OWNERSHIP,
     _column("parent_id", "ref"), _column("location_type", "str"),
     _column("capacity", "int"), _column("stored", "int"), _column("available", "int"),
     _column("path", "str"), _column("rows", "int"), _column("columns", "int"),
     _column("temperature", "float"), _column("position", "str")))

STEP_SAMPLE_INPUT = ViewSpec(
    "StepSampleInput",
    "Each step input with its step, the step's experiment and the input entity's name.",
    (*_ROW, _column("status", "str"), *_OWNERSHIP,
     _column("step_id", "ref"), _column("step_name", "str", "step_id"),
     _column("step_index", "int", "step_id"), _column("step_status", "str", "step_id"),
     _column("experiment_id", "ref", "step_id"),
     _column("experiment_name", "str", "step_id", "experiment_id"),
     _column("experiment_status", "str", "step_id", "experiment_id"),
     _column("input_class", "str"), _column("input_id", "ref"),
     _column("input_name", "str", "input_id"), _column("input_position", "int"),
     _column("amount", "float"), _column("unit", "str"), _column("created_utc", "datetime")))

EXPERIMENT_PROGRESS = ViewSpec(
    "ExperimentProgress",
    "Each experiment with the number of its steps, in total and per status.",
    (*_ROW, _column("status", "str"), _column("type", "str"), _column("user_id", "ref"),
     *_OWNERSHIP, _column("start_date", "date"), _column("end_date", "date"),
     _column("steps_total", "int"),
     *(_column(f"steps_{status}", "int") for status in
       ("initial", "in_progress", "completed", "canceled")),
     _column("created_utc", "datetime"), _column("modified_utc", "datetime")))

OVERVIEWS = (SAMPLE_OVERVIEW, STORAGE_OVERVIEW, STEP_SAMPLE_INPUT, EXPERIMENT_PROGRESS)
@dataclass(frozen=True)
class _Catalogue:
    """The views of one generation of the model, never changed once built."""

    generation: int
    by_name: Mapping[str, ViewSpec]
    by_lower: Mapping[str, ViewSpec]


_latest: _Catalogue | None = None


def _catalogue() -> _Catalogue:
    """The views of the registry's current model: built once per generation and swapped in
    whole, so a thread reading the views never sees them half rebuilt."""
    global _latest
    current = _latest
    if current is None or current.generation != generation():
        by_name = MappingProxyType({spec.name: spec for spec in (*_flat_views(), *OVERVIEWS)})
        current = _Catalogue(generation(), by_name, MappingProxyType(
            {name.lower(): spec for name, spec in by_name.items()}))
        _latest = current
    return current


def views() -> Mapping[str, ViewSpec]:
    """Every view by name: a flat view per class of the registry's current model (extension
    classes included, decisions §14), then the overviews."""
    return _catalogue().by_name


def find_view(name: str) -> ViewSpec | None:
    """The view called ``name`` (case-insensitive), or None."""
    return _catalogue().by_lower.get(name.lower())


# The views of the code's own model, as at start-up (extension classes: :func:`views`).
BUILT_IN_VIEWS: Mapping[str, ViewSpec] = views()
