"""Webhooks (issue 36 §3): a subscription to the change log, and the log of its deliveries.

A subscription follows the change log with a cursor of its own (``cursor``: the last change
it is done with). A change whose delivery failed waits on the subscription itself
(``pending_*``): its body, made for the first attempt, is sent again as it was by every
retry, under the same ``webhook-id``, until it succeeds; only then does the cursor move on.
A worker claims a subscription by writing ``lease_token``/``lease_until`` (a short write
unit), delivers without any transaction open, and writes each outcome where the lease is
still its own.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from labapp.db import Model
from labapp.model.types import JsonObject, UtcDateTime

DELIVERY_STATUSES = ("queued", "sending", "succeeded", "failed")


class WebhookSubscription(Model):
    """Who is told (``owner_id``: deliveries carry only what the owner may read), where
    (``url``), about what (``events``: ``{"eClasses": [...], "kinds": [...]}``, empty lists
    meaning all; ``filter``: a $filter over the one class named), signed with ``secret``
    (encrypted, :mod:`labapp.webhooks.keys`) and, after a rotation, ``previous_secret``
    beside it until ``previous_secret_until``.

    ``failing_since`` is when the first failed attempt of the current run of failures was
    made (None: the last attempt succeeded); ``disabled_reason`` says why the worker
    switched the subscription off (410 from the receiver, failing too long)."""

    __tablename__ = "webhook_subscription"
    __table_args__ = (Index("ix_webhook_subscription_due", "active", "next_attempt_utc"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    url: Mapped[str] = mapped_column(Text)
    events: Mapped[dict[str, Any]] = mapped_column(JsonObject, default=dict)
    filter: Mapped[str | None] = mapped_column(Text)
    secret: Mapped[str] = mapped_column(Text)
    previous_secret: Mapped[str | None] = mapped_column(Text)
    previous_secret_until: Mapped[datetime | None] = mapped_column(UtcDateTime)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    owner_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"), index=True)
    cursor: Mapped[int] = mapped_column(BigInteger, default=0)
    pending_seq: Mapped[int | None] = mapped_column(BigInteger)
    pending_message_id: Mapped[str | None] = mapped_column(String(64))
    pending_type: Mapped[str | None] = mapped_column(String(64))
    pending_body: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)
    failing_since: Mapped[datetime | None] = mapped_column(UtcDateTime)
    disabled_reason: Mapped[str | None] = mapped_column(Text)
    lease_token: Mapped[str | None] = mapped_column(String(32))
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime)
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    modified_utc: Mapped[datetime] = mapped_column(UtcDateTime)


class WebhookDelivery(Model):
    """One attempt to deliver a message (a change, or a ping when ``seq`` is None), or one
    queued by hand (``status`` ``queued``: a ping or a redelivery the worker sends once).

    ``response_body`` keeps at most :data:`labapp.webhooks.sending.KEPT_BYTES` of the
    answer; ``body`` is what was sent, so it can be sent again."""

    __tablename__ = "webhook_delivery"
    __table_args__ = (
        Index("ix_webhook_delivery_subscription", "subscription_id", "id"),
        Index("ix_webhook_delivery_queued", "status", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    subscription_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("webhook_subscription.id", ondelete="CASCADE"))
    message_id: Mapped[str] = mapped_column(String(64))
    event_type: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int | None] = mapped_column(BigInteger)
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    response_code: Mapped[int | None] = mapped_column(Integer)
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    response_body: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    next_attempt_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    attempted_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)
