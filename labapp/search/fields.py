"""What a search ``$filter`` may name: the common fields every entity has (table ``entity``),
plus ``attributes.key``; search spans all classes, so class-specific fields are not here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement

from labapp.db import db
from labapp.model import Entity
from labapp.query.fields import FieldSource, FilterField

# API name → (attribute of Entity, registry type name)
_COMMON = {
    "id": ("id", "str"), "eClass": ("eclass", "str"), "name": ("name", "str"),
    "description": ("description", "text"), "barcode": ("barcode", "str"),
    "status": ("status", "str"), "type": ("type", "str"), "userID": ("user_id", "ref"),
    "departmentID": ("department_id", "ref"), "projectID": ("project_id", "ref"),
    "createdBy": ("created_by", "ref"), "createdUtc": ("created_utc", "datetime"),
    "modifiedBy": ("modified_by", "ref"), "modifiedUtc": ("modified_utc", "datetime"),
    "version": ("version", "int"),
}
_BY_FOLDED = {name.lower(): name for name in _COMMON}


@dataclass(frozen=True)
class _CommonFields:
    dialect: str

    def field(self, name: str) -> FilterField | None:
        canonical = _BY_FOLDED.get(name.lower())
        if canonical is None:
            return None
        attr, type_name = _COMMON[canonical]
        return FilterField(canonical, getattr(Entity, attr), type_name,
                           Entity.__table__.c[attr].nullable)

    def attribute(self, key: str) -> ColumnElement[Any]:
        return Entity.attributes[key]


def common_fields() -> FieldSource:
    """The field source of search ``$filter`` on the application's database."""
    return _CommonFields(db.engine.dialect.name)
