"""Data-model extensions (decisions §14): lab-defined classes and fields from JSON files.

Every ``*.json`` file of the instance folder's ``datamodel/`` may hold::

    {"classes": [{"name": "TaxonomyItem", "prefix": "TAX", "workflow": "workflow",
                  "parentLinks": ["parentID"], "unique": ["scientificName"],
                  "fields": [{"name": "scientificName", "type": "str", "maxLength": 200},
                             {"name": "parentID", "type": "ref(TaxonomyItem)"}]}],
     "fields": {"Sample": [{"name": "genomeID", "type": "ref(Genome)"}]}}

A workflow is the name of one of datamodel.md's (``workflow``, ``material``, ``request``,
``project``, ``activeInactive``, ``initial``) or a list of statuses (initial first, any
move allowed). Field types are datamodel.md's: ``str``, ``text``, ``int``, ``float``,
``bool``, ``date``, ``datetime``, ``json``, ``ref(Class)``, ``ref(*)``.

:func:`load` reads and validates every file before it changes anything: a bad file raises
:class:`ExtensionError` naming the file and the field, and nothing of any file is loaded.
Loaded classes are mapped as joined-table subclasses of :class:`Entity` (their tables on
:data:`EXTENSION_METADATA`); fields added to a built-in class become deferred columns of its
table, so a database not yet synchronised can still read and write that class. A class or
field once mapped stays mapped for the life of the process (SQLAlchemy cannot unmap it); a
model without it simply no longer names it, and nothing reads or writes it.
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Date,
    FetchedValue,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)
from sqlalchemy.orm import column_property

from labapp.db import db
from labapp.model import registry, workflows
from labapp.model.base import Entity
from labapp.model.types import UtcDateTime

EXTENSION_METADATA = MetaData(naming_convention=db.metadata.naming_convention)
WORKFLOWS: dict[str, workflows.Workflow] = {
    "workflow": workflows.WORKFLOW, "material": workflows.MATERIAL_WORKFLOW,
    "request": workflows.REQUEST_WORKFLOW, "project": workflows.PROJECT_WORKFLOW,
    "activeInactive": workflows.ACTIVE_INACTIVE, "initial": workflows.INITIAL_ONLY}
_SCALARS = {"str": String, "text": Text, "int": Integer, "float": Float, "bool": Boolean,
            "date": Date, "datetime": UtcDateTime, "json": JSON}
_CLASS_NAME = re.compile(r"^[A-Z][A-Za-z0-9]{1,31}$")
_FIELD_NAME = re.compile(r"^[a-z][A-Za-z0-9]{0,47}$")
_PREFIX = re.compile(r"^[A-Z]{2,8}$")
_REF = re.compile(r"^ref\((\*|[A-Z][A-Za-z0-9]*)\)$")
_CLASS_KEYS = {"name", "prefix", "workflow", "parentLinks", "unique", "fields", "description"}
_FIELD_KEYS = {"name", "type", "maxLength", "default", "choices", "description", "minimum"}
_mapped: dict[str, type[Entity]] = {}


class ExtensionError(Exception):
    """An extension file is invalid; the message names the file and the field."""


@dataclass(frozen=True)
class FieldDef:
    name: str
    type: str
    ref: str | None = None
    max_length: int | None = None
    default: Any = None
    choices: tuple[str, ...] | None = None
    minimum: float | None = None

    @property
    def attr(self) -> str:
        """The snake_case column of the field (``genomeID``: ``genome_id``)."""
        return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", self.name.replace("ID", "Id")).lower()


@dataclass(frozen=True)
class ClassDef:
    name: str
    prefix: str
    workflow: workflows.Workflow
    fields: tuple[FieldDef, ...]
    parent_links: tuple[str, ...]
    unique: frozenset[str]
    source: str

    @property
    def table(self) -> str:
        return "x_" + re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", self.name).lower()


@dataclass(frozen=True)
class Extensions:
    """What the files define: the classes, the fields added to other classes, the files."""

    classes: tuple[ClassDef, ...] = ()
    fields: tuple[tuple[str, FieldDef, str], ...] = ()
    files: tuple[str, ...] = ()
    digest: str = ""


def read(folder: Path) -> Extensions:
    """Read and validate every ``*.json`` of ``folder`` (absent: no extensions).

    Raises :class:`ExtensionError` for the first problem found, naming file and field.
    """
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    digest = hashlib.sha256()
    documents = []
    for path in files:
        content = path.read_bytes()
        digest.update(path.name.encode() + b"\0" + content)
        try:
            documents.append((path.name, json.loads(content)))
        except ValueError as error:
            raise ExtensionError(f"{path.name}: not valid JSON ({error})") from None
    class_defs: list[ClassDef] = []
    added: list[tuple[str, FieldDef, str]] = []
    for name, document in documents:
        _expect(isinstance(document, dict) and set(document) <= {"classes", "fields"},
                name, "the file must be an object with 'classes' and/or 'fields'")
        for index, item in enumerate(document.get("classes", [])):
            class_defs.append(_class_def(name, f"classes[{index}]", item))
        fields = document.get("fields", {})
        _expect(isinstance(fields, dict), name, "'fields' must map class names to lists")
        for class_name, items in fields.items():
            _expect(isinstance(items, list), name, f"fields.{class_name} must be a list")
            for index, item in enumerate(items):
                where = f"fields.{class_name}[{index}]"
                added.append((class_name, _field_def(name, where, item), name))
    _check_whole(class_defs, added)
    return Extensions(tuple(class_defs), tuple(added), tuple(path.name for path in files),
                      digest.hexdigest())


def _expect(condition: bool, source: str, message: str) -> None:
    if not condition:
        raise ExtensionError(f"{source}: {message}")


def _named_object(source: str, where: str, item: Any, keys: set[str]
                  ) -> tuple[Any, str]:
    """Check that ``item`` is an object with only ``keys``; its ``name`` and the place to
    name in messages (``where`` with the name, when it has one)."""
    _expect(isinstance(item, dict), source, f"{where} must be an object")
    name = item.get("name")
    where = f"{where} ({name})" if isinstance(name, str) else where
    _expect(set(item) <= keys, source, f"{where}: unknown key(s) {sorted(set(item) - keys)}")
    return name, where


def _class_def(source: str, where: str, item: Any) -> ClassDef:
    name, where = _named_object(source, where, item, _CLASS_KEYS)
    _expect(isinstance(name, str) and bool(_CLASS_NAME.match(name)), source,
            f"{where}: 'name' must be a class name like TaxonomyItem")
    prefix = item.get("prefix")
    _expect(isinstance(prefix, str) and bool(_PREFIX.match(prefix)), source,
            f"{where}: 'prefix' must be 2 to 8 capital letters")
    workflow = _workflow(source, where, item.get("workflow", "initial"))
    fields = item.get("fields", [])
    _expect(isinstance(fields, list), source, f"{where}: 'fields' must be a list")
    defs = tuple(_field_def(source, f"{where}.fields[{index}]", field)
                 for index, field in enumerate(fields))
    names = [field.name for field in defs]
    _expect(len(set(names)) == len(names), source, f"{where}: a field is declared twice")
    clash = set(names) & {registry.api_name(key) for key in Entity.__table__.c.keys()}
    _expect(not clash, source, f"{where}: field(s) {sorted(clash)} are common fields")
    links = item.get("parentLinks", [])
    unique = item.get("unique", [])
    for key, values in (("parentLinks", links), ("unique", unique)):
        _expect(isinstance(values, list) and all(value in names for value in values), source,
                f"{where}: '{key}' must list fields of the class")
    for link in links:
        _expect(defs[names.index(link)].type == "ref", source,
                f"{where}: parent link {link} must be a ref field")
    return ClassDef(name, prefix, workflow, defs, tuple(links), frozenset(unique), source)


def _workflow(source: str, where: str, value: Any) -> workflows.Workflow:
    if isinstance(value, str):
        _expect(value in WORKFLOWS, source,
                f"{where}: workflow {value!r} is not one of {sorted(WORKFLOWS)}")
        return WORKFLOWS[value]
    _expect(isinstance(value, list) and bool(value) and all(
        isinstance(status, str) and status.isidentifier() for status in value)
        and len(set(value)) == len(value), source,
        f"{where}: 'workflow' must be a workflow name or a list of distinct statuses")
    return workflows.Workflow(tuple(value))


def _field_def(source: str, where: str, item: Any) -> FieldDef:
    name, where = _named_object(source, where, item, _FIELD_KEYS)
    _expect(isinstance(name, str) and bool(_FIELD_NAME.match(name)), source,
            f"{where}: 'name' must be a camelCase field name")
    type_name = item.get("type")
    ref = _REF.match(type_name) if isinstance(type_name, str) else None
    _expect(ref is not None or type_name in _SCALARS, source,
            f"{where}: type {type_name!r} is not one of {sorted(_SCALARS)} or ref(Class)")
    _expect(ref is None or name.endswith("ID"), source,
            f"{where}: a ref field's name ends in ID")
    max_length = item.get("maxLength")
    _expect(max_length is None or (type_name == "str" and isinstance(max_length, int)
                                   and 0 < max_length <= 4000), source,
            f"{where}: 'maxLength' is a number from 1 to 4000, for str fields")
    choices = item.get("choices")
    _expect(choices is None or (type_name == "str" and isinstance(choices, list) and all(
        isinstance(choice, str) for choice in choices)), source,
            f"{where}: 'choices' is a list of strings, for str fields")
    default = item.get("default")
    _expect(default is None or isinstance(default, str | int | float | bool), source,
            f"{where}: 'default' must be a plain value")
    minimum = item.get("minimum")
    _expect(minimum is None or (type_name in ("int", "float") and not isinstance(minimum, bool)
                                and isinstance(minimum, int | float)), source,
            f"{where}: 'minimum' is a number, for int and float fields")
    if ref:
        return FieldDef(name, "ref", ref.group(1))
    return FieldDef(name, type_name, None, (max_length or 255) if type_name == "str" else None,
                    default, tuple(choices) if choices else None, minimum)


def _check_whole(class_defs: list[ClassDef], added: list[tuple[str, FieldDef, str]]) -> None:
    """What no single item can check: unique names and prefixes, known ref targets."""
    known = {name for name in registry.CLASSES if registry.is_built_in(name)}
    prefixes = {spec.prefix for spec in registry.CLASSES.values()
                if registry.is_built_in(spec.name) and spec.prefix}
    tables = set(db.metadata.tables)
    for class_def in class_defs:
        where = f"{class_def.source}: class {class_def.name}"
        _expect(class_def.name.lower() not in {name.lower() for name in known}, where,
                "is already defined")
        _expect(class_def.prefix not in prefixes, where,
                f"prefix {class_def.prefix} is already used")
        _expect(class_def.table not in tables, where, f"table {class_def.table} exists")
        known.add(class_def.name)
        prefixes.add(class_def.prefix)
    fields_of = {c.name: {f.name for f in c.fields} for c in class_defs}
    for class_name, field, source in added:
        where = f"{source}: fields.{class_name} ({field.name})"
        _expect(class_name in known, where, f"class {class_name} is not defined")
        if class_name not in fields_of:
            fields_of[class_name] = set(registry.built_in(class_name).fields)
        existing = {name.lower() for name in fields_of[class_name]}
        _expect(field.name.lower() not in existing, where, "the class already has this field")
        fields_of[class_name].add(field.name)
    every = [(f"{c.source}: class {c.name}", f) for c in class_defs for f in c.fields]
    every += [(f"{source}: fields.{name}", f) for name, f, source in added]
    for where, field in every:
        _expect(field.ref is None or field.ref == "*" or field.ref in known, where,
                f"{field.name}: ref target {field.ref} is not a class")


def _column(field: FieldDef, *, added: bool, unique: bool = False) -> Column[Any]:
    """The column of a field; a field added to an existing class is deferred and marked as
    filled by the database, so rows are read and written without it until a sync adds it."""
    info = {"api": field.name, "extension": True}
    if field.ref:
        info["ref"] = field.ref
        column_type = String(64)
    elif field.type == "str":
        column_type = String(field.max_length)
    else:
        column_type = _SCALARS[field.type]()
    if field.choices:
        info["choices"] = field.choices
    if field.minimum is not None:
        info["minimum"] = field.minimum
    # A reference added to a built-in table has no foreign key: the entity service checks
    # references, and a built-in table's foreign keys stay the ones its migrations made.
    args: list[Any] = [ForeignKey(Entity.__table__.c.id)] if field.ref and not added else []
    return Column(field.attr, column_type, *args, index=bool(field.ref) or None,
                  unique=unique or None, nullable=True, info=info, default=field.default,
                  server_default=FetchedValue() if added else None)


def _map_class(class_def: ClassDef) -> type[Entity]:
    """The mapped class of ``class_def``: mapped once per process; fields a later model
    adds to it become deferred columns."""
    model = _mapped.get(class_def.name)
    if model is None:
        columns = [_column(field, added=False, unique=field.name in class_def.unique)
                   for field in class_def.fields]
        table = Table(class_def.table, EXTENSION_METADATA,
                      Column("id", String(64), ForeignKey(Entity.__table__.c.id,
                                                          ondelete="CASCADE"),
                             primary_key=True),
                      *columns, info={"extension": class_def.name})
        model = type(class_def.name, (Entity,),
                     {"__table__": table, "__tablename__": class_def.table,
                      "__module__": __name__, "__doc__": f"Extension class {class_def.name}."})
        _mapped[class_def.name] = model
        return model
    for field in class_def.fields:
        _add_column(model, field)
    return model


def _add_column(model: type[Entity], field: FieldDef) -> None:
    table = model.__table__
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not mapped to a table")
    if field.attr in table.c:
        return
    column = _column(field, added=True)
    table.append_column(column)
    model.__mapper__.add_property(field.attr, column_property(column, deferred=True))
    # Fetching server-filled columns back would name the column in RETURNING.
    model.__mapper__.eager_defaults = False


# Mapping changes the process's mappers (a class mapped once, columns added to it): one
# thread at a time, however many applications or request threads install a model.
_MAPPING = threading.Lock()


def install(extensions: Extensions, publish: bool = True) -> None:
    """Map what ``extensions`` define and make it the current application's model (a whole
    new :class:`registry.Registry`, swapped in); with ``publish=False`` only the current
    application context's, until :func:`registry.publish`. The columns fields add to
    existing classes are deferred and filled by the database, so requests with the
    model before it never name them."""
    with _MAPPING:
        _install(extensions, publish)


def _install(extensions: Extensions, publish: bool) -> None:
    class_specs = []
    for class_def in extensions.classes:
        model = _map_class(class_def)
        spec = registry.class_spec(model, class_def.prefix, class_def.workflow)
        own = [registry.field_of(field.attr, model.__table__.c[field.attr])
               for field in class_def.fields]
        class_specs.append(registry.replace_fields(
            spec, {**spec.fields, **{field.name: field for field in own}}))
    added: dict[str, list[registry.FieldSpec]] = {}
    for class_name, field, _source in extensions.fields:
        model = _mapped.get(class_name) or registry.built_in(class_name).model
        _add_column(model, field)
        added.setdefault(class_name, []).append(
            registry.field_of(field.attr, model.__table__.c[field.attr]))
    registry.install(class_specs, added,
                     {c.name: c.parent_links for c in extensions.classes if c.parent_links},
                     source=extensions, publish=publish)
