"""Alert rules (issue 23): a rule, the items it currently matches, and the e-mail outbox.

An item alerts when it starts to match a rule: the evaluation inserts its ``alert_state`` row,
and only the transaction whose insert went in (``ON CONFLICT DO NOTHING``; the primary key is
the unique ``(rule_id, entity_id)``) tells anyone, so two workers never alert twice. The row
goes when the item stops matching, so it may alert again later.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, CheckConstraint, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from labapp.db import Model
from labapp.model.types import JsonObject, UtcDateTime

CADENCES = ("immediate", "daily", "weekly")
CHANNELS = ("bell", "email")


class AlertRule(Model):
    """Who is told (``recipients``: the API's four lists), how (``channels``) and how often
    at most (``cadence``) about the items of ``eclass`` matching ``filter`` ($filter).

    ``digest_due_utc`` is when a daily or weekly rule next sends its digest (None for
    ``immediate``); the worker that moves it on is the one that sends it."""

    __tablename__ = "alert_rule"
    __table_args__ = (
        CheckConstraint("cadence IN ('immediate', 'daily', 'weekly')", name="cadence"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    eclass: Mapped[str] = mapped_column(String(32))
    filter: Mapped[str | None] = mapped_column(Text)
    recipients: Mapped[dict[str, Any]] = mapped_column(JsonObject, default=dict)
    channels: Mapped[list[Any]] = mapped_column(JsonObject, default=list)
    cadence: Mapped[str] = mapped_column(String(16), default="immediate")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    owner_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("app_user.id", ondelete="CASCADE"), index=True)
    digest_due_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    modified_utc: Mapped[datetime] = mapped_column(UtcDateTime)


class AlertState(Model):
    """An item that matches a rule now: since when, and when it was told (None: waiting for
    its rule's digest)."""

    __tablename__ = "alert_state"

    rule_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("alert_rule.id", ondelete="CASCADE"), primary_key=True)
    entity_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("entity.id", ondelete="CASCADE"), primary_key=True)
    matching_since: Mapped[datetime] = mapped_column(UtcDateTime)
    alerted_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)


class MailMessage(Model):
    """One e-mail waiting to be sent, sent, or given up on (``given_up_utc``): after its
    last attempt failed, or at once when it cannot be sent at all (it cannot be composed).

    A worker claims a due message by moving ``next_attempt_utc`` on before sending it, so
    two workers never send the same one; a failure keeps ``last_error`` and backs off."""

    __tablename__ = "mail_outbox"
    __table_args__ = (Index("ix_mail_outbox_due", "sent_utc", "next_attempt_utc"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    recipient: Mapped[str] = mapped_column(String(320))
    user_id: Mapped[str | None] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(255))
    body_text: Mapped[str] = mapped_column(Text)
    body_html: Mapped[str] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_utc: Mapped[datetime] = mapped_column(UtcDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    sent_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)
    given_up_utc: Mapped[datetime | None] = mapped_column(UtcDateTime)
    created_utc: Mapped[datetime] = mapped_column(UtcDateTime)


class MailMessageRule(Model):
    """An alert rule a message tells of (a digest tells of several): the rule's owner sees
    what became of the message (decisions §16)."""

    __tablename__ = "mail_message_rule"

    message_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("mail_outbox.id", ondelete="CASCADE"), primary_key=True)
    rule_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("alert_rule.id", ondelete="CASCADE"), primary_key=True,
        index=True)
