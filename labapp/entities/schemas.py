"""Bodies of the entity endpoints. Entity items are free-form here: their fields depend on the
class and are checked against the data-model registry by the service."""
from __future__ import annotations

from marshmallow import INCLUDE, Schema, fields

from labapp.reading.schemas import ODataQuerySchema


class EntityBatchSchema(Schema):
    entities = fields.List(fields.Dict(), required=True,
                           metadata={"description": "Entities to create or update; each "
                                                    "has eClass and optionally id."})


class EntityListSchema(Schema):
    entities = fields.List(fields.Dict())


class EntityPageSchema(Schema):
    data = fields.List(fields.Dict())
    total = fields.Integer()
    nextSkip = fields.Integer()


class CloneOverridesSchema(Schema):
    """Properties to change in the copy: any of the class, checked like a batch item."""

    class Meta:
        unknown = INCLUDE

    name = fields.String(metadata={"description": "default: '<name> (copy)'"})
    attributes = fields.Dict(metadata={"description": "merged into the copied attributes; "
                                                      "attributes.<key> works too"})


class EntityQuerySchema(ODataQuerySchema):
    """OData query options of the entity list."""

    top = fields.String(data_key="$top")
    skip = fields.String(data_key="$skip")
    select = fields.String(data_key="$select")
    orderby = fields.String(data_key="$orderby")
    filter = fields.String(data_key="$filter")
