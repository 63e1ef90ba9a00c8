"""Alert e-mail through a real SMTP server (aiosmtpd, started by the test): plain text with
an HTML alternative and links, naming the rule's owner and each item's expiry and place; a
server that refuses makes the message wait and back off (1, 2 … minutes) with its error on
the outbox page (ADMIN: all; a rule's owner: their rules' messages, also on the rule's
page), then it goes out; a message that cannot be composed is given up at once."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Flask
from sqlalchemy import select

from labapp.alerts.mail import MailSettings, backoff
from labapp.db import db, transaction
from labapp.model import AlertRule, MailMessage, User
from tests.alerts.conftest import (
    BASE,
    NOW,
    Inbox,
    alerts_of,
    digest_due,
    made,
    rule_body,
    said,
    tick,
)
from tests.conftest import ApiClient
from tests.entities.conftest import body_of, save
from tests.helpers.pages import page_login


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


def _store(admin: ApiClient, department_id: str, sample_id: str, *names: str) -> None:
    """Put the sample in slot A1 of the last of ``names`` (each inside the one before)."""
    created = body_of(admin.post("/api/storage/location", json=[
        {"id": f"#l{number}", "name": name, "departmentID": department_id, "rows": 2,
         "columns": 2, **({"parentID": f"#l{number - 1}"} if number else {})}
        for number, name in enumerate(names)]), 201)
    body_of(admin.post(f"/api/storage/location/{created[-1]['id']}/checkin",
                       json=[{"eClass": "Sample", "id": sample_id, "position": "A1"}]), 200)


def test_an_e_mail_names_the_owner_and_each_items_expiry_and_place(
        app: Flask, lab: dict[str, Any], admin: ApiClient,
        smtp: tuple[Inbox, MailSettings]) -> None:
    inbox, settings = smtp
    _with_email(app, "alice", "alice@lab.example.org")
    hidden = save(lab["alice"], {"eClass": "Sample", "name": "Tube elsewhere", "amount": 1.0,
                                 "expiryDate": "2026-11-20"})[0]["id"]
    body_of(lab["alice"].post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": lab["low"], "expiryDate": "2026-12-01"}]}), 200)
    _store(admin, lab["physics"], lab["low"], "Freezer -80", "Box 7")
    _store(admin, lab["chemistry"], hidden, "Chemistry secret store")
    rule = made(lab["alice"], rule_body("Running low", channels=["bell", "email"]))
    assert tick(app, NOW, settings).sent == 1
    [message] = inbox.messages
    text, html = message.get_body(("plain",)), message.get_body(("html",))
    assert text is not None and html is not None
    plain, markup = text.get_content(), html.get_content()
    assert "You are a recipient of an alert rule of Alice (alice)." in plain
    assert "Running low — 2 samples (alert rule of Alice (alice))" in plain
    assert (f"  • Tube low ({lab['low']}) · expires 2026-12-01 · Freezer -80 / Box 7 · A1: "
            f"{BASE}/entities/Sample/{lab['low']}") in plain
    # The place of an item whose location alice may not read is left out; an expiry date
    # already past is worded so.
    assert (f"  • Tube elsewhere ({hidden}) · expired 2026-11-20: "
            f"{BASE}/entities/Sample/{hidden}") in plain
    assert "secret store" not in plain and "secret store" not in markup
    assert f"{BASE}/alerts/{rule['id']}/items" in plain
    assert "Alert rule of Alice (alice)" in markup and "Freezer -80 / Box 7 · A1" in markup
    assert alerts_of(app, "alice") == [said("Running low: 2 samples")]


def test_a_stored_name_with_line_breaks_heads_a_one_line_subject(
        app: Flask, lab: dict[str, Any], smtp: tuple[Inbox, MailSettings]) -> None:
    inbox, settings = smtp
    _with_email(app, "alice", "alice@lab.example.org")
    rule = made(lab["alice"], rule_body("Running low", channels=["email"]))
    with app.app_context(), transaction():  # as stored before names were checked
        db.session.get(AlertRule, rule["id"]).name = "Low\r\nBcc: mallory@evil.example\r\n"
    report = tick(app, NOW, settings)
    assert (report.sent, report.failed) == (1, 0)
    [message] = inbox.messages
    assert message["Subject"] == "[labapp] Low Bcc: mallory@evil.example : 1 sample"
    assert message["Bcc"] is None
    assert inbox.envelopes == [("alerts@lab.example.org", ["alice@lab.example.org"])]


def test_an_address_that_breaks_a_header_is_given_up_with_its_reason(
        app: Flask, lab: dict[str, Any], member: Any,
        smtp: tuple[Inbox, MailSettings]) -> None:
    inbox, settings = smtp
    member("carol", department_id=lab["physics"])
    _with_email(app, "alice", "alice@lab.example.org")
    _with_email(app, "carol", "carol@lab.example.org\r\nBcc: mallory@evil.example")
    made(lab["alice"], rule_body("Running low", users=["alice", "carol"], channels=["email"]))
    report = tick(app, NOW, settings)
    assert (report.emails, report.sent, report.failed) == (2, 1, 1)
    given_up = {row.user_id: row for row in _outbox(app)}["carol"]
    assert given_up.given_up_utc == NOW and given_up.sent_utc is None
    assert (given_up.last_error or "").startswith("Cannot be sent, not tried again: the "
                                                  "recipient")
    assert tick(app, NOW + timedelta(hours=1), settings).failed == 0, "never tried again"
    assert [rcpts for _, rcpts in inbox.envelopes] == [["alice@lab.example.org"]]


def test_a_rules_owner_sees_its_failed_deliveries(
        app: Flask, lab: dict[str, Any], member: Any, admin: ApiClient,
        smtp: tuple[Inbox, MailSettings]) -> None:
    inbox, settings = smtp
    inbox.refuse = "550 No such mailbox here"
    member("carol", department_id=lab["physics"])
    _with_email(app, "carol", "carol@lab.example.org")
    _with_email(app, "bob", "bob@lab.example.org")
    mine = made(lab["alice"], rule_body("Alice's rule", users=["carol"], channels=["email"]))
    made(admin, rule_body("Admin's rule", users=["bob"], channels=["email"]))
    assert tick(app, NOW, settings).failed == 2

    alice = app.test_client()
    page_login(alice, "alice")
    rule_page = alice.get(f"/alerts/{mine['id']}").get_data(as_text=True)
    assert "carol@lab.example.org" in rule_page and "No such mailbox here" in rule_page
    assert "bob@lab.example.org" not in rule_page
    outbox = alice.get("/alerts/outbox")
    shown = outbox.get_data(as_text=True)
    assert outbox.status_code == 200 and "1 failed" in shown
    assert "Alice&#39;s rule" in shown and "Admin&#39;s rule" not in shown
    assert "bob@lab.example.org" not in shown

    bob = app.test_client()
    page_login(bob, "bob")
    assert bob.get(f"/alerts/{mine['id']}").status_code == 404
    theirs = bob.get("/alerts/outbox").get_data(as_text=True)
    assert "0 failed" in theirs and "carol@lab.example.org" not in theirs
    everything = app.test_client()
    page_login(everything, "admin", password=_admin_password())
    assert "2 failed" in everything.get("/alerts/outbox").get_data(as_text=True)
