"""Request and response bodies of the authentication endpoints."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from labapp.auth.second_factor import MAX_CODE_LENGTH
from labapp.auth.secrets import MIN_PASSWORD_LENGTH
from labapp.schemafields import UtcTimestamp
from labapp.users.schemas import UserSchema


class LoginSchema(Schema):
    username = fields.String(required=True,
                             validate=validate.Length(min=1, max=255))
    password = fields.String(required=True, validate=validate.Length(min=1, max=1024))
    keepAlive = fields.Boolean(load_default=False)
    code = fields.String(load_default=None, validate=validate.Length(min=1, max=MAX_CODE_LENGTH),
                         metadata={"description": "for an account with a second factor: the "
                                                  "current code of its authenticator app, or "
                                                  "one of its recovery codes"})


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


class RateLimitBudgetSchema(Schema):
    """One rate-limit bucket the calling credential is counted in, after this request."""

    name = fields.String(attribute="policy.name", metadata={
        "description": "`token` (this personal access token, or this login's Bearer "
                       "tokens), `user` (all of the caller's credentials) or `address`"})
    quota = fields.Integer(attribute="policy.quota",
                           metadata={"description": "requests per window"})
    windowSeconds = fields.Integer(attribute="policy.window")
    remaining = fields.Integer(metadata={"description": "requests that may be sent now"})
    resetSeconds = fields.Integer(attribute="reset", metadata={
        "description": "seconds until the bucket is full again (when none remain: until "
                       "one more request fits)"})


class RateLimitSchema(Schema):
    """The caller's rate limits: as the RateLimit headers say, in JSON."""

    policies = fields.List(fields.Nested(RateLimitBudgetSchema), metadata={
        "description": "empty when no limit applies (every limit set to 0)"})


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


# The furthest a listing of sign-ins skips: beyond any table, within every database's OFFSET.
MAX_SKIP = 2**31 - 1


class SignInQuerySchema(Schema):
    user = fields.String(load_default=None, validate=validate.Length(min=1, max=255),
                         metadata={"description": "only the events of this account or "
                                                  "username"})
    succeeded = fields.Boolean(load_default=None, metadata={"description": "only successes "
                                                                           "(true) or failures "
                                                                           "(false)"})
    skip = fields.Integer(data_key="$skip", load_default=0,
                          validate=validate.Range(min=0, max=MAX_SKIP),
                          metadata={"description": "how many of the newest events to leave out"})
    top = fields.Integer(data_key="$top", load_default=50,
                         validate=validate.Range(min=1, max=500),
                         metadata={"description": "how many events to list"})


class SignInEventSchema(Schema):
    atUtc = UtcTimestamp(attribute="at_utc")
    username = fields.String(metadata={"description": "what was typed, or the directory's "
                                                      "name"})
    userID = fields.String(attribute="user_id", allow_none=True,
                           metadata={"description": "the account it resolved to, if any"})
    method = fields.String(metadata={"description": "password, basic, totp, recovery_code, "
                                                    "ldap, oidc"})
    provider = fields.String(allow_none=True)
    address = fields.String(metadata={"description": "the client address"})
    succeeded = fields.Boolean()
    reason = fields.String(allow_none=True, metadata={"description": "why it failed, or "
                                                                     "which step follows"})


class SignInPageSchema(Schema):
    items = fields.List(fields.Nested(SignInEventSchema))
    count = fields.Integer(metadata={"description": "how many events match in all"})
