"""Sign-in events: every attempt to sign in, successful or not, for administrators to read.

:func:`record` is the one way in, for every method (local passwords, second factors, and
the directory and OpenID Connect sign-ins): call it inside the unit of work that also
records the outcome (the login, or the failed attempt), so the event commits with it. The
password or code tried is never passed, let alone stored. Attempts refused by throttling are
not recorded: they cost nothing to make, and a write for each would turn a flood of them
into a flood of writes.

Events older than ``SIGN_IN_LOG_RETENTION_DAYS`` are removed by the worker (:func:`upkeep`),
oldest first, a chunk per write unit.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import ColumnElement, delete, func, or_, select

from labapp.db import db, rows_matched, transaction
from labapp.model import SignInEvent
from labapp.model.types import utc_now

# The widths of the columns: longer values are stored cut.
_WIDTHS = {"username": 255, "user_id": 64, "method": 40, "provider": 80, "address": 64,
           "reason": 80}
PASSWORD = "password"
BASIC = "basic"
LDAP = "ldap"  # a password the directory checked
# Events removed per write unit: SQLite's write lock is held for one chunk only.
CHUNK = 5_000


def _cut(value: str | None, field: str) -> str | None:
    return value[:_WIDTHS[field]] if value is not None else None


def record(username: str, user_id: str | None, method: str, provider: str | None,
           address: str, succeeded: bool, reason: str | None = None) -> None:
    """Add one sign-in event (flushed, not committed).

    ``username`` is what was typed (or the directory's name), ``user_id`` the account it
    resolved to when one did; ``method`` says what was checked (``password``, ``basic``,
    ``totp``, ``recovery_code``, ``ldap``, ``oidc``) and ``provider`` which OpenID Connect
    provider or directory, when several can be; ``reason`` a short code for a failure (or
    for a success that still waits for a second step).
    """
    db.session.add(SignInEvent(
        at_utc=utc_now(), username=_cut(username, "username") or "",
        user_id=_cut(user_id, "user_id"), method=_cut(method, "method") or "",
        provider=_cut(provider, "provider"), address=_cut(address, "address") or "",
        succeeded=succeeded, reason=_cut(reason, "reason")))
    db.session.flush()


@dataclass(frozen=True)
class Page:
    events: list[SignInEvent]
    total: int


def list_events(*, user: str | None = None, succeeded: bool | None = None, skip: int = 0,
                top: int = 50) -> Page:
    """Events newest first, optionally of one user (the account, or the username typed) and
    of one outcome; ``top`` of them after ``skip``, with how many match in all."""
    conditions: list[ColumnElement[bool]] = []
    if user is not None:
        conditions.append(or_(SignInEvent.user_id == user, SignInEvent.username == user))
    if succeeded is not None:
        conditions.append(SignInEvent.succeeded.is_(succeeded))
    events = db.session.scalars(
        select(SignInEvent).where(*conditions)
        .order_by(SignInEvent.at_utc.desc(), SignInEvent.id.desc())
        .offset(skip).limit(top)).all()
    total = db.session.scalar(select(func.count()).select_from(SignInEvent)
                              .where(*conditions)) or 0
    return Page(list(events), total)


def remove_expired(days: int, now: datetime | None = None) -> int:
    """Remove the oldest chunk of the events older than ``days`` days before ``now``
    (default: the present); returns how many went."""
    cutoff = (now or utc_now()) - timedelta(days=days)
    with transaction(write=True):
        oldest = (select(SignInEvent.id).where(SignInEvent.at_utc < cutoff)
                  .order_by(SignInEvent.at_utc, SignInEvent.id).limit(CHUNK))
        return rows_matched(delete(SignInEvent).where(SignInEvent.id.in_(oldest)))


def upkeep() -> bool:
    """The worker's job: one chunk past ``SIGN_IN_LOG_RETENTION_DAYS`` (0 keeps every
    event); whether it removed any."""
    days = current_app.config["LABAPP"]["SIGN_IN_LOG_RETENTION_DAYS"]
    return bool(days) and remove_expired(days) > 0
