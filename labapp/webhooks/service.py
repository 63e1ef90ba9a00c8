"""Webhooks as the API and the pages keep them (issue 36 §3, decisions §18).

Who reads, changes and deletes a webhook is the rule of every owned thing
(:mod:`labapp.access.owned`) for a kind never shared: its owner and ADMIN; anyone else is
answered 404, as for an id that never existed. A webhook is checked whole before anything is
written: its URL (:mod:`labapp.webhooks.addresses`), its classes and kinds, its filter (one
class named; it compiles against the class's fields). Its secret is made here and shown
once, when the webhook is made and when it is rotated; the database keeps it sealed.
A new webhook follows the change log from its current end: it is told of the changes made
after it exists.
"""
from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import select

from labapp.access.actor import Actor
from labapp.access.owned import OwnedKind
from labapp.changefeed.feed import current_cursor
from labapp.db import db
from labapp.errors import InvalidInput, NotFound
from labapp.jsonprovider import LabJSONProvider, format_utc
from labapp.model import WebhookDelivery, WebhookSubscription
from labapp.model.registry import find_class
from labapp.model.types import utc_now
from labapp.query.fields import entity_fields
from labapp.query.filter import compile_filter
from labapp.webhooks import keys
from labapp.webhooks.addresses import literal_refusal
from labapp.webhooks.settings import WebhookSettings

# The kinds of change (decisions §18); ``hidden``: the change made the entity invisible to
# the owner.
KINDS = ("create", "update", "delete", "checkin", "checkout", "move", "hidden")
PING = "webhook.ping"
DELIVERIES_SHOWN = 100

WEBHOOKS = OwnedKind("webhook", WebhookSubscription, WebhookSubscription.id,
                     WebhookSubscription.owner_id, WebhookSubscription.name, "ownerID",
                     admin_deletes=True, own_first=False)


def state_of(hook: WebhookSubscription) -> str:
    """``active``, ``failing`` (active, its last attempt failed) or ``disabled``."""
    if not hook.active:
        return "disabled"
    return "failing" if hook.failing_since is not None else "active"


def to_api(actor: Actor, hook: WebhookSubscription, secret: str | None = None
           ) -> dict[str, Any]:
    """A webhook as the API shows it; ``secret`` only in the answer that made it."""
    shown: dict[str, Any] = {
        "id": hook.id, "name": hook.name, "url": hook.url,
        "eClasses": list(hook.events.get("eClasses") or ()),
        "kinds": list(hook.events.get("kinds") or ()), "filter": hook.filter,
        "active": hook.active, "state": state_of(hook), "cursor": hook.cursor,
        "failingSince": hook.failing_since, "nextAttemptUtc": hook.next_attempt_utc,
        "disabledReason": hook.disabled_reason, **WEBHOOKS.ownership(actor, hook)}
    if secret is not None:
        shown["secret"] = secret
    return shown


def list_hooks(actor: Actor) -> list[WebhookSubscription]:
    """The webhooks the actor may see (their own; ADMIN: all), by name."""
    return WEBHOOKS.listed(actor)


def get_visible(actor: Actor, hook_id: str) -> WebhookSubscription:
    """The webhook if the actor may see it; else 404."""
    return WEBHOOKS.get_visible(actor, hook_id)


def _checked(actor: Actor, data: dict[str, Any], settings: WebhookSettings, now: datetime
             ) -> dict[str, Any]:
    """The events of a body (canonical class names); InvalidInput naming every field that
    is wrong."""
    errors = []
    refused = literal_refusal(data["url"], settings.allowed)
    if refused:
        errors.append({"field": "url", "message": refused})
    classes = []
    for name in data["eClasses"]:
        spec = find_class(name)
        if spec is None:
            errors.append({"field": "eClasses", "message": f"unknown entity class {name!r}"})
        elif spec.name not in classes:
            classes.append(spec.name)
    if data.get("filter"):
        if len(data["eClasses"]) != 1:
            errors.append({"field": "filter",
                           "message": "a filter needs exactly one class in eClasses"})
        elif classes:
            spec = find_class(classes[0])
            assert spec is not None
            try:
                compile_filter(data["filter"], entity_fields(spec), user_id=actor.user_id,
                               now=now)
            except InvalidInput as error:
                errors.append({"field": "filter", "message": error.detail})
    if errors:
        code = "invalid_filter" if any(e["field"] == "filter" for e in errors) else None
        raise InvalidInput("The webhook is not valid.", errors=errors, code=code)
    return {"eClasses": classes, "kinds": sorted(set(data["kinds"]), key=KINDS.index)}


def _apply(actor: Actor, hook: WebhookSubscription, data: dict[str, Any],
           settings: WebhookSettings, now: datetime) -> None:
    hook.events = _checked(actor, data, settings, now)
    hook.name = data["name"]
    hook.url = data["url"]
    hook.filter = data.get("filter") or None
    if data["active"] and not hook.active:  # switched on again: the pending change goes now
        hook.disabled_reason = None
        hook.failing_since = None
        hook.attempts = 0
        hook.next_attempt_utc = now if hook.pending_seq is not None else None
    hook.active = data["active"]
    hook.modified_utc = now


def create(actor: Actor, data: dict[str, Any], settings: WebhookSettings
           ) -> tuple[WebhookSubscription, str]:
    """Store a new webhook owned by the actor, following the log from its current end;
    the webhook and its secret (shown this once)."""
    now = utc_now()
    secret = keys.new_secret()
    hook = WEBHOOKS.new(actor, now, events={}, active=False, cursor=current_cursor(),
                        attempts=0, secret=keys.seal(secret, settings.sealing_key))
    _apply(actor, hook, data, settings, now)
    db.session.add(hook)
    db.session.flush()
    return hook, secret


def update(actor: Actor, hook_id: str, data: dict[str, Any], settings: WebhookSettings
           ) -> WebhookSubscription:
    """Replace a webhook's URL, events, filter, name and switch (its owner or ADMIN);
    its cursor and secret stay."""
    hook = WEBHOOKS.get_changeable(actor, hook_id)
    _apply(actor, hook, data, settings, utc_now())
    db.session.flush()
    return hook


def previous_secret_until(hook: WebhookSubscription, now: datetime | None = None
                          ) -> datetime | None:
    """Until when the secret a rotation replaced still signs beside the new one at ``now``
    (default: the present); None when it no longer does."""
    until = hook.previous_secret_until
    return until if hook.previous_secret is not None and until is not None \
        and until > (now or utc_now()) else None


def revealed_secret(actor: Actor, hook_id: str, settings: WebhookSettings) -> str:
    """The secret of a webhook the actor may change, unsealed: for the page that follows
    its making or rotation, which shows it that once."""
    return keys.unseal(WEBHOOKS.get_changeable(actor, hook_id).secret, settings.secret_keys)


def rotate_secret(actor: Actor, hook_id: str, settings: WebhookSettings
                  ) -> tuple[WebhookSubscription, str]:
    """Give a webhook a new secret (shown this once); the next attempt is signed with it,
    and with the one it replaces for ``WEBHOOK_SECRET_OVERLAP_HOURS`` (none when 0)."""
    hook = WEBHOOKS.get_changeable(actor, hook_id)
    secret = keys.new_secret()
    now = utc_now()
    if settings.secret_overlap:
        hook.previous_secret, hook.previous_secret_until = (hook.secret,
                                                            now + settings.secret_overlap)
    else:
        hook.previous_secret, hook.previous_secret_until = None, None
    hook.secret = keys.seal(secret, settings.sealing_key)
    hook.modified_utc = now
    db.session.flush()
    return hook, secret


def seal_secrets_under_current_key(settings: WebhookSettings) -> int:
    """Seal again under ``SECRET_KEY`` every webhook secret (and replaced secret still in its
    overlap) that only a fallback key opens; answer how many."""
    changed = 0
    for hook in db.session.scalars(select(WebhookSubscription)):
        for attribute in ("secret", "previous_secret"):
            stored = getattr(hook, attribute)
            anew = None if stored is None else keys.sealed_anew(stored, settings.secret_keys)
            if anew is not None:
                setattr(hook, attribute, anew)
                changed += 1
    db.session.flush()
    return changed


def delete_hook(actor: Actor, hook_id: str) -> None:
    """Delete a webhook and its delivery log (its owner or ADMIN; 404 for anyone else)."""
    WEBHOOKS.delete(actor, hook_id)


def message_body(event_type: str, timestamp: datetime, data: dict[str, Any]) -> str:
    """A message's JSON body per Standard Webhooks: ``{type, timestamp, data}``."""
    return json.dumps({"type": event_type, "timestamp": format_utc(timestamp), "data": data},
                      default=LabJSONProvider.default, separators=(",", ":"),
                      ensure_ascii=False)


def _queue(hook: WebhookSubscription, message_id: str, event_type: str, seq: int | None,
           body: str) -> WebhookDelivery:
    delivery = WebhookDelivery(subscription_id=hook.id, message_id=message_id,
                               event_type=event_type, seq=seq, body=body, status="queued",
                               attempt=1, created_utc=utc_now())
    db.session.add(delivery)
    db.session.flush()
    return delivery


def ping(actor: Actor, hook_id: str) -> WebhookDelivery:
    """Queue a ``webhook.ping`` message for the worker to send once (its owner or ADMIN),
    whether the webhook is switched on or not; the cursor does not move."""
    hook = WEBHOOKS.get_changeable(actor, hook_id)
    now = utc_now()
    body = message_body(PING, now, {"webhookID": hook.id, "message": "ping"})
    return _queue(hook, f"msg_{uuid.uuid4().hex}", PING, None, body)


def deliveries(actor: Actor, hook_id: str, top: int = DELIVERIES_SHOWN,
               before: int | None = None) -> list[WebhookDelivery]:
    """The webhook's delivery log, newest first (``before``: older than that delivery)."""
    hook = get_visible(actor, hook_id)
    query = select(WebhookDelivery).where(WebhookDelivery.subscription_id == hook.id)
    if before is not None:
        query = query.where(WebhookDelivery.id < before)
    return list(db.session.scalars(query.order_by(WebhookDelivery.id.desc()).limit(top)))


def redeliver(actor: Actor, hook_id: str, delivery_id: int) -> WebhookDelivery:
    """Queue a past message again, as it was sent and under the same ``webhook-id`` (its
    owner or ADMIN; 404 for a delivery of another webhook)."""
    hook = WEBHOOKS.get_changeable(actor, hook_id)
    past = db.session.get(WebhookDelivery, delivery_id)
    if past is None or past.subscription_id != hook.id:
        raise NotFound(f"No delivery {delivery_id!r} of webhook {hook_id!r}.")
    return _queue(hook, past.message_id, past.event_type, past.seq, past.body)


def delivery_to_api(delivery: WebhookDelivery) -> dict[str, Any]:
    """One line of the delivery log as the API shows it (the body sent is not repeated)."""
    return {"id": delivery.id, "webhookID": delivery.subscription_id,
            "messageID": delivery.message_id, "type": delivery.event_type,
            "seq": delivery.seq, "status": delivery.status, "attempt": delivery.attempt,
            "responseCode": delivery.response_code, "durationMs": delivery.duration_ms,
            "responseBody": delivery.response_body, "error": delivery.error,
            "nextAttemptUtc": delivery.next_attempt_utc, "createdUtc": delivery.created_utc,
            "attemptedUtc": delivery.attempted_utc}
