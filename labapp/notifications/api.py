"""``/api/notification``: the caller's own notifications."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from labapp.notifications import service
from labapp.notifications.schemas import (
    MarkedSchema,
    NotificationSchema,
    NotificationStatusSchema,
)
from labapp.web.endpoints import endpoint
from labapp.web.loader import current_actor
from labapp.web.units import writes

bp = Blueprint("notification_api", __name__, url_prefix="/api/notification")


@bp.get("/unread")
@endpoint("The caller's notifications not yet Read (Unread and Seen), newest first.",
          responses={200: NotificationSchema(many=True)})
def unread() -> Response:
    rows = service.unread(current_actor())
    return jsonify([service.to_api(row) for row in rows])


@bp.get("/markAllAsSeen")
@writes
@endpoint("Turn every Unread notification of the caller into Seen.",
          responses={200: MarkedSchema})
def mark_all_as_seen() -> Response:
    updated = service.mark_all_seen(current_actor())
    return jsonify({"updated": updated})


@bp.post("")
@endpoint("Set the status (Unread, Seen or Read) of one of the caller's notifications.",
          body=NotificationStatusSchema, responses={200: NotificationSchema}, problems=(404,))
def set_status(body: dict[str, Any]) -> Response:
    row = service.set_status(current_actor(), body["id"], body["status"])
    data = service.to_api(row)
    return jsonify(data)


# Ids are 32 hex digits; the length keeps the route off /unread and /markAllAsSeen.
@bp.delete("/<string(length=32):notification_id>")
@endpoint("Delete one of the caller's notifications.", responses={204: "Deleted"})
def delete(notification_id: str) -> Response:
    service.remove(current_actor(), notification_id)
    return Response(status=204)
