"""Bodies of ``/api/saved-view``: a saved view and its shares (the dashboards' share lists)."""
from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, post_load, validate

from labapp.schemafields import SharesSchema, UtcTimestamp, WriteBackSchema

MAX_COLUMNS = 40
_ID = validate.Length(min=1, max=64)


class SavedViewInputSchema(WriteBackSchema):
    """``POST``/``PUT /api/saved-view``: a full saved view. ``id`` and ``userID`` may be sent
    back as read; they are ignored (the path names the view, the owner never changes)."""

    id = fields.String(load_default=None, allow_none=True, validate=_ID,
                       metadata={"description": "ignored (read-only)"})
    userID = fields.String(load_default=None, allow_none=True, validate=_ID,
                           metadata={"description": "ignored (read-only)"})
    name = fields.String(required=True, validate=validate.Length(min=1, max=255))
    eClass = fields.String(required=True, validate=validate.Length(min=1, max=32),
                           metadata={"description": "the entity class listed"})
    filter = fields.String(load_default=None, allow_none=True,
                           validate=validate.Length(max=2000),
                           metadata={"description": "a $filter expression (relative dates "
                                                    "stay relative)"})
    columns = fields.List(fields.String(validate=validate.Length(min=1, max=64)),
                          load_default=list, validate=validate.Length(max=MAX_COLUMNS),
                          metadata={"description": "fields of the class or attributes.key, "
                                                   "in order; empty: the list's default"})
    orderby = fields.String(load_default=None, allow_none=True,
                            validate=validate.Length(max=255),
                            metadata={"description": "an $orderby expression"})
    shares = fields.Nested(SharesSchema, load_default=dict)
    createdUtc = UtcTimestamp(dump_only=True)
    modifiedUtc = UtcTimestamp(dump_only=True)
    canWrite = fields.Boolean(dump_only=True)

    @post_load
    def _complete(self, data: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
        if isinstance(data["shares"], dict) and not data["shares"]:
            data["shares"] = SharesSchema().load({})
        return data


class SavedViewSchema(Schema):
    """A saved view as the API shows it."""

    id = fields.String(required=True)
    name = fields.String(required=True)
    eClass = fields.String(required=True)
    filter = fields.String(allow_none=True)
    columns = fields.List(fields.String(), required=True)
    orderby = fields.String(allow_none=True)
    userID = fields.String(required=True)
    shares = fields.Nested(SharesSchema, required=True)
    createdUtc = UtcTimestamp(required=True)
    modifiedUtc = UtcTimestamp(required=True)
    canWrite = fields.Boolean(required=True, metadata={
        "description": "whether the caller may update it (owner or ADMIN)"})


class SavedViewQuerySchema(Schema):
    eClass = fields.String(load_default=None, validate=validate.Length(min=1, max=32),
                           metadata={"description": "only the views of this class"})
