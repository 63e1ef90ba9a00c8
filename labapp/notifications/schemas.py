"""Bodies of the notification endpoints."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from labapp.model.boards import NOTIFICATION_STATUSES
from labapp.schemafields import UtcTimestamp, WriteBackSchema


class NotificationSchema(Schema):
    """A notification as the API shows it (decisions §12)."""

    id = fields.String(required=True)
    userID = fields.String(required=True)
    kind = fields.String(required=True, metadata={
        "description": "AccessGiven, DashboardShared, RequestAssigned or StatusChanged"})
    subjectClass = fields.String(allow_none=True)
    subjectID = fields.String(allow_none=True)
    message = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(NOTIFICATION_STATUSES))
    createdUtc = UtcTimestamp(required=True)
    createdBy = fields.String(allow_none=True)


class NotificationStatusSchema(WriteBackSchema):
    """``POST /api/notification``: the new status of one of the caller's notifications (the
    notification as read may be sent back; only its status changes)."""

    id = fields.String(required=True, validate=validate.Length(min=1, max=64))
    status = fields.String(required=True, validate=validate.OneOf(NOTIFICATION_STATUSES))
    userID = fields.String(dump_only=True)
    kind = fields.String(dump_only=True)
    subjectClass = fields.String(dump_only=True)
    subjectID = fields.String(dump_only=True)
    message = fields.String(dump_only=True)
    createdUtc = UtcTimestamp(dump_only=True)
    createdBy = fields.String(dump_only=True)


class MarkedSchema(Schema):
    updated = fields.Integer(required=True, metadata={"description": "how many turned Seen"})
