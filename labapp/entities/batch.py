"""Reading a ``POST /api/entity`` batch: classes, ids, notation and field values, checked.

Nothing is written here except sequence draws, which roll back with the batch's transaction.
"""
from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from labapp.db import db
from labapp.entities.notation import (
    DRAWABLE_FIELDS,
    ID_PATTERN,
    SEQUENCE_VALUE,
    BatchItem,
    Resolver,
    decide_id,
    item_error,
)
from labapp.entities.values import FieldValueError, coerce
from labapp.errors import Conflict, InvalidInput
from labapp.model import Entity, Sequence
from labapp.model.registry import ClassSpec, FieldSpec, find_class
from labapp.sequences.service import next_ids

MAX_BATCH = 10_000
# Computed or maintained by the service: ignored when a client sends them back (decisions §6).
IGNORED_ON_WRITE = frozenset({
    "createdBy", "createdUtc", "modifiedBy", "modifiedUtc", "accessType", "canWrite",
    "events", "auditEvents", "hierarchy", "checkin", "checkout", "available", "stored",
    "roles", "lastLoginUtc", "authSource", "eClass", "version",
})


class BatchInputError(InvalidInput):
    code = "invalid_entity"


@dataclass
class PreparedItem:
    """One checked item: typed values by API name, attribute changes, create-only extras."""

    index: int
    spec: ClassSpec
    id: str
    generated: bool
    values: dict[str, Any] = field(default_factory=dict)
    attributes: dict[str, Any] | None = None
    attribute_keys: dict[str, Any] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)
    version: int | None = None
    existing: Entity | None = None
    source: Entity | None = None  # the entity a clone copies

    @property
    def is_new(self) -> bool:
        return self.existing is None


def resolve_sequence(name: str) -> str:
    """A sequence id: itself when it exists, else the default sequence of a class name."""
    if db.session.get(Sequence, name) is not None:
        return name
    spec = find_class(name)
    return spec.name if spec is not None else name


class Drawer:
    """Hands out sequence values, drawing each sequence's share of a batch in one statement."""

    def __init__(self) -> None:
        self._reserved: dict[str, deque[str]] = {}

    def reserve(self, counts: Counter[str]) -> None:
        """Draw ahead what the batch will need; unknown sequences are left for the item that
        names them to report."""
        for name, count in counts.items():
            sequence_id = resolve_sequence(name)
            if db.session.get(Sequence, sequence_id) is not None:
                self._reserved.setdefault(name, deque()).extend(next_ids(sequence_id, count))

    def __call__(self, name: str) -> str:
        reserved = self._reserved.get(name)
        if reserved:
            return reserved.popleft()
        return next_ids(resolve_sequence(name))[0]


def _sequences_needed(raw_items: list[Any]) -> Counter[str]:
    """How many values each sequence will give the batch's items (ids, names, barcodes)."""
    counts: Counter[str] = Counter()
    for raw in raw_items:
        spec = find_class(raw.get("eClass", "")) if isinstance(raw, dict) and isinstance(
            raw.get("eClass"), str) else None
        if spec is None:
            continue
        raw_id = raw.get("id")
        match = ID_PATTERN.match(raw_id) if isinstance(raw_id, str) else None
        if raw_id is None or (match and raw_id[:1] in "#!"):
            counts[(match["seq"] if match else None) or spec.name] += 1
        for key in DRAWABLE_FIELDS:
            value = raw.get(key)
            drawn = SEQUENCE_VALUE.match(value) if isinstance(value, str) else None
            if drawn:
                counts[drawn["seq"]] += 1
    return counts


def _class_of(index: int, item: Any) -> ClassSpec:
    if not isinstance(item, dict):
        raise item_error(index, "_item", "expected an object", BatchInputError)
    eclass = item.get("eClass")
    if not isinstance(eclass, str):
        raise item_error(index, "eClass", "required, a class name", BatchInputError)
    spec = find_class(eclass)
    if spec is None:
        raise item_error(index, "eClass", f"unknown class {eclass!r}", BatchInputError)
    return spec


def read_items(raw_items: Any, notation: bool = True) -> list[BatchItem]:
    """Classes and ids of every item, with ``#variables`` and ``!sequences`` applied.

    With ``notation`` False (forms, uploads, clones) every value is taken literally: a name
    such as ``#1 plate`` or ``!important`` is just a name; ids are generated when absent.
    """
    if not isinstance(raw_items, list) or not raw_items:
        raise BatchInputError("entities must be a non-empty array.",
                              errors=[{"field": "entities", "message": "non-empty array"}])
    if len(raw_items) > MAX_BATCH:
        raise BatchInputError(f"At most {MAX_BATCH} entities per request.")
    draw = Drawer()
    if notation:
        draw.reserve(_sequences_needed(raw_items))
    items = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_items):
        spec = _class_of(index, raw)
        entity_id, variable, generated = decide_id(index, spec, raw.get("id"), draw, notation)
        if len(entity_id) > 64:
            raise item_error(index, "id", "longer than 64 characters", BatchInputError)
        if entity_id in seen:
            raise Conflict(f"entities[{index}].id: {entity_id!r} appears twice in the batch "
                           f"(also entities[{seen[entity_id]}]).", code="duplicate_id",
                           item=index)
        seen[entity_id] = index
        values = {key: value for key, value in raw.items() if key not in {"id"}}
        items.append(BatchItem(index, spec, entity_id, values, variable, generated))
    if notation:
        Resolver(items, draw).resolve_batch(items)
    return items


def load_existing(items: list[BatchItem]) -> dict[str, Entity]:
    """The stored entities among the batch's ids (one query per class)."""
    ids = [item.id for item in items]
    found: dict[str, Entity] = {}
    for start in range(0, len(ids), 1000):
        chunk = ids[start:start + 1000]
        for entity in db.session.scalars(select(Entity).where(Entity.id.in_(chunk))):
            found[entity.id] = entity
    return found


def _coerce_field(index: int, spec: FieldSpec, value: Any) -> Any:
    try:
        return coerce(spec, value)
    except FieldValueError as exc:
        raise item_error(index, spec.name, str(exc), BatchInputError) from None


def prepare(item: BatchItem, existing: Entity | None) -> PreparedItem:
    """Check every property of an item against its class and type its values."""
    prepared = PreparedItem(item.index, item.spec, item.id, item.generated, existing=existing)
    if existing is not None and existing.eclass != item.spec.name:
        raise item_error(item.index, "eClass", f"{item.id!r} is a {existing.eclass}; the class "
                                               "of an entity cannot change", BatchInputError)
    for key, value in item.values.items():
        if key.lower() == "version":
            prepared.version = _coerce_version(item.index, value)
        elif key in IGNORED_ON_WRITE or (key == "files" and existing is not None):
            continue
        elif key.startswith("attributes."):
            attribute = key.split(".", 1)[1]
            if not attribute:
                raise item_error(item.index, key, "an attribute needs a name",
                                 BatchInputError)
            prepared.attribute_keys[attribute] = value
        elif key in item.spec.create_only:
            if existing is not None:
                raise item_error(item.index, key, "can only be given when the entity is "
                                                  "created", BatchInputError)
            prepared.extras[key] = value
        else:
            _set_field(prepared, item, key, value)
    return prepared


def _set_field(prepared: PreparedItem, item: BatchItem, key: str, value: Any) -> None:
    spec = item.spec.field(key)
    if spec is None or spec.attr is None:
        raise item_error(item.index, key, f"unknown property of {item.spec.name}",
                         BatchInputError)
    if spec.read_only:
        return
    if spec.name == "attributes":
        if value is not None and not isinstance(value, dict):
            raise item_error(item.index, key, "expected an object", BatchInputError)
        prepared.attributes = value or {}
        return
    if spec.name == "id":
        return
    prepared.values[spec.name] = _coerce_field(item.index, spec, value)


def _coerce_version(index: int, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise item_error(index, "version", "expected a positive whole number", BatchInputError)
    return value
