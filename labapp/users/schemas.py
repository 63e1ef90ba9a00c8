"""How a user is shown through the API (never a secret)."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from labapp.access.actor import BUILT_IN_ROLES
from labapp.schemafields import NoControlCharacters, UtcTimestamp, WriteBackSchema


class UserSchema(Schema):
    """A user as ``GET /api/auth/user`` and the user endpoints answer it."""

    id = fields.String(required=True)
    name = fields.String()
    email = fields.String(allow_none=True)
    initials = fields.String(allow_none=True)
    departmentID = fields.String(attribute="department_id", allow_none=True)
    isActive = fields.Boolean(attribute="is_active")
    roles = fields.List(fields.String())
    lastLoginUtc = UtcTimestamp(attribute="last_login_utc", allow_none=True)
    authSource = fields.String(attribute="auth_source", metadata={
        "description": "Where the user signs in: local, ldap or oidc:<provider> (read-only)"})
    settings = fields.Dict()


class UserUpdateSchema(WriteBackSchema):
    """``PUT /api/user``: the user to change (absent = the caller) and the new values."""

    userID = fields.String(validate=validate.Length(min=1, max=64))
    id = fields.String(validate=validate.Length(min=1, max=64))
    name = fields.String(validate=validate.Length(min=1, max=255))
    email = fields.String(allow_none=True, validate=(validate.Length(max=255),
                                                     NoControlCharacters()),
                          metadata={"description": "no control characters (it heads e-mails)"})
    initials = fields.String(allow_none=True, validate=validate.Length(max=16))
    settings = fields.Dict(keys=fields.String())
    departmentID = fields.String(validate=validate.Length(min=1, max=64))
    isActive = fields.Boolean()
    password = fields.String(validate=validate.Length(max=1024),
                             metadata={"description": "ADMIN: reset the password"})
    roles = fields.List(fields.String(), dump_only=True,
                        metadata={"description": "read-only: change with /api/userRole"})
    lastLoginUtc = UtcTimestamp(dump_only=True)
    authSource = fields.String(dump_only=True, metadata={"description": "read-only"})


class RoleSchema(Schema):
    name = fields.String()
    description = fields.String()


class RoleChangeSchema(Schema):
    name = fields.String(required=True, validate=validate.Length(min=1, max=64),
                         metadata={"enum": list(BUILT_IN_ROLES)})
    userID = fields.String(required=True, validate=validate.Length(min=1, max=64))
