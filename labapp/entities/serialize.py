"""Entities as the API shows them: every registry field by its API name."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from labapp.model import Entity
from labapp.model.registry import ClassSpec, find_class


def to_api(entity: Entity, spec: ClassSpec | None = None,
                  select: Iterable[str] | None = None) -> dict[str, Any]:
    """The stored fields of ``entity`` (or only those named in ``select``, canonical names;
    ``attributes.key`` selects one attribute)."""
    spec = spec or find_class(entity.eclass)
    if select is None:
        return {name: _value(entity, field) for name, field in spec.fields.items()}
    data: dict[str, Any] = {}
    for name in select:
        if name.startswith("attributes."):
            data[name] = (entity.attributes or {}).get(name.split(".", 1)[1])
        else:
            data[name] = _value(entity, spec.fields[name])
    return data


def _value(entity: Entity, field) -> Any:
    if field.attr is None:
        return getattr(entity, field.name)
    return getattr(entity, field.attr)
