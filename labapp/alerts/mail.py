"""E-mail: the outbox, messages built with the standard library, delivery with retries.

Alert e-mails are queued in ``mail_outbox`` in the transaction that decided to send them,
and delivered afterwards by :func:`deliver` (the worker and ``flask alerts run``): a worker
claims a due message by moving its next attempt on (a conditional UPDATE only one worker
wins), sends it with :mod:`smtplib` outside any transaction, and records the outcome. A
failure backs off exponentially (1, 2, 4 … minutes, at most :data:`MAX_DELAY`); after
:data:`MAX_ATTEMPTS` the message stays in the outbox as failed, shown on the admin page.
Without ``LABAPP_SMTP_URL`` e-mail is off: nothing is queued.
"""
from __future__ import annotations

import smtplib
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any
from urllib.parse import unquote, urlsplit

from sqlalchemy import func, insert, select, update

from labapp.db import db, rows_matched, table_of, transaction
from labapp.model import MailMessage

MAX_ATTEMPTS = 8
FIRST_DELAY = timedelta(minutes=1)
MAX_DELAY = timedelta(hours=6)
LEASE = timedelta(minutes=5)  # how long a claimed message is left to the worker sending it
BATCH = 50
TIMEOUT = 30.0  # seconds an SMTP conversation may stall


@dataclass(frozen=True)
class MailSettings:
    """``LABAPP_SMTP_URL`` (None: e-mail off), ``LABAPP_MAIL_FROM`` and
    ``LABAPP_PUBLIC_URL`` (the base of links in messages)."""

    url: str | None
    sender: str
    public_url: str

    @property
    def enabled(self) -> bool:
        return bool(self.url)

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> MailSettings:
        """The mail settings of an application's ``LABAPP`` config."""
        return cls(settings.get("SMTP_URL"), settings.get("MAIL_FROM") or "labapp@localhost",
                   settings.get("PUBLIC_URL") or "http://localhost:5000")


@dataclass
class Delivery:
    """What one :func:`deliver` did."""

    sent: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)


def backoff(attempts: int) -> timedelta:
    """How long to wait after the ``attempts``-th failure: 1, 2, 4 … minutes, at most
    :data:`MAX_DELAY`."""
    delay: timedelta = FIRST_DELAY * (2 ** max(attempts - 1, 0))
    return min(delay, MAX_DELAY)


def queue(recipient: str, user_id: str | None, subject: str, text: str, html: str,
          now: datetime) -> None:
    """Add a message to the outbox in the current transaction, due at once."""
    db.session.execute(insert(table_of(MailMessage)).values(
        recipient=recipient, user_id=user_id, subject=subject[:255], body_text=text,
        body_html=html, attempts=0, next_attempt_utc=now, created_utc=now))


def compose(settings: MailSettings, message: MailMessage) -> EmailMessage:
    """The message as sent: plain text with an HTML alternative."""
    mail = EmailMessage()
    mail["Subject"] = message.subject
    mail["From"] = settings.sender
    mail["To"] = message.recipient
    mail["Date"] = formatdate(localtime=False, usegmt=True)
    mail["Message-ID"] = make_msgid(idstring=f"labapp-{message.id}")
    mail.set_content(message.body_text)
    mail.add_alternative(message.body_html, subtype="html")
    return mail


def send(settings: MailSettings, mail: EmailMessage) -> None:
    """Send one message through ``LABAPP_SMTP_URL`` (smtplib raises what went wrong)."""
    if not settings.url:
        raise RuntimeError("e-mail is off (no LABAPP_SMTP_URL)")
    parts = urlsplit(settings.url)
    host = parts.hostname or "localhost"
    client: smtplib.SMTP
    if parts.scheme == "smtps":
        client = smtplib.SMTP_SSL(host, parts.port or 465, timeout=TIMEOUT,
                                  context=ssl.create_default_context())
    else:
        client = smtplib.SMTP(host, parts.port or 25, timeout=TIMEOUT)
    with client:
        client.ehlo()
        if parts.scheme == "smtp" and client.has_extn("starttls"):
            client.starttls(context=ssl.create_default_context())
            client.ehlo()
        if parts.username:
            client.login(unquote(parts.username), unquote(parts.password or ""))
        client.send_message(mail)


def _due(now: datetime) -> list[MailMessage]:
    return list(db.session.scalars(
        select(MailMessage).where(MailMessage.sent_utc.is_(None),
                                  MailMessage.attempts < MAX_ATTEMPTS,
                                  MailMessage.next_attempt_utc <= now)
        .order_by(MailMessage.next_attempt_utc, MailMessage.id).limit(BATCH)))


def _claim(message: MailMessage, now: datetime) -> bool:
    """Take a due message for this worker: only one conditional UPDATE wins it."""
    return rows_matched(update(MailMessage).where(
        MailMessage.id == message.id, MailMessage.sent_utc.is_(None),
        MailMessage.next_attempt_utc == message.next_attempt_utc)
        .values(next_attempt_utc=now + LEASE)) == 1


def deliver(settings: MailSettings, now: datetime) -> Delivery:
    """Send the due messages of the outbox; failures are kept with their error and tried
    again after :func:`backoff`."""
    done = Delivery()
    if not settings.enabled:
        return done
    with transaction():
        claimed = [message for message in _due(now) if _claim(message, now)]
    for message in claimed:
        try:
            send(settings, compose(settings, message))
        except (OSError, smtplib.SMTPException) as error:
            attempts = message.attempts + 1
            text = f"{type(error).__name__}: {error}"[:2000]
            with transaction():
                db.session.execute(update(MailMessage).where(MailMessage.id == message.id)
                                   .values(attempts=attempts, last_error=text,
                                           next_attempt_utc=now + backoff(attempts)))
            done.failed += 1
            done.errors.append(f"{message.recipient}: {text}")
            continue
        with transaction():
            db.session.execute(update(MailMessage).where(MailMessage.id == message.id)
                               .values(attempts=message.attempts + 1, sent_utc=now,
                                       last_error=None))
        done.sent += 1
    return done


def outbox(limit: int = 200) -> list[MailMessage]:
    """The outbox for the admin page: unsent messages first (failed ones on top), then the
    latest sent."""
    return list(db.session.scalars(
        select(MailMessage).order_by(MailMessage.sent_utc.is_not(None),
                                     MailMessage.last_error.is_(None),
                                     MailMessage.created_utc.desc(), MailMessage.id.desc())
        .limit(limit)))


def counts() -> dict[str, int]:
    """``{waiting, failed, sent}``: messages not yet sent (without or with a last error,
    given up or not) and sent."""
    rows = db.session.execute(select(MailMessage.sent_utc.is_not(None),
                                     MailMessage.last_error.is_not(None), func.count())
                              .group_by(MailMessage.sent_utc.is_not(None),
                                        MailMessage.last_error.is_not(None))).all()
    found = {"waiting": 0, "failed": 0, "sent": 0}
    for sent, failed, count in rows:
        found["sent" if sent else "failed" if failed else "waiting"] += count
    return found
