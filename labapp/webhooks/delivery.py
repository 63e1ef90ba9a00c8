"""Delivering webhooks: the worker's ``webhooks`` lane (:func:`upkeep`).

Order and claims
    Each subscription delivers the changes it wants one at a time, in the log's order: the
    next change is read only once the one before succeeded (at-least-once; a change that
    keeps failing holds the line until the subscription is switched off). A worker claims
    a subscription by writing a lease (``lease_token``, ``lease_until``) in a short write
    unit — of two workers, on any host, one matches the row — then sends with no
    transaction open, and writes each outcome only where the lease is still its own. Under
    one lease it delivers a burst: the changes after a success follow at once, for up to
    :data:`BURST` messages or the length of the timeout, so the lease (twice the timeout
    and a minute) outlasts the burst. A worker that dies mid-attempt leaves a lease that
    runs out; the change is then sent again (at-least-once).

What is sent
    The changes are read by :func:`labapp.changefeed.feed.read_page` as the subscription's
    owner reads them now (their actor, built as for alert recipients), entity included:
    a change to what the owner may not read is never sent. Changes outside the
    subscription's classes and kinds, or whose entity fails its filter, are passed over.
    The body of the change being delivered is made once and sent again as it was, under
    the same ``webhook-id``, by every retry.

Failures
    A failed attempt (no answer within the timeout, a refused address, an answer other than
    2xx) is retried after the backoff of :class:`WebhookSettings`; a subscription failing
    for ``WEBHOOK_DISABLE_AFTER_DAYS`` without a success, or answered ``410 Gone``, is
    switched off and its owner told (a notification). A cursor older than the change log's
    retention cannot catch up: the delivery log says which changes were lost, the owner is
    told, and the subscription follows the log from its current end.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, insert, or_, select, update

from labapp import sealing
from labapp.access.actor import Actor
from labapp.access.grant_sets import actor_for
from labapp.access.visibility import readable
from labapp.changefeed.feed import CursorExpired, FeedPage, current_cursor, read_page
from labapp.db import db, own_read, rows_matched, transaction
from labapp.model import User, WebhookDelivery, WebhookSubscription
from labapp.model.registry import find_class
from labapp.model.types import utc_now
from labapp.notifications.service import WEBHOOK, raise_for
from labapp.query.fields import entity_fields
from labapp.query.filter import compile_filter
from labapp.webhooks import keys
from labapp.webhooks.addresses import AddressRefused, target
from labapp.webhooks.sending import KEPT_BYTES, Outcome, post
from labapp.webhooks.service import message_body, previous_secret_until
from labapp.webhooks.settings import WebhookSettings

PAGE = 100  # changes read per look at a subscription's feed
CLAIMS = 20  # subscriptions looked at per run of the upkeep
BURST = 50  # messages delivered for one subscription under one lease, while they succeed
LEASE_MARGIN = timedelta(minutes=1)  # a lease outlives twice the timeout by this
KEEP_LOG = timedelta(days=30)  # delivery log lines kept this long
GONE = 410  # the receiver's "unsubscribe": the subscription is switched off
GONE_REASON = "the receiver answered 410 Gone (unsubscribe)"
logger = logging.getLogger(__name__)
# send(target_url, headers, body, timeout) → outcome; tests and the bench may pass another.
Sender = Callable[[str, dict[str, str], bytes, WebhookSettings], Outcome]


def _send(url: str, headers: dict[str, str], body: bytes, settings: WebhookSettings
          ) -> Outcome:
    """Check the URL's addresses now and POST to one of them, all within the timeout (a
    refused address, or a name that does not resolve in time, is a failed attempt that
    never left)."""
    started = time.monotonic()
    try:
        checked = target(url, settings.allowed, settings.timeout)
    except AddressRefused as error:
        return Outcome(None, int((time.monotonic() - started) * 1000), None,
                       f"refused: {error}")
    return post(checked, headers, body, settings.timeout, started)


def signed_headers(secrets: Sequence[str], message_id: str, body: bytes) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt: a signature by each secret, separated
    by a space as the standard allows (a receiver accepts the message when one matches);
    its timestamp is the real time of sending, which receivers compare with their clocks."""
    timestamp = int(time.time())
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp),
            "webhook-signature": " ".join(keys.signature(secret, message_id, timestamp, body)
                                          for secret in secrets)}


@dataclass(frozen=True)
class _Message:
    message_id: str
    event_type: str
    seq: int | None
    body: str


def upkeep(now: datetime | None = None, sender: Sender = _send) -> bool:
    """The worker's webhooks lane: send the pings and redeliveries queued by hand, then
    one attempt for each subscription that is due (at most :data:`CLAIMS`); whether there
    was any of that work. ``now`` is the clock the schedule is judged by."""
    settings = WebhookSettings.current()
    moment = now or utc_now()
    worked = False
    for delivery_id in _queued(moment, settings):
        worked = _send_queued(delivery_id, moment, settings, sender) or worked
    for hook_id in _due(moment):
        worked = _advance(hook_id, moment, settings, sender) or worked
    return worked


def purge(now: datetime | None = None) -> bool:
    """Remove delivery log lines older than :data:`KEEP_LOG` (queued ones stay)."""
    with transaction():
        removed = rows_matched(delete(WebhookDelivery).where(
            WebhookDelivery.created_utc < (now or utc_now()) - KEEP_LOG,
            WebhookDelivery.status != "queued"))
    return removed > 0


def _queued(now: datetime, settings: WebhookSettings) -> list[int]:
    """The queued deliveries, oldest first; a delivery left ``sending`` by a worker that
    stopped is failed first."""
    with own_read() as session:
        stale = session.scalar(select(WebhookDelivery.id).where(
            WebhookDelivery.status == "sending",
            WebhookDelivery.attempted_utc < now - _lease(settings)).limit(1))
        queued = list(session.scalars(select(WebhookDelivery.id).where(
            WebhookDelivery.status == "queued").order_by(WebhookDelivery.id).limit(CLAIMS)))
    if stale is not None:
        with transaction():
            db.session.execute(update(WebhookDelivery).where(
                WebhookDelivery.status == "sending",
                WebhookDelivery.attempted_utc < now - _lease(settings))
                .values(status="failed", error="the worker stopped during the attempt"))
    return queued


def _lease(settings: WebhookSettings) -> timedelta:
    """How long a claim holds: a burst of attempts ends within twice the timeout."""
    return 2 * timedelta(seconds=settings.timeout) + LEASE_MARGIN


def _send_queued(delivery_id: int, now: datetime, settings: WebhookSettings,
                 sender: Sender) -> bool:
    """Claim a queued ping or redelivery (``queued`` → ``sending``) and send it once."""
    with transaction():
        if not rows_matched(update(WebhookDelivery).where(
                WebhookDelivery.id == delivery_id, WebhookDelivery.status == "queued")
                .values(status="sending", attempted_utc=now)):
            return False
        delivery = db.session.get(WebhookDelivery, delivery_id, populate_existing=True)
        assert delivery is not None
        hook = db.session.get(WebhookSubscription, delivery.subscription_id)
        assert hook is not None
        url, signing, body, hook_id = hook.url, _signing(hook, now), delivery.body, hook.id
        message_id = delivery.message_id
    outcome = _attempt(url, signing, message_id, body, settings, sender)
    with transaction():
        db.session.execute(update(WebhookDelivery).where(WebhookDelivery.id == delivery_id)
                           .values(**_outcome_values(outcome)))
        hook = db.session.get(WebhookSubscription, hook_id)
        if outcome.status == GONE and hook is not None and hook.active:
            _switch_off(hook_id, None, now, GONE_REASON)
    return True


def _signing(hook: WebhookSubscription, now: datetime) -> tuple[str, ...]:
    """The sealed secrets that sign the webhook's deliveries at ``now``: its secret, and the
    one a rotation replaced while its overlap lasts."""
    if hook.previous_secret is not None and previous_secret_until(hook, now) is not None:
        return hook.secret, hook.previous_secret
    return (hook.secret,)


def _attempt(url: str, signing: tuple[str, ...], message_id: str, body: str,
             settings: WebhookSettings, sender: Sender) -> Outcome:
    """One attempt signed with each of ``signing`` (sealed; the current secret first)."""
    try:
        current = keys.unseal(signing[0], settings.secret_keys)
    except sealing.Unreadable as error:
        return Outcome(None, 0, None, f"not sent: {error}; rotate the secret")
    opened = [current]
    for sealed in signing[1:]:
        try:
            opened.append(keys.unseal(sealed, settings.secret_keys))
        except sealing.Unreadable:
            logger.warning("a webhook's previous secret does not open; signed with its own")
    payload = body.encode()
    return sender(url, signed_headers(opened, message_id, payload), payload, settings)


def _outcome_values(outcome: Outcome) -> dict[str, Any]:
    return {"status": "succeeded" if outcome.succeeded else "failed",
            "response_code": outcome.status, "duration_ms": outcome.duration_ms,
            "response_body": outcome.body[:KEPT_BYTES] if outcome.body is not None else None,
            "error": outcome.error}


def _due(now: datetime) -> list[str]:
    """Active subscriptions not leased whose pending change is due, or with none pending
    and changes after their cursor."""
    with own_read() as session:
        end = current_cursor()
        hook = WebhookSubscription
        return list(session.scalars(select(hook.id).where(
            hook.active.is_(True),
            or_(hook.lease_until.is_(None), hook.lease_until < now),
            or_(and_(hook.pending_seq.is_not(None), hook.next_attempt_utc <= now),
                and_(hook.pending_seq.is_(None), hook.cursor < end)))
            .order_by(hook.next_attempt_utc, hook.id).limit(CLAIMS)))


def _claim(hook_id: str, now: datetime, settings: WebhookSettings) -> str | None:
    """Lease the subscription for a burst of attempts: the lease's token, or None when another
    worker holds it (or it was switched off meanwhile)."""
    token = uuid.uuid4().hex
    hook = WebhookSubscription
    with transaction():
        taken = rows_matched(update(hook).where(
            hook.id == hook_id, hook.active.is_(True),
            or_(hook.lease_until.is_(None), hook.lease_until < now))
            .values(lease_token=token, lease_until=now + _lease(settings)))
    return token if taken else None


def _mine(hook_id: str, token: str) -> Any:
    hook = WebhookSubscription
    return update(hook).where(hook.id == hook_id, hook.lease_token == token)


def _owner(hook: WebhookSubscription) -> Actor | None:
    user = db.session.get(User, hook.owner_id)
    if user is None or not user.is_active:
        return None
    return actor_for(user, method=None)


def _advance(hook_id: str, now: datetime, settings: WebhookSettings, sender: Sender) -> bool:
    """Deliver for a subscription under one lease: its pending change (or the next one it
    wants), then, while attempts succeed, the changes after it, up to :data:`BURST`
    messages and for at most the timeout's length (the lease covers twice that)."""
    token = _claim(hook_id, now, settings)
    if token is None:
        return False
    started = time.monotonic()
    burst = _Burst()
    try:
        for _ in range(BURST):
            found = _pending_or_next(hook_id, token, now, burst)
            if found is None:
                break
            message, url, signing, attempt = found
            outcome = _attempt(url, signing, message.message_id, message.body, settings,
                               sender)
            _record(hook_id, token, message, attempt, outcome, now, settings)
            if not outcome.succeeded or time.monotonic() - started > settings.timeout:
                break
        return True
    finally:
        with transaction():
            db.session.execute(_mine(hook_id, token).values(lease_token=None,
                                                            lease_until=None))


@dataclass
class _Burst:
    """What one lease's burst reads once: the owner's actor (None: no longer active), and
    the changes of the log's page read last that are still ahead of the cursor."""

    owner: Actor | None = None
    owner_read: bool = False
    ahead: list[dict[str, Any]] = field(default_factory=list)


def _pending_or_next(hook_id: str, token: str, now: datetime, burst: _Burst
                     ) -> tuple[_Message, str, tuple[str, ...], int] | None:
    """The message the subscription is delivering (if none, the next change it wants, made
    into one), with where it goes, the sealed secrets that sign it and the number of this
    attempt. None
    when nothing is due (the cursor moved past the changes it does not want)."""
    with own_read():
        hook = db.session.get(WebhookSubscription, hook_id, populate_existing=True)
        assert hook is not None
        url, signing, attempt = hook.url, _signing(hook, now), hook.attempts + 1
        if hook.pending_seq is not None and hook.pending_body is not None:
            if hook.next_attempt_utc is not None and hook.next_attempt_utc > now:
                return None
            return (_Message(hook.pending_message_id or "", hook.pending_type or "",
                             hook.pending_seq, hook.pending_body), url, signing, attempt)
        if not burst.owner_read:
            burst.owner, burst.owner_read = _owner(hook), True
        owner = burst.owner
        if owner is None:
            found: _Message | None = None
            cursor, expired = hook.cursor, None
        else:
            found, cursor, expired = _next_wanted(hook, owner, now, burst.ahead)
    if found is not None:  # stored as pending by its outcome only if it failed
        return found, url, signing, 1
    with transaction():
        if owner is None:
            _switch_off(hook_id, token, now, "its owner is no longer an active user")
        elif expired is not None:
            _lost(hook_id, token, expired, cursor, now)
        else:
            db.session.execute(_mine(hook_id, token).values(cursor=cursor))
    return None


def _next_wanted(hook: WebhookSubscription, owner: Actor, now: datetime,
                 ahead: list[dict[str, Any]]) -> tuple[_Message | None, int, str | None]:
    """The first change after the cursor the subscription wants, as a message; the cursor
    to keep (past the changes passed over); why the changes were lost, if the cursor
    expired (then the cursor is the log's end). The page is read without entities (or taken
    from ``ahead``, what is left of the page the burst read last); only the change chosen is
    read again, with its entity, and so judged as the owner may read it now."""
    try:
        rest = [change for change in ahead if change["seq"] > hook.cursor]
        page = FeedPage(rest, rest[-1]["seq"]) if rest else read_page(owner, hook.cursor, PAGE)
        ahead[:] = page.changes
        for change in page.changes:
            if _wanted(hook, owner, change, now):
                again = read_page(owner, change["seq"] - 1, 1, expand=True).changes
                if not again or again[0]["seq"] != change["seq"]:
                    return None, hook.cursor, None  # its visibility changed meanwhile
                expanded = again[0]
                kind = expanded["kind"]
                return (_Message(f"msg_{hook.id}_{expanded['seq']}", f"entity.{kind}",
                                 expanded["seq"], message_body(f"entity.{kind}",
                                                               expanded["createdUtc"],
                                                               expanded)),
                        hook.cursor, None)
    except CursorExpired as error:
        return None, current_cursor(), error.detail
    return None, page.next, None


def _wanted(hook: WebhookSubscription, owner: Actor, change: dict[str, Any],
            now: datetime) -> bool:
    """Whether the change is of the subscription's classes and kinds, and its entity (as
    the owner reads it) meets the filter. A deletion or a change that hid the entity has no
    entity to judge: it is wanted whenever its class and kind are."""
    classes, kinds = hook.events.get("eClasses") or [], hook.events.get("kinds") or []
    if (classes and change["eClass"] not in classes) or (kinds and change["kind"] not in kinds):
        return False
    if not hook.filter or change["kind"] in ("delete", "hidden"):
        return True
    spec = find_class(change["eClass"])
    if spec is None:
        return False
    condition = compile_filter(hook.filter, entity_fields(spec), user_id=hook.owner_id,
                               now=now)
    model = spec.model
    return db.session.scalar(select(model.id).where(
        model.id == change["entityID"], readable(owner, model), condition)) is not None


def _record(hook_id: str, token: str, message: _Message, attempt: int, outcome: Outcome,
            now: datetime, settings: WebhookSettings) -> None:
    """Write the attempt's line and move the subscription on: past the change when it
    succeeded; else to its next attempt, or off (410, or failing too long)."""
    with transaction():
        hook = db.session.get(WebhookSubscription, hook_id, populate_existing=True)
        if hook is None or hook.lease_token != token:
            return  # deleted, or the lease ran out and another worker took over
        line = {"subscription_id": hook_id, "message_id": message.message_id,
                "event_type": message.event_type, "seq": message.seq, "body": message.body,
                "attempt": attempt, "created_utc": now, "attempted_utc": now,
                **_outcome_values(outcome)}
        if outcome.succeeded:
            db.session.execute(insert(WebhookDelivery).values(**line))
            db.session.execute(_mine(hook_id, token).values(
                cursor=message.seq if message.seq is not None else hook.cursor,
                pending_seq=None, pending_message_id=None, pending_type=None,
                pending_body=None, attempts=0, next_attempt_utc=None, failing_since=None))
            return
        failing_since = hook.failing_since or now
        next_attempt = now + settings.backoff(attempt)
        why_off = None
        if outcome.status == GONE:
            why_off = GONE_REASON
        elif now - failing_since >= settings.disable_after:
            why_off = (f"its deliveries failed for {settings.disable_after.days} days "
                       f"(since {failing_since:%Y-%m-%d %H:%M} UTC)")
        db.session.execute(insert(WebhookDelivery).values(
            **line, next_attempt_utc=None if why_off else next_attempt))
        db.session.execute(_mine(hook_id, token).values(
            pending_seq=message.seq, pending_message_id=message.message_id,
            pending_type=message.event_type, pending_body=message.body,
            attempts=attempt, failing_since=failing_since, next_attempt_utc=next_attempt))
        if why_off:
            _switch_off(hook_id, token, now, why_off)


def _switch_off(hook_id: str, token: str | None, now: datetime, why: str) -> None:
    """Switch the subscription off (where ``token`` still holds its lease, when given) and
    tell its owner why, in the caller's unit."""
    hook = db.session.get(WebhookSubscription, hook_id)
    assert hook is not None
    where = (_mine(hook_id, token) if token is not None
             else update(WebhookSubscription).where(WebhookSubscription.id == hook_id))
    db.session.execute(where.values(active=False, disabled_reason=why, modified_utc=now))
    raise_for([hook.owner_id], WEBHOOK,
              f"Your webhook “{hook.name}” was switched off: {why}. Switch it on again "
              "once its receiver works; it goes on from the change it was delivering.",
              subject_class="Webhook", subject_id=hook_id, actor_id=None)


def _lost(hook_id: str, token: str, why: str, end: int, now: datetime) -> None:
    """The cursor expired: log it, tell the owner, and follow the log from ``end``."""
    hook = db.session.get(WebhookSubscription, hook_id)
    assert hook is not None
    text = (f"Changes after {hook.cursor} were removed before they could be delivered "
            f"({why}); delivering again from {end}.")
    db.session.execute(insert(WebhookDelivery).values(
        subscription_id=hook_id, message_id=f"msg_{hook_id}_lost_{hook.cursor}",
        event_type="cursor.expired", seq=None, body="", status="failed", attempt=0,
        error=text, created_utc=now, attempted_utc=now))
    db.session.execute(_mine(hook_id, token).values(cursor=end))
    raise_for([hook.owner_id], WEBHOOK,
              f"Your webhook “{hook.name}” missed changes: {text}",
              subject_class="Webhook", subject_id=hook_id, actor_id=None)
