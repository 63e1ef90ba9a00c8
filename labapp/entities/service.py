"""Writing entities: the ``POST /api/entity`` batch and cloning.

A batch runs inside the caller's transaction: any invalid item rejects the whole batch, with
the item's index in the error. New items are checked completely before anything is written;
updates are applied after the inserts, since they may point at an entity the batch creates.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from labapp.access.actor import Actor
from labapp.access.visibility import NONE, access_type
from labapp.db import db
from labapp.entities import attachments
from labapp.entities.audit import json_value, record_event
from labapp.entities.batch import (
    BatchInputError,
    Drawer,
    PreparedItem,
    load_existing,
    prepare,
    read_items,
)
from labapp.entities.create import NewRow, build_row, dependency_order, insert_rows
from labapp.entities.notation import item_error
from labapp.entities.references import Target, check_references, fill_subject_classes
from labapp.entities.rules import EntityChange, announce, plan_batch
from labapp.entities.update import apply_update, check_writable
from labapp.errors import Conflict, InvalidInput, NotFound
from labapp.model import Entity
from labapp.model.registry import ClassSpec
from labapp.model.types import utc_now
from labapp.reading.lookup import load_visible, to_api

NOT_CLONABLE = frozenset({"File", "User"})
# Fields a clone never copies (decisions §6): it is a new entity with its own history.
_NOT_CLONED = {"id", "barcode", "status", "createdBy", "createdUtc", "modifiedBy",
               "modifiedUtc", "version", "locationID", "position", "lastLoginUtc", "hierarchy",
               "eClass", "authSource"}


@dataclass(frozen=True)
class SaveResult:
    """The saved entities in request order (API form) and whether any was created."""

    entities: list[dict[str, Any]]
    created: bool


def _check_barcodes(items: list[PreparedItem]) -> None:
    claimed: dict[str, PreparedItem] = {}
    for item in items:
        barcode = item.values.get("barcode")
        if barcode is None:
            continue
        if barcode in claimed:
            raise item_error(item.index, "barcode", f"{barcode!r} is also given to "
                                                    f"entities[{claimed[barcode].index}]",
                             BatchInputError)
        claimed[barcode] = item
    if not claimed:
        return
    holders = db.session.execute(select(Entity.barcode, Entity.id)
                                 .where(Entity.barcode.in_(sorted(claimed)))).all()
    for barcode, holder in holders:
        if barcode is None:  # not reachable: the query asks for the claimed barcodes
            continue
        item = claimed[barcode]
        if holder != item.id:
            raise Conflict(f"entities[{item.index}]: the barcode {barcode!r} is already used.",
                           code="duplicate_barcode", item=item.index)


def _batch_targets(items: list[PreparedItem]) -> dict[str, Target]:
    return {item.id: Target(item.id, item.spec.name,
                            item.existing.department_id if item.existing else None,
                            item.existing.project_id if item.existing else None)
            for item in items}


def save_batch(actor: Actor, raw_items: Any, notation: bool = True,
               clone_of: Entity | None = None) -> SaveResult:
    """Create or update every item of a batch (see the module docstring).

    ``clone_of`` is the source of a one-item batch that copies it: references copied from
    it are not re-checked.
    """
    batch = read_items(raw_items, notation)
    existing = load_existing(batch)
    for item in batch:
        if item.generated and item.id in existing:
            raise Conflict(f"entities[{item.index}]: the generated id {item.id!r} is already "
                           "taken; raise the sequence's nextValue.", code="duplicate_id",
                           item=item.index)
        stored = existing.get(item.id)
        # Before anything else looks at it (its class, its department): hidden stays hidden.
        if stored is not None and access_type(actor, stored.eclass, stored.department_id,
                                              stored.project_id) == NONE:
            raise NotFound(f"entities[{item.index}]: no {item.spec.name} {item.id!r}.",
                           item=item.index)
    items = [prepare(item, existing.get(item.id)) for item in batch]
    if clone_of is not None:
        items[0].source = clone_of
    for prepared in items:
        if prepared.existing is not None:  # 403 for a read-only entity comes before the input
            check_writable(actor, prepared, prepared.existing)
    draw = Drawer()
    children = [child for item in items if item.is_new
                for child in attachments.expand(item, draw)]
    everything = items + children
    targets = check_references(actor, everything, _batch_targets(everything))
    fill_subject_classes([item for item in everything if item.is_new], targets)
    _check_barcodes(items)
    after_write = plan_batch(actor, everything)
    new_rows: dict[str, NewRow] = {}
    for new_item in dependency_order([item for item in everything if item.is_new]):
        new_rows[new_item.id] = build_row(actor, new_item, targets)
    if new_rows:
        try:
            insert_rows(list(new_rows.values()), actor.author_id)
        except IntegrityError as error:
            raise Conflict("An id or barcode of the batch is already taken.",
                           code="duplicate_id") from error
        for row in new_rows.values():
            values = row.api()
            announce(actor, EntityChange(
                row.item.spec.name, row.item.id, row.entity["name"], row.entity["user_id"],
                {name: (None, value) for name, value in values.items() if value is not None},
                created=True))
    # After the inserts: an update may point at an entity the batch creates.
    try:
        now = utc_now()  # one moment for the batch's updates and the storage log they make
        for prepared in items:
            if not prepared.is_new:
                apply_update(actor, prepared, now)
        db.session.flush()
    except IntegrityError as error:
        # A unique field of a lab-defined class (decisions §14) given a taken value.
        raise Conflict("A unique value of the batch is already taken.",
                       code="duplicate_value") from error
    for plan in after_write:
        plan()
    saved = [new_rows[item.id].api() if item.existing is None else to_api(item.existing)
             for item in items]
    return SaveResult(saved, bool(new_rows))


def create_stored_file(actor: Actor, *, name: str, media_type: str, sha256: str, size: int,
                       subject_id: str | None = None, file_type: str | None = None,
                       description: str | None = None) -> dict[str, Any]:
    """Create the File entity of content already in the store (``POST /api/file``).

    The digest and size come from the store, never from the client. The subject must be
    visible to the actor; the file inherits its department and project.
    """
    raw = {"eClass": "File", "name": name, "mediaType": media_type, "type": file_type,
           "description": description, "subjectID": subject_id}
    item = prepare(read_items([{k: v for k, v in raw.items() if v is not None}],
                              notation=False)[0], None)
    item.values.update(size=size, sha256=sha256)
    targets = check_references(actor, [item], _batch_targets([item]))
    subject = targets.get(subject_id) if subject_id else None
    if subject is not None:
        item.values["subjectClass"] = subject.eclass
    row = build_row(actor, item, targets)
    insert_rows([row], actor.author_id)
    return row.api()


def clone(actor: Actor, spec: ClassSpec, source_id: str,
          overrides: dict[str, Any]) -> dict[str, Any]:
    """Copy an entity into a new one of the same class (decisions §6) and return it.

    Files (whose content comes only from an upload) and users (who need their own password)
    cannot be cloned.
    """
    source = load_visible(actor, spec, source_id)
    if spec.name in NOT_CLONABLE:
        raise InvalidInput(f"{spec.name} entities cannot be cloned.", code="not_clonable")
    copied = {name: value for name, value in to_api(source, spec).items()
              if name not in _NOT_CLONED and spec.fields[name].attr is not None}
    copied["name"] = f"{source.name} (copy)"
    origin = spec.fields.get("originID")
    if origin is not None and origin.ref in {"*", spec.name}:  # Fermentation's is a Step
        copied["originID"] = source.id
    wanted_id = overrides.get("id")
    if isinstance(wanted_id, str) and db.session.get(Entity, wanted_id) is not None:
        # A clone is always a new entity: an existing id must not turn it into an update.
        raise Conflict(f"The id {wanted_id!r} is already taken.", code="duplicate_id")
    attributes = dict(source.attributes or {})
    for key, value in overrides.items():
        if key == "attributes" and isinstance(value, dict):
            attributes.update(value)
        elif key.startswith("attributes."):
            attributes[key.split(".", 1)[1]] = value
        else:
            copied[key] = value
    copied["attributes"] = {key: value for key, value in attributes.items() if value is not None}
    copied = {key: json_value(value) for key, value in copied.items()}
    result = save_batch(actor, [{"eClass": spec.name, **copied}], notation=False,
                        clone_of=source)
    created = result.entities[0]
    record_event(created["id"], "Cloned", actor.author_id, {"sourceID": source.id})
    return created
