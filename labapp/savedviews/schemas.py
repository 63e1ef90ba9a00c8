"""Bodies of ``/api/saved-view``: a saved view and its shares (the dashboards' share lists)."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from labapp.schemafields import SharedInputSchema, SharedSchema

MAX_COLUMNS = 40


class SavedViewInputSchema(SharedInputSchema):
    """``POST``/``PUT /api/saved-view``: a full saved view, which may be one as read
    (:class:`SharedInputSchema`: ``id``, ``userID`` and the read-only fields ignored)."""

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


class SavedViewSchema(SharedSchema):
    """A saved view as the API shows it."""

    name = fields.String(required=True)
    eClass = fields.String(required=True)
    filter = fields.String(allow_none=True)
    columns = fields.List(fields.String(), required=True)
    orderby = fields.String(allow_none=True)


class SavedViewQuerySchema(Schema):
    eClass = fields.String(load_default=None, validate=validate.Length(min=1, max=32),
                           metadata={"description": "only the views of this class"})
