"""How a user is shown through the API (never a secret)."""
from __future__ import annotations

from marshmallow import Schema, fields

from labapp.schemafields import UtcDateTime


class UserSchema(Schema):
    """A user as ``GET /api/auth/user`` and the user endpoints answer it."""

    id = fields.String(required=True)
    name = fields.String()
    email = fields.String(allow_none=True)
    initials = fields.String(allow_none=True)
    departmentID = fields.String(attribute="department_id", allow_none=True)
    isActive = fields.Boolean(attribute="is_active")
    roles = fields.List(fields.String())
    lastLoginUtc = UtcDateTime(attribute="last_login_utc", allow_none=True)
    settings = fields.Dict()
