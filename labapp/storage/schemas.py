"""Bodies and answers of the storage endpoints (for loading and for the OpenAPI document).

Item arrays are loaded by the service itself (its errors name the item's index); these
schemas document them.
"""
from __future__ import annotations

from marshmallow import INCLUDE, Schema, fields

from labapp.entities.schemas import EntityQuerySchema
from labapp.reading.schemas import ODataQuerySchema


class StoredItemSchema(Schema):
    eClass = fields.String(required=True, metadata={"description": "Sample or Plate"})
    id = fields.String(required=True)
    position = fields.String(metadata={"description": "a free slot such as 'B7' (check-in "
                                                      "into a grid location only)"})


class ItemRefSchema(Schema):
    eClass = fields.String(required=True, metadata={"description": "Sample or Plate"})
    id = fields.String(required=True)


class LocationQuerySchema(EntityQuerySchema):
    """OData query options of the location list (as the entity list)."""


class LogQuerySchema(ODataQuerySchema):
    top = fields.String(data_key="$top")
    skip = fields.String(data_key="$skip")


class LocationItemSchema(Schema):
    """A location to create or update: any Location property, as in ``POST /api/entity``
    (checked against the data model by the service)."""

    class Meta:
        unknown = INCLUDE

    eClass = fields.String(metadata={"description": "Location (the default)"})


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
