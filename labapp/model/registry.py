"""The data-model registry: every class with its API fields, types, references and statuses.

Everything that needs to know the data model — validation, ``$filter``/``$select`` checks,
the datamodel endpoint, OData metadata, forms, the hierarchy — reads it from here. The
fields are derived from the SQLAlchemy models (column types plus their ``info``), so the
registry and the schema cannot disagree.

The model in use is one immutable :class:`Registry` per application, bound in
``app.extensions`` (:data:`REGISTRY`): :func:`install` builds a new one and swaps the
reference, so a request that is reading the model (in another thread) keeps a whole one and
never sees a half-filled dict. A model installed with ``publish=False`` is seen by the
installing application context alone (a sync works with the model it brings while the
other requests keep the one the database has) until :func:`publish`. Outside an
application context the model published last is read. ``CLASSES`` and ``PARENT_LINKS`` are
read-only views of the current model.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from flask import current_app, g, has_app_context
from sqlalchemy import JSON, BigInteger, Boolean, Column, Date, Float, Integer, String, Text
from sqlalchemy.orm import ColumnProperty
from sqlalchemy.sql.elements import KeyedColumnElement

from labapp.model.base import Entity
from labapp.model.content import File, Note
from labapp.model.lab import (
    Experiment,
    Fermentation,
    Plate,
    Request,
    Sample,
    Step,
    StepInput,
)
from labapp.model.org import Department, Project, User
from labapp.model.storage import Location
from labapp.model.types import UtcDateTime
from labapp.model.workflows import (
    ACTIVE_INACTIVE,
    INITIAL_ONLY,
    MATERIAL_WORKFLOW,
    PROJECT_WORKFLOW,
    REQUEST_WORKFLOW,
    WORKFLOW,
    Workflow,
)


@dataclass(frozen=True)
class FieldSpec:
    """One API field of a class."""

    name: str
    attr: str | None
    type: str
    nullable: bool = True
    default: Any = None
    ref: str | None = None
    read_only: bool = False
    max_length: int | None = None
    choices: tuple[str, ...] | None = None
    common: bool = False
    maximum: int | None = None
    minimum: float | None = None

    def describe(self) -> dict[str, Any]:
        """The field as the datamodel endpoint shows it."""
        return {"name": self.name, "type": self.type, "nullable": self.nullable,
                "default": self.default, "ref": self.ref, "readOnly": self.read_only,
                "maxLength": self.max_length, "choices": list(self.choices or []) or None}

    @property
    def stored_attr(self) -> str:
        """The model attribute of a stored field; LookupError for a computed one."""
        if self.attr is None:
            raise LookupError(f"Field {self.name!r} is computed, not stored.")
        return self.attr


@dataclass(frozen=True)
class ClassSpec:
    """One entity class: model, id prefix, workflow, fields by API name."""

    name: str
    model: type[Entity]
    prefix: str | None
    workflow: Workflow
    fields: Mapping[str, FieldSpec]
    create_only: frozenset[str] = field(default_factory=frozenset)
    _by_lower: dict[str, FieldSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_lower",
                           {spec.name.lower(): spec for spec in self.fields.values()})

    def field(self, name: str) -> FieldSpec | None:
        """The field called ``name`` (matched case-insensitively), or None."""
        return self._by_lower.get(name.lower())

    @property
    def table(self) -> str:
        return self.model.__tablename__

    def column(self, spec: FieldSpec) -> Any:
        """The mapped attribute behind a stored field (for queries)."""
        return getattr(self.model, spec.stored_attr)


_TYPES: tuple[tuple[type, str], ...] = (
    (UtcDateTime, "datetime"), (Boolean, "bool"), (Date, "date"), (BigInteger, "int"),
    (Integer, "int"), (Float, "float"), (Text, "text"), (String, "str"), (JSON, "json"),
)


def api_name(attr: str) -> str:
    """camelCase API name of a snake_case attribute; a trailing ``_id`` becomes ``ID``."""
    first, *rest = attr.split("_")
    parts = [first] + [part.capitalize() for part in rest]
    if len(parts) > 1 and parts[-1] == "Id":
        parts[-1] = "ID"
    return "".join(parts)


def _type_name(column: Column[Any]) -> str:
    column_type = column.type
    variant_base = getattr(column_type, "impl", column_type)
    for sa_type, name in _TYPES:
        if isinstance(column_type, sa_type) or isinstance(variant_base, sa_type):
            return name
    raise TypeError(f"no API type for column {column}")


def _integer_maximum(column: Column[Any]) -> int | None:
    """The largest value an integer column holds on every database (32 or 64 bits)."""
    if isinstance(column.type, BigInteger):
        return 2**63 - 1
    if isinstance(column.type, Integer):
        return 2**31 - 1
    return None


def field_of(key: str, column: KeyedColumnElement[Any]) -> FieldSpec:
    """The API field of the mapped attribute ``key`` stored in ``column`` (a table column;
    TypeError for any other expression)."""
    if not isinstance(column, Column):
        raise TypeError(f"{key} is not stored in a table column")
    info = column.info
    type_name = "ref" if info.get("ref") else _type_name(column)
    default = getattr(column.default, "arg", None)
    return FieldSpec(
        name=info.get("api") or api_name(key), attr=key, type=type_name,
        nullable=bool(column.nullable) and not column.primary_key,
        default=None if callable(default) else default, ref=info.get("ref"),
        read_only=bool(info.get("readOnly")),
        max_length=getattr(column.type, "length", None),
        choices=info.get("choices"), common=key in Entity.__table__.c,
        maximum=_integer_maximum(column), minimum=info.get("minimum"))


def _fields_of(model: type[Entity]) -> dict[str, FieldSpec]:
    fields: dict[str, FieldSpec] = {}
    for prop in model.__mapper__.iterate_properties:
        if not isinstance(prop, ColumnProperty):
            continue
        column = prop.columns[0]
        # Fields an extension adds to a built-in class come from the extension (install).
        if column.info.get("hidden") or column.info.get("extension"):
            continue
        spec = field_of(prop.key, column)
        fields[spec.name] = spec
    return fields


COMMON_CREATE_ONLY = frozenset({"notes", "files"})


def class_spec(model: type[Entity], prefix: str | None, workflow: Workflow,
          extra_fields: tuple[FieldSpec, ...] = (),
          create_only: frozenset[str] = frozenset()) -> ClassSpec:
    fields = _fields_of(model)
    fields.update({extra.name: extra for extra in extra_fields})
    return ClassSpec(model.__name__, model, prefix, workflow, fields,
                     COMMON_CREATE_ONLY | create_only)


_ROLES_FIELD = FieldSpec("roles", None, "json", read_only=True)

_BUILT_IN: dict[str, ClassSpec] = {spec.name: spec for spec in (
    class_spec(Department, "DEP", ACTIVE_INACTIVE),
    class_spec(Project, "PRJ", PROJECT_WORKFLOW),
    class_spec(User, None, ACTIVE_INACTIVE, (_ROLES_FIELD,), frozenset({"password"})),
    class_spec(Experiment, "EXP", WORKFLOW),
    class_spec(Step, "STP", WORKFLOW, create_only=frozenset({"input"})),
    class_spec(StepInput, "SIN", INITIAL_ONLY),
    class_spec(Sample, "SAM", MATERIAL_WORKFLOW),
    class_spec(Plate, "PLT", MATERIAL_WORKFLOW),
    class_spec(Fermentation, "FER", WORKFLOW),
    class_spec(Request, "REQ", REQUEST_WORKFLOW),
    class_spec(Location, "LOC", ACTIVE_INACTIVE),
    class_spec(Note, "NTE", INITIAL_ONLY),
    class_spec(File, "FIL", INITIAL_ONLY),
)}

# Parent links (child field -> parent) used by hierarchy, inheritance and views.
_BUILT_IN_LINKS: dict[str, tuple[str, ...]] = {
    "Step": ("experimentID",),
    "StepInput": ("stepID",),
    "Sample": ("parentID", "stepID", "experimentID", "plateID"),
    "Plate": ("stepID", "experimentID"),
    "Fermentation": ("originID", "experimentID"),
    "Location": ("parentID",),
    "Department": ("parentID",),
    "Note": ("subjectID",),
    "File": ("subjectID",),
}
REGISTRY = "labapp.registry"  # the app.extensions key of the application's model
_UNPUBLISHED = "labapp_registry"  # the g attribute of a model not published yet
_generations = itertools.count(1)


@dataclass(frozen=True)
class Registry:
    """One whole model: never changed once built (a new model is a new :class:`Registry`);
    ``source`` is what it was built from (the extension files), ``generation`` unique."""

    classes: Mapping[str, ClassSpec]
    parent_links: Mapping[str, tuple[str, ...]]
    generation: int = 0
    source: object = None
    by_lower: Mapping[str, ClassSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_lower",
                           {name.lower(): spec for name, spec in self.classes.items()})


_latest = [Registry(dict(_BUILT_IN), dict(_BUILT_IN_LINKS))]


def current() -> Registry:
    """The model of the current application context: the one it installed without
    publishing, else its application's (the one published last outside a context)."""
    if has_app_context():
        registry: Registry | None = (g.get(_UNPUBLISHED)
                                     or current_app.extensions.get(REGISTRY))
        if registry is not None:
            return registry
    return _latest[0]


class _View(Mapping[str, Any]):
    """A read-only mapping that always reads the current model's ``part``."""

    def __init__(self, part: str) -> None:
        self._part = part

    def _now(self) -> Mapping[str, Any]:
        part: Mapping[str, Any] = getattr(current(), self._part)
        return part

    def __getitem__(self, key: str) -> Any:
        return self._now()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._now())

    def __len__(self) -> int:
        return len(self._now())


CLASSES: Mapping[str, ClassSpec] = _View("classes")
PARENT_LINKS: Mapping[str, tuple[str, ...]] = _View("parent_links")


def find_class(name: str) -> ClassSpec | None:
    """The class called ``name`` (case-insensitive), or None."""
    return current().by_lower.get(name.lower())


def existing_class(name: str) -> ClassSpec:
    """The class called ``name`` (case-insensitive) where the caller knows it exists (a
    built-in class, a class read from a stored row); LookupError if the model lacks it."""
    spec = find_class(name)
    if spec is None:
        raise LookupError(f"The data model has no entity class {name!r}.")
    return spec


def classes() -> list[ClassSpec]:
    """Every entity class, in declaration order."""
    return list(current().classes.values())


def is_built_in(name: str) -> bool:
    """Whether the class called ``name`` is defined by the code (not by an extension)."""
    return name in _BUILT_IN


def built_in(name: str) -> ClassSpec:
    """The built-in class ``name`` as the code defines it (without extension fields)."""
    return _BUILT_IN[name]


def replace_fields(spec: ClassSpec, fields: Mapping[str, FieldSpec]) -> ClassSpec:
    """``spec`` with exactly ``fields``."""
    return replace(spec, fields=dict(fields))


def generation() -> int:
    """A number that changes every time :func:`install` changes the model: whatever is
    derived from the registry (views, hierarchy links) is recomputed when it moved."""
    return current().generation


def install(added_classes: Sequence[ClassSpec], added_fields: Mapping[str, Sequence[FieldSpec]],
            links: Mapping[str, tuple[str, ...]], source: object = None,
            publish: bool = True) -> Registry:
    """Make the current application's model the built-in classes plus these extensions
    (decisions §14), and return it; with ``publish=False`` only for the current
    application context, until :func:`publish`.

    ``added_classes`` are the lab-defined classes (already mapped), ``added_fields`` the
    fields added to any class by name, ``links`` the parent links of the added classes,
    ``source`` what they were read from. A new :class:`Registry` replaces the old one whole.
    """
    model: dict[str, ClassSpec] = dict(_BUILT_IN)
    model.update({spec.name: spec for spec in added_classes})
    for name, extra in added_fields.items():
        spec = model[name]
        model[name] = replace(spec, fields={**spec.fields, **{f.name: f for f in extra}})
    registry = Registry(model, {**_BUILT_IN_LINKS, **links}, next(_generations), source)
    if has_app_context() and not publish:
        setattr(g, _UNPUBLISHED, registry)
        return registry
    return _publish(registry)


def publish() -> Registry:
    """Make the model the current application context installed (without publishing) its
    application's, for every request from now on; return it."""
    return _publish(g.pop(_UNPUBLISHED, None) or current())


def _publish(registry: Registry) -> Registry:
    if has_app_context():
        g.pop(_UNPUBLISHED, None)
        current_app.extensions[REGISTRY] = registry
    _latest[0] = registry
    return registry
