"""Bodies of ``/api/webhook`` (issue 36 §3, decisions §18): a webhook, its secret, its
delivery log."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from labapp.alerts.schemas import JsonBoolean
from labapp.model.webhooks import DELIVERY_STATUSES
from labapp.reading.schemas import ENTITY_CLASS
from labapp.schemafields import (
    NoControlCharacters,
    OwnedInputSchema,
    OwnedSchema,
    UtcTimestamp,
    ignored_id,
)
from labapp.webhooks.addresses import MAX_URL, URL_PATTERN
from labapp.webhooks.service import KINDS

STATES = ("active", "failing", "disabled")


class WebhookInputSchema(OwnedInputSchema):
    """``POST``/``PUT /api/webhook``: a whole webhook, which may be one as read (``id``,
    ``ownerID`` and the fields the server keeps are ignored)."""

    ownerID = ignored_id()
    name = fields.String(required=True, validate=(validate.Length(min=1, max=255),
                                                  NoControlCharacters()))
    url = fields.String(required=True, validate=(validate.Length(min=1, max=MAX_URL),
                                                 NoControlCharacters()), metadata={
        "description": "http:// or https://, no user name or password; delivered only to "
                       "public addresses unless the setting WEBHOOK_ALLOWED_NETWORKS allows "
                       "more", "example": "https://receiver.example.org/labapp",
        "pattern": URL_PATTERN})
    eClasses = fields.List(fields.String(validate=validate.Length(min=1, max=32), metadata={
        "allOf": [{"$ref": f"#/components/schemas/{ENTITY_CLASS}"}]}),
        load_default=list, validate=validate.Length(max=100),
        metadata={"description": "the classes whose changes are delivered; none: every class"})
    kinds = fields.List(fields.String(validate=validate.OneOf(KINDS)), load_default=list,
                        validate=validate.Length(max=len(KINDS)),
                        metadata={"description": "the kinds of change delivered; none: all"})
    filter = fields.String(load_default=None, allow_none=True,
                           validate=validate.Length(max=2000),
                           metadata={"description": "$filter over the fields of the one class "
                                                    "of eClasses: a change is delivered when "
                                                    "its entity meets it (deletions always)"})
    active = JsonBoolean(load_default=True)
    state = fields.String(dump_only=True)
    cursor = fields.Integer(dump_only=True)
    failingSince = UtcTimestamp(dump_only=True, allow_none=True)
    nextAttemptUtc = UtcTimestamp(dump_only=True, allow_none=True)
    disabledReason = fields.String(dump_only=True, allow_none=True)
    secret = fields.String(dump_only=True, metadata={
        "description": "ignored: a new secret is made by POST /api/webhook/{id}/secret"})


class WebhookSchema(OwnedSchema):
    """A webhook as the API shows it (its secret never, but when made or rotated)."""

    name = fields.String(required=True)
    url = fields.String(required=True)
    eClasses = fields.List(fields.String(), required=True)
    kinds = fields.List(fields.String(validate=validate.OneOf(KINDS)), required=True)
    filter = fields.String(allow_none=True, required=True)
    active = fields.Boolean(required=True)
    state = fields.String(required=True, validate=validate.OneOf(STATES), metadata={
        "description": "failing: its last attempt failed and it is retried; disabled: "
                       "switched off (by its owner, or by the worker: see disabledReason)"})
    cursor = fields.Integer(required=True, metadata={
        "description": "the change log position it has delivered up to"})
    failingSince = UtcTimestamp(required=True, allow_none=True)
    nextAttemptUtc = UtcTimestamp(required=True, allow_none=True)
    disabledReason = fields.String(required=True, allow_none=True)
    ownerID = fields.String(required=True)


class WebhookWithSecretSchema(WebhookSchema):
    """A webhook just made or given a new secret: the secret is shown this once."""

    secret = fields.String(required=True, metadata={
        "description": "whsec_ and base64: the key of the webhook-signature HMAC-SHA256 "
                       "(Standard Webhooks); shown only now"})


class DeliverySchema(Schema):
    """One line of a webhook's delivery log: an attempt, or a ping or redelivery queued."""

    id = fields.Integer(required=True)
    webhookID = fields.String(required=True)
    messageID = fields.String(required=True, metadata={
        "description": "the webhook-id header: the same for every attempt of one message"})
    type = fields.String(required=True, metadata={"example": "entity.update"})
    seq = fields.Integer(allow_none=True, required=True, metadata={
        "description": "the change delivered (none: a ping)"})
    status = fields.String(required=True, validate=validate.OneOf(DELIVERY_STATUSES))
    attempt = fields.Integer(required=True)
    responseCode = fields.Integer(allow_none=True, required=True)
    durationMs = fields.Integer(allow_none=True, required=True)
    responseBody = fields.String(allow_none=True, required=True, metadata={
        "description": "the start of the receiver's answer (at most 4 KB)"})
    error = fields.String(allow_none=True, required=True)
    nextAttemptUtc = UtcTimestamp(allow_none=True, required=True)
    createdUtc = UtcTimestamp(required=True)
    attemptedUtc = UtcTimestamp(allow_none=True, required=True)


class DeliveriesQuerySchema(Schema):
    top = fields.Integer(load_default=100, validate=validate.Range(min=1, max=500))
    before = fields.Integer(load_default=None, validate=validate.Range(min=1, max=2**62),
                            metadata={"description": "only deliveries older than this one"})
