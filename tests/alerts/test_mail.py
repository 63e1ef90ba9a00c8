"""Alert e-mail through a real SMTP server (aiosmtpd, started by the test): plain text with
an HTML alternative and links; a server that refuses makes the message wait and back off
(1, 2 … minutes) with its error on the admin page, then it goes out."""
from __future__ import annotations

import email
import socket
from collections.abc import Iterator
from datetime import timedelta
from email.message import EmailMessage
from email.policy import default
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from flask import Flask
from sqlalchemy import select

from labapp.alerts.mail import MailSettings, backoff
from labapp.db import db, transaction
from labapp.model import MailMessage, User
from tests.alerts.conftest import NOW, digest_due, made, rule_body, tick
from tests.web.test_pages import page_login

BASE = "https://lab.example.org"


class Inbox:
    """An aiosmtpd handler keeping what it accepts; ``refuse`` answers DATA with that
    reply instead."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self.refuse: str | None = None

    async def handle_DATA(self, _server: Any, _session: Any, envelope: Any) -> str:
        if self.refuse:
            return self.refuse
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        message = email.message_from_bytes(envelope.content, policy=default)
        assert isinstance(message, EmailMessage)
        self.messages.append(message)
        return "250 Message accepted for delivery"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, MailSettings]]:
    """A real SMTP server on localhost, and mail settings pointing at it."""
    inbox = Inbox()
    port = _free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield inbox, MailSettings(f"smtp://127.0.0.1:{port}", "alerts@lab.example.org", BASE)
    finally:
        controller.stop()


def _with_email(app: Flask, user_id: str, address: str) -> None:
    with app.app_context(), transaction():
        db.session.get(User, user_id).email = address


def _outbox(app: Flask) -> list[MailMessage]:
    with app.app_context():
        return list(db.session.scalars(select(MailMessage).order_by(MailMessage.id)))


def test_an_alert_is_mailed_as_text_and_html(app: Flask, lab: dict[str, Any],
                                             smtp: tuple[Inbox, MailSettings]) -> None:
    inbox, settings = smtp
    _with_email(app, "alice", "alice@lab.example.org")
    made(lab["alice"], rule_body("Running low", channels=["bell", "email"]))
    report = tick(app, NOW, settings)
    assert (report.emails, report.sent, report.failed) == (1, 1, 0)
    assert inbox.envelopes == [("alerts@lab.example.org", ["alice@lab.example.org"])]
    message = inbox.messages[0]
    assert message["Subject"] == "[labapp] Running low: 1 sample"
    assert message.get_content_type() == "multipart/alternative"
    text = message.get_body(("plain",))
    html = message.get_body(("html",))
    assert text is not None and html is not None
    link = f"{BASE}/entities/Sample/{lab['low']}"
    assert "Tube low" in text.get_content() and link in text.get_content()
    assert f'href="{link}"' in html.get_content() and "Bob tube" not in html.get_content()
    assert [row.sent_utc for row in _outbox(app)] == [NOW]


def test_refused_mail_backs_off_and_is_sent_later(app: Flask, lab: dict[str, Any],
                                                  smtp: tuple[Inbox, MailSettings]) -> None:
    inbox, settings = smtp
    inbox.refuse = "451 Requested action aborted: try again later"
    _with_email(app, "alice", "alice@lab.example.org")
    made(lab["alice"], rule_body("Running low", channels=["email"]))
    first = tick(app, NOW, settings)
    assert (first.emails, first.sent, first.failed) == (1, 0, 1)
    [row] = _outbox(app)
    assert row.attempts == 1 and row.sent_utc is None and "451" in (row.last_error or "")
    assert row.next_attempt_utc == NOW + backoff(1) == NOW + timedelta(minutes=1)

    assert tick(app, NOW + timedelta(seconds=30), settings).failed == 0, "not due yet"
    second = tick(app, NOW + timedelta(minutes=1), settings)
    assert second.failed == 1
    [row] = _outbox(app)
    assert row.attempts == 2
    assert row.next_attempt_utc == NOW + timedelta(minutes=1) + timedelta(minutes=2)

    page = app.test_client()
    page_login(page, "admin", password=_admin_password())
    shown = page.get("/alerts/outbox").get_data(as_text=True)
    assert "1 failed" in shown and "451" in shown and "alice@lab.example.org" in shown

    inbox.refuse = None
    third = tick(app, NOW + timedelta(minutes=3), settings)
    assert (third.sent, third.failed) == (1, 0)
    [row] = _outbox(app)
    assert row.attempts == 3 and row.sent_utc == NOW + timedelta(minutes=3)
    assert row.last_error is None
    assert len(inbox.messages) == 1, "sent once"


def test_a_permanent_refusal_is_retried_too_and_given_up_after_the_last_attempt(
        app: Flask, lab: dict[str, Any], smtp: tuple[Inbox, MailSettings]) -> None:
    from labapp.alerts.mail import MAX_ATTEMPTS

    inbox, settings = smtp
    inbox.refuse = "554 Transaction failed"
    _with_email(app, "alice", "alice@lab.example.org")
    made(lab["alice"], rule_body(channels=["email"]))
    moment = NOW
    for attempt in range(1, MAX_ATTEMPTS + 1):
        assert tick(app, moment, settings).failed == 1
        moment += backoff(attempt)
    assert tick(app, moment + timedelta(days=1), settings).failed == 0, "given up"
    [row] = _outbox(app)
    assert row.attempts == MAX_ATTEMPTS and "554" in (row.last_error or "")


def test_without_smtp_nothing_is_queued_and_the_pages_say_so(app: Flask,
                                                             lab: dict[str, Any]) -> None:
    _with_email(app, "alice", "alice@lab.example.org")
    made(lab["alice"], rule_body(channels=["bell", "email"]))
    report = tick(app)
    assert (report.notifications, report.emails) == (1, 0)
    assert _outbox(app) == []
    page = app.test_client()
    page_login(page, "alice")
    for path in ("/alerts", "/alerts/new"):
        assert "E-mail is off" in page.get(path).get_data(as_text=True)


def _admin_password() -> str:
    from tests.conftest import ADMIN_PASSWORD
    return ADMIN_PASSWORD


def test_a_digest_lists_the_items_by_rule_in_one_message(
        app: Flask, lab: dict[str, Any], smtp: tuple[Inbox, MailSettings]) -> None:
    inbox, settings = smtp
    _with_email(app, "alice", "alice@lab.example.org")
    low = made(lab["alice"], rule_body("Low", cadence="daily", channels=["bell", "email"]))
    made(lab["alice"], rule_body("Full", filter="amount ge 40", cadence="daily",
                                 channels=["email"]))
    assert tick(app, NOW, settings).emails == 0, "collected until the digest is due"
    report = tick(app, digest_due(app, low["id"]), settings)
    assert (report.digests, report.emails, report.sent) == (2, 1, 1)
    [message] = inbox.messages
    assert message["Subject"] == "[labapp] Daily digest: 2 alert rules"
    text = message.get_body(("plain",))
    assert text is not None
    body = text.get_content()
    assert "Low — 1 sample" in body and "Full — 1 sample" in body
    assert f"{BASE}/entities/Sample/{lab['low']}" in body
    assert f"{BASE}/entities/Sample/{lab['full']}" in body
    assert "Bob tube" not in body
