"""E-mail: the outbox, messages built with the standard library, delivery with retries.

Alert e-mails are queued in ``mail_outbox`` in the transaction that decided to send them,
and delivered afterwards by :func:`deliver` (the worker and ``flask alerts run``): a worker
claims a due message by moving its next attempt on (a conditional UPDATE only one worker
wins), sends it with :mod:`smtplib` outside any transaction, and records the outcome. A
failure backs off exponentially (1, 2, 4 … minutes, at most :data:`MAX_DELAY`); after
:data:`MAX_ATTEMPTS` the message stays in the outbox as given up, shown on the outbox page
(to ADMIN, and to the owners of the rules it tells of).

No text reaches a header as it was typed: the subject is :func:`header_text` (control and
line-separator characters become spaces) when queued and again when composed, so rows
queued before that rule are safe too, and the e-mail library encodes what is left. A
message that still cannot be composed (an address that is not one) is given up at once
with its reason, never tried again; whatever one message raises, :func:`deliver` goes on
with the next. Without ``LABAPP_SMTP_URL`` e-mail is off: nothing is queued.
"""
from __future__ import annotations

import logging
import smtplib
import ssl
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.errors import MessageError
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any
from urllib.parse import unquote, urlsplit

from sqlalchemy import ColumnElement, exists, func, insert, select, true, update

from labapp.db import db, rows_matched, table_of, transaction
from labapp.model import AlertRule, MailMessage, MailMessageRule

MAX_ATTEMPTS = 8
FIRST_DELAY = timedelta(minutes=1)
MAX_DELAY = timedelta(hours=6)
LEASE = timedelta(minutes=5)  # how long a claimed message is left to the worker sending it
BATCH = 50
TIMEOUT = 30.0  # seconds an SMTP conversation may stall
SUBJECT_LENGTH = 255  # characters of a subject kept (the outbox's column)
ERROR_LENGTH = 2000  # characters of an error kept
logger = logging.getLogger(__name__)


class Unsendable(Exception):
    """A message that cannot be sent as it is (its recipient is not an address, a header
    cannot be built): given up at once, never tried again."""


def header_text(text: str) -> str:
    """``text`` as it may stand in a header: each control, format or line-separator
    character (CR, LF, tab, NUL, U+2028 …) a space, runs of spaces one, no space around."""
    plain = "".join(" " if unicodedata.category(char)[0] == "C"
                    or unicodedata.category(char) in ("Zl", "Zp") else char for char in text)
    return " ".join(plain.split())


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
          now: datetime, rule_ids: Iterable[str] = ()) -> int:
    """Add a message to the outbox in the current transaction, due at once, linked to the
    alert rules it tells of; its id."""
    message_id: int = db.session.execute(insert(table_of(MailMessage)).values(
        recipient=recipient, user_id=user_id, subject=header_text(subject)[:SUBJECT_LENGTH],
        body_text=text, body_html=html, attempts=0, next_attempt_utc=now, created_utc=now)
        .returning(table_of(MailMessage).c.id)).scalar_one()
    links = [{"message_id": message_id, "rule_id": rule_id} for rule_id in sorted(set(rule_ids))]
    if links:
        db.session.execute(insert(table_of(MailMessageRule)), links)
    return message_id


def recipient_address(text: str) -> Address:
    """``text`` as the one address a message goes to (Unsendable when it is not one, or
    holds a character that would break the header)."""
    if header_text(text) != text:
        raise Unsendable(f"the recipient {text!r} holds a control character or spaces")
    try:
        address = Address(addr_spec=text)
    except (ValueError, LookupError, MessageError) as error:
        raise Unsendable(f"the recipient {text!r} is not an e-mail address: {error}") from None
    if not address.username or not address.domain:
        raise Unsendable(f"the recipient {text!r} is not an e-mail address")
    return address


def compose(settings: MailSettings, message: MailMessage) -> EmailMessage:
    """The message as sent: plain text with an HTML alternative. Every header is built from
    checked or cleaned text; Unsendable when the message cannot be built at all."""
    mail = EmailMessage()
    try:
        mail["Subject"] = header_text(message.subject)
        mail["From"] = header_text(settings.sender)  # LABAPP_MAIL_FROM: "Lab <lab@…>" too
        mail["To"] = recipient_address(message.recipient)
        mail["Date"] = formatdate(localtime=False, usegmt=True)
        mail["Message-ID"] = make_msgid(idstring=f"labapp-{message.id}")
        mail.set_content(message.body_text)
        mail.add_alternative(message.body_html, subtype="html")
    except (ValueError, TypeError, LookupError, MessageError) as error:
        raise Unsendable(f"{type(error).__name__}: {error}") from None
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
                                  MailMessage.given_up_utc.is_(None),
                                  MailMessage.attempts < MAX_ATTEMPTS,
                                  MailMessage.next_attempt_utc <= now)
        .order_by(MailMessage.next_attempt_utc, MailMessage.id).limit(BATCH)))


def _claim(message: MailMessage, now: datetime) -> bool:
    """Take a due message for this worker: only one conditional UPDATE wins it."""
    return rows_matched(update(MailMessage).where(
        MailMessage.id == message.id, MailMessage.sent_utc.is_(None),
        MailMessage.next_attempt_utc == message.next_attempt_utc)
        .values(next_attempt_utc=now + LEASE)) == 1


def _record(message_id: int, **values: Any) -> None:
    with transaction():
        db.session.execute(update(MailMessage).where(MailMessage.id == message_id)
                           .values(**values))


def _deliver_one(settings: MailSettings, message: MailMessage, now: datetime,
                 done: Delivery) -> None:
    """Compose and send one claimed message and record what became of it: sent; given up
    at once when it cannot be composed; else (whatever sending raised) tried again after
    :func:`backoff`, given up after the last attempt."""
    attempts = message.attempts + 1
    try:
        mail = compose(settings, message)
    except Unsendable as error:
        text = f"Cannot be sent, not tried again: {error}"[:ERROR_LENGTH]
        _record(message.id, last_error=text, given_up_utc=now)
        done.failed += 1
        done.errors.append(f"message {message.id}: {text}")
        return
    try:
        send(settings, mail)
    except Exception as error:  # any failure of one message is that message's alone
        if not isinstance(error, OSError | smtplib.SMTPException):
            logger.exception("e-mail %s: sending failed unexpectedly", message.id)
        text = f"{type(error).__name__}: {error}"[:ERROR_LENGTH]
        _record(message.id, attempts=attempts, last_error=text,
                next_attempt_utc=now + backoff(attempts),
                given_up_utc=now if attempts >= MAX_ATTEMPTS else None)
        done.failed += 1
        done.errors.append(f"{message.recipient}: {text}")
        return
    _record(message.id, attempts=attempts, sent_utc=now, last_error=None)
    done.sent += 1


def deliver(settings: MailSettings, now: datetime) -> Delivery:
    """Send the due messages of the outbox; failures are kept with their error and tried
    again after :func:`backoff`, a message that cannot be composed is given up at once. One
    message's failure never stops the others."""
    done = Delivery()
    if not settings.enabled:
        return done
    with transaction():
        claimed = [message for message in _due(now) if _claim(message, now)]
    for message in claimed:
        _deliver_one(settings, message, now, done)
    return done


def told_by(owner_id: str | None = None, rule_id: str | None = None) -> ColumnElement[bool]:
    """SQL predicate: the messages telling of a rule of ``owner_id``, or of ``rule_id``
    (neither: every message, the administrators' view)."""
    links = select(MailMessageRule.message_id).where(
        MailMessageRule.message_id == MailMessage.id)
    if rule_id is not None:
        return exists(links.where(MailMessageRule.rule_id == rule_id))
    if owner_id is not None:
        return exists(links.join(AlertRule, AlertRule.id == MailMessageRule.rule_id)
                      .where(AlertRule.owner_id == owner_id))
    return true()


def outbox(limit: int = 200, shown: ColumnElement[bool] | None = None,
           unsent_only: bool = False) -> list[MailMessage]:
    """The outbox page's messages (those of ``shown``, :func:`told_by`): unsent messages
    first (failed ones on top), then the latest sent."""
    query = select(MailMessage).where(true() if shown is None else shown)
    if unsent_only:
        query = query.where(MailMessage.sent_utc.is_(None), MailMessage.last_error.is_not(None))
    return list(db.session.scalars(
        query.order_by(MailMessage.sent_utc.is_not(None), MailMessage.last_error.is_(None),
                       MailMessage.created_utc.desc(), MailMessage.id.desc()).limit(limit)))


def counts(shown: ColumnElement[bool] | None = None) -> dict[str, int]:
    """``{waiting, failed, sent}`` of the messages of ``shown``: not yet sent (without or
    with a last error, given up or not) and sent."""
    rows = db.session.execute(select(MailMessage.sent_utc.is_not(None),
                                     MailMessage.last_error.is_not(None), func.count())
                              .where(true() if shown is None else shown)
                              .group_by(MailMessage.sent_utc.is_not(None),
                                        MailMessage.last_error.is_not(None))).all()
    found = {"waiting": 0, "failed": 0, "sent": 0}
    for sent, failed, count in rows:
        found["sent" if sent else "failed" if failed else "waiting"] += count
    return found
