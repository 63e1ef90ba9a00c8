"""Create-only properties that make entities of their own: ``notes``, ``files``, Step ``input``.

Each entry becomes a new item of the batch (Note, File or StepInput) whose subject or step is
the entity being created, so it is validated, audited and inserted like any other.
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from labapp.blobs import store_in_transaction
from labapp.entities.batch import BatchInputError, PreparedItem, _coerce_field
from labapp.entities.notation import item_error
from labapp.mediatypes import is_media_type
from labapp.model.registry import CLASSES

_NOTE_KEYS = {"content", "type"}
_FILE_KEYS = {"name", "content", "mediaType", "type", "description"}
_INPUT_KEYS = {"inputClass", "inputID", "inputPosition", "amount", "unit", "type", "name"}


def _entries(owner: PreparedItem, key: str, allowed: set[str]) -> list[dict[str, Any]]:
    entries = owner.extras.get(key) or []
    if not isinstance(entries, list):
        raise item_error(owner.index, key, "expected an array", BatchInputError)
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise item_error(owner.index, f"{key}.{position}", "expected an object",
                             BatchInputError)
        unknown = sorted(set(entry) - allowed)
        if unknown:
            raise item_error(owner.index, f"{key}.{position}.{unknown[0]}",
                             "unknown property", BatchInputError)
    return entries


def _child(owner: PreparedItem, class_name: str, child_id: str, field_prefix: str,
           values: dict[str, Any]) -> PreparedItem:
    spec = CLASSES[class_name]
    child = PreparedItem(owner.index, spec, child_id, True)
    for name, value in values.items():
        if value is None:
            continue
        field = spec.fields[name]
        try:
            child.values[name] = _coerce_field(owner.index, field, value)
        except BatchInputError as error:
            raise item_error(owner.index, f"{field_prefix}.{name}",
                             (error.errors or [{"message": error.detail}])[0]["message"],
                             BatchInputError) from None
    return child


def _decode(owner: PreparedItem, position: int, content: Any) -> bytes:
    if not isinstance(content, str):
        raise item_error(owner.index, f"files.{position}.content", "expected base64 text",
                         BatchInputError)
    try:
        return base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError):
        raise item_error(owner.index, f"files.{position}.content", "is not valid base64",
                         BatchInputError) from None


def expand(owner: PreparedItem, draw: Callable[[str], str]) -> list[PreparedItem]:
    """The Note, File and StepInput items an item's create-only properties ask for."""
    children: list[PreparedItem] = []
    subject = {"subjectClass": owner.spec.name, "subjectID": owner.id}
    for position, note in enumerate(_entries(owner, "notes", _NOTE_KEYS)):
        if not isinstance(note.get("content"), str):
            raise item_error(owner.index, f"notes.{position}.content", "required text",
                             BatchInputError)
        children.append(_child(owner, "Note", draw("Note"), f"notes.{position}",
                               {**subject, "content": note["content"],
                                "type": note.get("type")}))
    for position, entry in enumerate(_entries(owner, "files", _FILE_KEYS)):
        if not isinstance(entry.get("name"), str) or not entry["name"]:
            raise item_error(owner.index, f"files.{position}.name", "required",
                             BatchInputError)
        media_type = entry.get("mediaType") or "application/octet-stream"
        if not isinstance(media_type, str) or not is_media_type(media_type):
            raise item_error(owner.index, f"files.{position}.mediaType",
                             "expected a media type such as text/csv", BatchInputError)
        # Kept if the batch commits, taken out of the store again if it rolls back.
        blob = store_in_transaction(_decode(owner, position, entry.get("content")))
        children.append(_child(owner, "File", draw("File"), f"files.{position}", {
            **subject, "name": entry["name"], "type": entry.get("type"),
            "description": entry.get("description"),
            "mediaType": media_type,
            "size": blob.size, "sha256": blob.sha256}))
    if owner.spec.name == "Step":
        for position, entry in enumerate(_entries(owner, "input", _INPUT_KEYS)):
            if not isinstance(entry.get("inputID"), str):
                raise item_error(owner.index, f"input.{position}.inputID", "required",
                                 BatchInputError)
            children.append(_child(owner, "StepInput", draw("StepInput"), f"input.{position}",
                                   {"stepID": owner.id, "inputPosition": position + 1,
                                    **entry}))
    return children
