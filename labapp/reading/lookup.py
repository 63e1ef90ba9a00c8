"""Looking entities up as every reader sees them: a class by name, one visible entity, its API
form (the entity feature's own reads, with files, events and audit trail, are
:mod:`labapp.entities.loading`)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import select

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.errors import NotFound
from labapp.model import Entity
from labapp.model.registry import ClassSpec, FieldSpec, existing_class, find_class


def class_named(name: str) -> ClassSpec:
    """The class a URL segment names (case-insensitive); an unknown class is 404."""
    spec = find_class(name)
    if spec is None:
        raise NotFound(f"No entity class {name!r}.", code="unknown_class")
    return spec


def load_visible(actor: Actor, spec: ClassSpec, entity_id: str) -> Entity:
    """The entity of class ``spec`` with this id, if the actor may see it; else 404."""
    entity = db.session.scalar(select(spec.model).where(spec.model.id == entity_id,
                                                        readable(actor, spec.model)))
    if entity is None:
        raise NotFound(f"No {spec.name} {entity_id!r}.")
    return entity


def to_api(entity: Entity, spec: ClassSpec | None = None,
           select: Iterable[str] | None = None) -> dict[str, Any]:
    """The stored fields of ``entity`` (or only those named in ``select``, canonical names;
    ``attributes.key`` selects one attribute)."""
    spec = spec or existing_class(entity.eclass)
    if select is None:
        return {name: _value(entity, field) for name, field in spec.fields.items()}
    data: dict[str, Any] = {}
    for name in select:
        if name.startswith("attributes."):
            data[name] = (entity.attributes or {}).get(name.split(".", 1)[1])
        else:
            data[name] = _value(entity, spec.fields[name])
    return data


def _value(entity: Entity, field: FieldSpec) -> Any:
    return getattr(entity, field.name if field.attr is None else field.attr)
