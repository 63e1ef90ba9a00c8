"""Notifications: raising them in the transaction of their cause, and the owner's inbox.

A notification belongs to one user; nobody else sees, changes or deletes it (404, as for an
id that never existed). Status moves freely between ``Unread``, ``Seen`` and ``Read``: the
bell counts ``Unread``; ``markAllAsSeen`` turns ``Unread`` into ``Seen``; the unread list
holds every notification not yet ``Read`` (docs/decisions/notifications.md).
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, func, insert, select, update

from labapp.access.actor import Actor
from labapp.db import db, rows_matched
from labapp.entities.rules import EntityChange
from labapp.errors import InvalidInput, NotFound
from labapp.grants.service import GrantGiven
from labapp.model import Notification, User
from labapp.model.boards import NOTIFICATION_STATUSES
from labapp.model.types import utc_now
from labapp.reading.wording import words_of

ACCESS_GIVEN = "AccessGiven"
ALERT = "Alert"  # raised by the alert rules' evaluation (labapp/alerts/evaluate.py)
DASHBOARD_SHARED = "DashboardShared"
REQUEST_ASSIGNED = "RequestAssigned"
STATUS_CHANGED = "StatusChanged"
WEBHOOK = "Webhook"  # a webhook switched off, or its changes lost (labapp/webhooks/delivery.py)
KINDS = (ACCESS_GIVEN, ALERT, DASHBOARD_SHARED, REQUEST_ASSIGNED, STATUS_CHANGED, WEBHOOK)
NOT_READ = ("Unread", "Seen")
LIST_LIMIT = 200


def raise_for(user_ids: Iterable[str], kind: str, message: str, *, subject_class: str | None,
              subject_id: str | None, actor_id: str | None) -> int:
    """Add an ``Unread`` notification for each of ``user_ids`` but the actor, in the current
    transaction; returns how many were added."""
    now = utc_now()
    rows = [{"id": uuid.uuid4().hex, "user_id": user_id, "kind": kind,
             "subject_class": subject_class, "subject_id": subject_id,
             "message": message[:500], "status": "Unread", "created_utc": now,
             "created_by": actor_id}
            for user_id in sorted(set(user_ids)) if user_id and user_id != actor_id]
    if rows:
        db.session.execute(insert(Notification), rows)
    return len(rows)


def on_entity_change(actor: Actor, change: EntityChange) -> None:
    """Change observer of the entity batch: a Request assigned to someone, or the status of
    an entity changed by someone other than its owner."""
    assignee = change.changes.get("assigneeID")
    if change.eclass == "Request" and assignee and assignee[1]:
        raise_for([assignee[1]], REQUEST_ASSIGNED,
                  f"{actor.name or actor.user_id} assigned you the request “{change.name}”.",
                  subject_class=change.eclass, subject_id=change.entity_id,
                  actor_id=actor.user_id)
    status = change.changes.get("status")
    if status and not change.created and change.owner_id:
        raise_for([change.owner_id], STATUS_CHANGED,
                  f"{actor.name or actor.user_id} changed the status of your {change.eclass} "
                  f"“{change.name}” from {words_of(status[0])} to {words_of(status[1])}.",
                  subject_class=change.eclass, subject_id=change.entity_id,
                  actor_id=actor.user_id)


def on_grant(given: GrantGiven) -> None:
    """Grant observer: the user given access, or every member of the department given it."""
    grantee = given.grantee
    if grantee.user_id:
        users = [grantee.user_id]
        whom = "You have"
    else:
        users = list(db.session.scalars(select(User.id).where(
            User.department_id == grantee.department_id, User.is_active.is_(True))))
        whom = f"Your department {grantee.department_id} has"
    raise_for(users, ACCESS_GIVEN,
              f"{whom} {given.access_type} access to {given.target_class.lower()} "
              f"“{given.target_name}”.",
              subject_class=given.target_class, subject_id=given.target_id,
              actor_id=given.actor_id)


def to_api(notification: Notification) -> dict[str, Any]:
    """A notification as the API shows it (decisions §12)."""
    return {"id": notification.id, "userID": notification.user_id, "kind": notification.kind,
            "subjectClass": notification.subject_class, "subjectID": notification.subject_id,
            "message": notification.message, "status": notification.status,
            "createdUtc": notification.created_utc, "createdBy": notification.created_by}


def unread(actor: Actor, limit: int = LIST_LIMIT) -> list[Notification]:
    """The actor's notifications not yet ``Read``, newest first (at most ``limit``)."""
    return list(db.session.scalars(
        select(Notification).where(Notification.user_id == actor.user_id,
                                   Notification.status.in_(NOT_READ))
        .order_by(Notification.created_utc.desc(), Notification.id).limit(limit)))


def recent(actor: Actor, limit: int = LIST_LIMIT) -> list[Notification]:
    """The actor's latest notifications of any status, newest first."""
    return list(db.session.scalars(
        select(Notification).where(Notification.user_id == actor.user_id)
        .order_by(Notification.created_utc.desc(), Notification.id).limit(limit)))


def unread_count(actor: Actor) -> int:
    """How many of the actor's notifications are ``Unread`` (the bell's number)."""
    return db.session.scalar(select(func.count()).select_from(Notification).where(
        Notification.user_id == actor.user_id, Notification.status == "Unread")) or 0


def mark_all_seen(actor: Actor) -> int:
    """Turn every ``Unread`` notification of the actor into ``Seen``; returns how many."""
    return rows_matched(
        update(Notification).where(Notification.user_id == actor.user_id,
                                   Notification.status == "Unread").values(status="Seen"))


def _own(actor: Actor, notification_id: str) -> Notification:
    notification = db.session.get(Notification, notification_id)
    if notification is None or notification.user_id != actor.user_id:
        raise NotFound(f"No notification {notification_id!r}.")
    return notification


def set_status(actor: Actor, notification_id: str, status: str) -> Notification:
    """Set the status of one of the actor's notifications (404 for anyone else's)."""
    notification = _own(actor, notification_id)
    if status not in NOTIFICATION_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(NOTIFICATION_STATUSES)}.",
                           errors=[{"field": "status",
                                    "message": " or ".join(NOTIFICATION_STATUSES)}])
    notification.status = status
    db.session.flush()
    return notification


def remove(actor: Actor, notification_id: str) -> None:
    """Delete one of the actor's notifications (404 for anyone else's)."""
    _own(actor, notification_id)
    db.session.execute(delete(Notification).where(Notification.id == notification_id))
