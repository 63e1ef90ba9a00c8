"""Request and response bodies of the authentication endpoints."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from labapp.auth.secrets import MIN_PASSWORD_LENGTH
from labapp.schemafields import UtcTimestamp
from labapp.users.schemas import UserSchema


class LoginSchema(Schema):
    username = fields.String(required=True,
                             validate=validate.Length(min=1, max=255))
    password = fields.String(required=True, validate=validate.Length(min=1, max=1024))
    keepAlive = fields.Boolean(load_default=False)


class TokenPairSchema(Schema):
    accessToken = fields.String(required=True)
    refreshToken = fields.String(required=True)
    expiresIn = fields.Integer(required=True, metadata={"description": "seconds"})
    tokenType = fields.String(required=True)


class RefreshSchema(Schema):
    refreshToken = fields.String(load_default=None,
                                 metadata={"description": "or the refresh cookie"})


class LogoutSchema(Schema):
    refreshToken = fields.String(load_default=None)


class ContextUserSchema(Schema):
    name = fields.String(allow_none=True)
    isAuthenticated = fields.Boolean()
    windowsAuthentication = fields.Boolean()


class AuthContextSchema(Schema):
    contextUser = fields.Nested(ContextUserSchema)
    currentUser = fields.Nested(UserSchema, allow_none=True)
    method = fields.String(allow_none=True,
                           validate=validate.OneOf(["cookie", "bearer", "pat", "basic"]))


class PatCreateSchema(Schema):
    name = fields.String(required=True, validate=validate.Length(min=1, max=255))
    expiresUtc = UtcTimestamp(load_default=None, allow_none=True)


class PatSchema(Schema):
    id = fields.String()
    name = fields.String()
    createdUtc = UtcTimestamp(attribute="created_utc")
    expiresUtc = UtcTimestamp(attribute="expires_utc", allow_none=True)
    lastUsedUtc = UtcTimestamp(attribute="last_used_utc", allow_none=True)


class CreatedPatSchema(PatSchema):
    value = fields.String(metadata={"description": "shown once, never again"})


# A new password: what the server checks of its strength, said for the document.
_NEW_PASSWORD = {"minLength": MIN_PASSWORD_LENGTH, "pattern": r"\S",
                 "description": f"at least {MIN_PASSWORD_LENGTH} characters, not blank"}


class PasswordChangeSchema(Schema):
    password = fields.String(required=True, validate=validate.Length(max=1024),
                             metadata=_NEW_PASSWORD)
    repeatPassword = fields.String(required=True, validate=validate.Length(max=1024),
                                   metadata={**_NEW_PASSWORD,
                                             "description": "the same as password"})
    confirmPassword = fields.String(required=True, validate=validate.Length(max=1024),
                                    metadata={"description": "the current password"})
