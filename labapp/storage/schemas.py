"""Bodies and answers of the storage endpoints (for loading and for the OpenAPI document).

Check-in and check-out items are loaded through :class:`ItemRefSchema` and
:class:`StoredItemSchema` (by :func:`labapp.storage.checkin.read_request`, whose errors name
the item's index), so the document and the check are one statement. Location arrays are
checked by the entity batch.
"""
from __future__ import annotations

from typing import Any

from marshmallow import INCLUDE, Schema, fields, pre_load, validate

from labapp.entities.batch import MAX_BATCH
from labapp.entities.schemas import EntityQuerySchema
from labapp.model.registry import find_class
from labapp.reading.schemas import ODataQuerySchema
from labapp.storage.service import STORABLE_CLASSES
from labapp.storage.slots import POSITION

SLOT_PATTERN = rf"^{POSITION.pattern}$"
MAX_ITEMS = 10_000


class ItemRefSchema(Schema):
    eClass = fields.String(required=True, validate=validate.OneOf(STORABLE_CLASSES),
                           error_messages={"required": "required, Sample or Plate"})
    id = fields.String(required=True, validate=validate.Length(min=1, max=64),
                       error_messages={"required": "required, the id of the item"})

    @pre_load
    def _class_as_named(self, data: Any, **_kwargs: Any) -> Any:
        """Class names are case-insensitive, as everywhere: ``sample`` is ``Sample``."""
        if isinstance(data, dict) and isinstance(data.get("eClass"), str):
            spec = find_class(data["eClass"])
            if spec is not None:
                data = {**data, "eClass": spec.name}
        return data


class StoredItemSchema(ItemRefSchema):
    # Whether the slot exists is checked against the location's grid; the document states
    # the spelling (as slots.parse reads it, without surrounding spaces).
    position = fields.String(validate=validate.Regexp(r"\s*\S", error="a slot such as 'B7'"),
                             metadata={"pattern": SLOT_PATTERN,
                                       "description": "a free slot such as 'B7' (check-in "
                                                      "into a grid location only)"})


def item_array(item: type[Schema]) -> dict[str, Any]:
    """The body of a check-in or check-out: a non-empty array of items, each id once."""
    return {"type": "array", "minItems": 1, "maxItems": MAX_ITEMS, "items": item,
            "description": "each id at most once"}


class LocationQuerySchema(EntityQuerySchema):
    """OData query options of the location list (as the entity list)."""


class LogQuerySchema(ODataQuerySchema):
    top = fields.String(data_key="$top", metadata={"pattern": "^[0-9]*$"})
    skip = fields.String(data_key="$skip", metadata={"pattern": "^[0-9]*$"})


LOCATION_ARRAY = {"type": "array", "minItems": 1, "maxItems": MAX_BATCH,
                  "items": {"$ref": "#/components/schemas/EntityLocation"},
                  "description": "Locations to create or update, as in POST /api/entity "
                                 "(eClass may be left out)."}


class LocationSchema(Schema):
    """A location: every Location field plus the computed ones."""

    class Meta:
        unknown = INCLUDE

    id = fields.String()
    name = fields.String()
    hierarchy = fields.String(allow_none=True)
    checkin = fields.Integer()
    checkout = fields.Integer()
    stored = fields.Integer()
    available = fields.Integer(allow_none=True)


class LocationPageSchema(Schema):
    data = fields.List(fields.Dict())
    total = fields.Integer()
    nextSkip = fields.Integer()


class LogEntrySchema(Schema):
    id = fields.Integer()
    action = fields.String(metadata={"description": "checkin, checkout or move"})
    eClass = fields.String()
    entityID = fields.String()
    locationID = fields.String(allow_none=True)
    fromLocationID = fields.String(allow_none=True)
    position = fields.String(allow_none=True)
    userID = fields.String(allow_none=True)
    timestampUtc = fields.String()


class LogPageSchema(Schema):
    data = fields.List(fields.Nested(LogEntrySchema))
    total = fields.Integer()
    nextSkip = fields.Integer()
