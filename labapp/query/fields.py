"""What a query may name: the field whitelist shared by ``$filter``, ``$orderby`` and ``$select``.

A :class:`FieldSource` offers named fields and, optionally, the free ``attributes``. Entity
classes get one from the registry (:func:`entity_fields`); database views can offer their
own columns through the same protocol. Nothing outside a source is reachable: no
relationship navigation, only ``attributes.key`` / ``attributes/key``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import ColumnElement

from labapp.db import db
from labapp.model.registry import ClassSpec

ATTRIBUTE = "attribute"  # FilterField.type of one key of the free ``attributes``
TEXT_TYPES = frozenset({"str", "text", "ref"})
_ATTRIBUTE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class UnknownField(LookupError):
    """A name that the field source does not offer (the message says why)."""


@dataclass(frozen=True)
class FilterField:
    """One queryable column: canonical API name, SQL expression and registry type name.

    ``type`` is one of the registry's type names (str, text, int, float, bool, date,
    datetime, json, ref) or :data:`ATTRIBUTE` for one key of the JSON ``attributes``.
    """

    name: str
    expression: ColumnElement[Any]
    type: str
    nullable: bool = True


class FieldSource(Protocol):
    """What a query may reach: named fields, optionally free attributes, and the dialect."""

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``: picks the JSON functions for attributes."""

    def field(self, name: str) -> FilterField | None:
        """The field called ``name`` (case-insensitive), or None."""

    def attribute(self, key: str) -> ColumnElement[Any] | None:
        """The JSON value of ``attributes[key]``, or None when the source has no attributes."""


@dataclass(frozen=True)
class _EntityFields:
    spec: ClassSpec
    dialect: str

    def field(self, name: str) -> FilterField | None:
        found = self.spec.field(name)
        if found is None or found.attr is None:
            return None
        return FilterField(found.name, self.spec.column(found), found.type, found.nullable)

    def attribute(self, key: str) -> ColumnElement[Any]:
        return self.spec.model.attributes[key]


def entity_fields(spec: ClassSpec, dialect: str | None = None) -> FieldSource:
    """The fields of an entity class as queries see them: every stored registry field.

    ``dialect`` defaults to the application's database.
    """
    return _EntityFields(spec, dialect or db.engine.dialect.name)


def resolve_field(source: FieldSource, path: str) -> FilterField:
    """Resolve ``name``, ``attributes.key`` or ``attributes/key``; raise UnknownField if not.

    An attribute comes back as a FilterField of type :data:`ATTRIBUTE` named
    ``attributes.<key>`` whose expression is the key's JSON value.
    """
    head, *rest = re.split(r"[./]", path, maxsplit=1)
    if not rest or head.lower() != "attributes":
        found = source.field(head)
        if found is None:
            raise UnknownField(f"Unknown field '{head}'")
        if rest:
            raise UnknownField(f"Navigation '{path}' is not supported; only attributes.<key> is")
        return found
    key = rest[0]
    if not _ATTRIBUTE_KEY.fullmatch(key):
        raise UnknownField(f"Invalid attribute key '{key}'")
    expression = source.attribute(key)
    if expression is None:
        raise UnknownField(f"Unknown field '{path}': there are no attributes here")
    return FilterField(f"attributes.{key}", expression, ATTRIBUTE)


def attribute_text(element: ColumnElement[Any]) -> ColumnElement[str]:
    """The value of one ``attributes`` key as text (for string comparisons and sorting)."""
    text: ColumnElement[str] = element.as_string()
    return text
