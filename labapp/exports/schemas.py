"""Bodies of the export endpoints."""
from __future__ import annotations

from marshmallow import Schema, fields


class ExportResultSchema(Schema):
    """``POST /api/sync/save``: the export written."""

    filename = fields.String(required=True)
    entities = fields.Integer(required=True, metadata={"description": "Entities exported."})
    bytes = fields.Integer(required=True, metadata={"description": "Size of the file."})


class ExportInfoSchema(Schema):
    """One export of the instance's sync/ folder."""

    name = fields.String(required=True)
    size = fields.Integer(required=True, metadata={"description": "Bytes."})
    created = fields.String(required=True, metadata={"description": "ISO 8601, UTC."})
    entities = fields.Integer(required=True)
