"""marshmallow fields with the wire formats of decisions §1, and the base of write bodies."""
from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Any

from marshmallow import Schema, ValidationError, fields, pre_load, validate

from labapp.jsonprovider import format_utc


class UtcTimestamp(fields.AwareDateTime):
    """A timestamp: loads ISO 8601 with an offset (converted to UTC), dumps ``...123Z``."""

    def _serialize(self, value: datetime | None, attr: Any, obj: Any, **kwargs: Any) -> str | None:
        return None if value is None else format_utc(value)

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> datetime:
        parsed = super()._deserialize(value, attr, data, **kwargs)
        try:
            return parsed.astimezone(UTC)
        except OverflowError:
            raise ValidationError("Out of range once converted to UTC.") from None


# Characters that break a header or a file name: C0/C1 controls (CR, LF, tab, NUL, DEL …),
# line and paragraph separators, and lone surrogates (no encoding can write them).
_BREAKING = frozenset({"Cc", "Cs", "Zl", "Zp"})


class NoControlCharacters(validate.Validator):
    """Refuses text holding a control character, a line or paragraph separator or a lone
    surrogate: names that can reach an e-mail header or a file name (decisions §16), where
    such a character would break it. The text is refused (400), never cleaned silently."""

    error = "must not contain control characters (line breaks, tabs, NUL …)"

    def __call__(self, value: str) -> str:
        if any(unicodedata.category(char) in _BREAKING for char in value):
            raise ValidationError(self.error)
        return value


class WriteBackSchema(Schema):
    """A write body that accepts the resource as a ``GET`` answered it (decisions §4).

    Its ``dump_only`` fields name what the server computes or maintains: the OpenAPI document
    shows them as read-only, and when a client sends them back they are dropped before
    loading. Any other unknown key is still rejected.
    """

    @pre_load
    def _ignore_read_only(self, data: Any, **_kwargs: Any) -> Any:
        if not isinstance(data, dict):
            return data
        read_only = {field.data_key or name for name, field in self.fields.items()
                     if field.dump_only}
        return {key: value for key, value in data.items() if key not in read_only}


_ID = validate.Length(min=1, max=64)


class SharesSchema(Schema):
    """Some people by the four ways the app names them: users, departments, projects and
    roles (a dashboard's or a saved view's shares, an alert rule's recipients)."""

    userIDs = fields.List(fields.String(validate=_ID), load_default=list,
                          validate=validate.Length(max=500))
    departmentIDs = fields.List(fields.String(validate=_ID), load_default=list,
                                validate=validate.Length(max=500))
    projectIDs = fields.List(fields.String(validate=_ID), load_default=list,
                             validate=validate.Length(max=500))
    userRoles = fields.List(fields.String(validate=_ID), load_default=list,
                            validate=validate.Length(max=100))


def ignored_id() -> fields.String:
    """An id a write body may send back as read, and that is ignored."""
    return fields.String(load_default=None, allow_none=True, validate=_ID,
                         metadata={"description": "ignored (read-only)"})


class OwnedInputSchema(WriteBackSchema):
    """A whole thing a user owns (a dashboard, a saved view, an alert rule) as ``POST`` and
    ``PUT`` take it, which may be what a ``GET`` answered: its ``id`` and its owner are
    ignored (the path names the thing; the owner never changes), its computed fields are
    dropped. Each kind declares its owner's field (``userID``, ``ownerID``)."""

    id = ignored_id()
    createdUtc = UtcTimestamp(dump_only=True)
    modifiedUtc = UtcTimestamp(dump_only=True)
    canWrite = fields.Boolean(dump_only=True)


class SharedInputSchema(OwnedInputSchema):
    """An owned thing that is shared (a dashboard, a saved view): owned by ``userID``, shared
    with ``shares`` (none sent: with nobody)."""

    userID = ignored_id()
    shares = fields.Nested(SharesSchema, load_default=lambda: SharesSchema().load({}))


class OwnedSchema(Schema):
    """What every answer about an owned thing holds besides its own fields."""

    id = fields.String(required=True)
    createdUtc = UtcTimestamp(required=True)
    modifiedUtc = UtcTimestamp(required=True)
    canWrite = fields.Boolean(required=True, metadata={
        "description": "whether the caller may update it (owner or ADMIN)"})


class SharedSchema(OwnedSchema):
    """An answer about a shared thing: its owner and its shares besides."""

    userID = fields.String(required=True)
    shares = fields.Nested(SharesSchema, required=True)
