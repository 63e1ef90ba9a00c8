"""Bodies of ``/api/alert-rule`` (decisions §16): a rule, and what matches it now."""
from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates

from labapp.model.alerts import CADENCES, CHANNELS
from labapp.reading.schemas import ENTITY_CLASS
from labapp.schemafields import (
    NoControlCharacters,
    OwnedInputSchema,
    OwnedSchema,
    SharesSchema,
    ignored_id,
)


class JsonBoolean(fields.Boolean):
    """``true`` or ``false`` only: not 0, 1 or strings, as the document says."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value


class RecipientsSchema(SharesSchema):
    """Who is told: users, every member of a department (its home users), every member of a
    project (users and departments granted access to it), every holder of a role."""


class AlertRuleInputSchema(OwnedInputSchema):
    """``POST``/``PUT /api/alert-rule``: a whole rule, which may be one as read
    (:class:`OwnedInputSchema`: ``id``, ``ownerID`` and the read-only fields ignored)."""

    ownerID = ignored_id()
    name = fields.String(required=True, validate=(validate.Length(min=1, max=255),
                                                  NoControlCharacters()),
                         metadata={"description": "no control characters (it may head an "
                                                  "e-mail)"})
    eClass = fields.String(required=True, validate=validate.Length(min=1, max=32), metadata={
        "allOf": [{"$ref": f"#/components/schemas/{ENTITY_CLASS}"}],
        "description": "the class watched (matched case-insensitively)"})
    filter = fields.String(load_default=None, allow_none=True,
                           validate=validate.Length(max=2000),
                           metadata={"description": "$filter over the class's fields; "
                                                    "relative dates allowed"})
    recipients = fields.Nested(RecipientsSchema, load_default=lambda: RecipientsSchema().load({}),
                               metadata={"description": "none named: the owner is told"})
    channels = fields.List(fields.String(validate=validate.OneOf(CHANNELS)),
                           load_default=lambda: ["bell"],
                           validate=validate.Length(min=1, max=len(CHANNELS)))
    cadence = fields.String(load_default="immediate", validate=validate.OneOf(CADENCES))
    active = JsonBoolean(load_default=True)

    @validates("channels")
    def _distinct(self, value: list[str], **_kwargs: Any) -> None:
        if len(set(value)) != len(value):
            raise ValidationError("each channel at most once")


class AlertRuleSchema(OwnedSchema):
    """An alert rule as the API shows it."""

    name = fields.String(required=True)
    eClass = fields.String(required=True)
    filter = fields.String(allow_none=True)
    recipients = fields.Nested(RecipientsSchema, required=True)
    channels = fields.List(fields.String(), required=True)
    cadence = fields.String(required=True, validate=validate.OneOf(CADENCES))
    active = fields.Boolean(required=True)
    ownerID = fields.String(required=True)


class MatchItemSchema(Schema):
    id = fields.String(required=True)
    eClass = fields.String(required=True)
    name = fields.String(allow_none=True)


class MatchesSchema(Schema):
    """``GET /api/alert-rule/{id}/matches``: what the rule matches now that the caller may
    read: how many, and the first of them by name."""

    ruleID = fields.String(required=True)
    count = fields.Integer(required=True)
    items = fields.List(fields.Nested(MatchItemSchema), required=True)
    message = fields.String(required=True, metadata={"example": "12 items match now"})


class MatchesQuerySchema(Schema):
    top = fields.Integer(load_default=20, validate=validate.Range(min=0, max=500),
                         metadata={"description": "how many of the items to list"})
