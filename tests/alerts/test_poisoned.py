"""One bad message never stops the worker (issue 32 §1). Rows written before names were
checked — a rule whose name holds CR/LF, an outbox message whose subject or recipient does —
are put in the database of a real ``flask --app labapp worker`` process sending to a real
SMTP server: the worker keeps running, sends what can be sent with one-line headers, gives up
the message that cannot be composed with its reason (never tried again), and keeps indexing
search afterwards."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from flask import Flask
from sqlalchemy import select, update

from labapp.access.grant_sets import actor_for
from labapp.alerts import service as rules
from labapp.alerts.evaluate import evaluate
from labapp.alerts.mail import MailSettings, queue
from labapp.db import db, transaction
from labapp.entities.service import save_batch
from labapp.model import AlertRule, MailMessage, User
from labapp.model.types import utc_now
from labapp.users.service import create_user
from tests.alerts.conftest import NOW, Inbox, rule_body
from tests.conftest import PASSWORD, SECRET_KEY
from tests.helpers.processes import ROOT, beating, wait_for
from tests.helpers.searching import client_found, client_post

BREAKING = "Running low\r\nBcc: mallory@evil.example"
BAD_ADDRESS = "bob@lab.example.org\r\nBcc: mallory@evil.example"


def _poison(app: Flask) -> str:
    """Alice (with an address) and a low sample; her e-mail rule whose name holds CR/LF as
    stored before the check; an old message with such a subject and one whose recipient
    is no address at all. The id of the rule."""
    with app.app_context(), transaction():
        create_user(username="alice", name="Alice", department_id="DEP00001",
                    password=PASSWORD, created_by="admin", email="alice@lab.example.org")
        db.session.flush()
        alice = actor_for(db.session.get(User, "alice"), method=None)
        save_batch(alice, [{"eClass": "Sample", "name": "Tube low", "amount": 1.0}])
        rule = rules.create(alice, {**rule_body("Running low", users=["alice"]),
                                    "channels": ["bell", "email"]})
        db.session.execute(update(AlertRule).where(AlertRule.id == rule.id)
                           .values(name=BREAKING))
        db.session.execute(MailMessage.__table__.insert().values(
            recipient="carol@lab.example.org", user_id=None, subject="Old\r\nBcc: mallory@x",
            body_text="old", body_html="<p>old</p>", attempts=0, next_attempt_utc=NOW,
            created_utc=NOW))
        db.session.execute(MailMessage.__table__.insert().values(
            recipient=BAD_ADDRESS, user_id=None, subject="To nobody", body_text="x",
            body_html="<p>x</p>", attempts=0, next_attempt_utc=NOW, created_utc=NOW))
        return rule.id


@contextmanager
def _worker(app: Flask, smtp_url: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``flask --app labapp worker`` on the app's database and instance, sending e-mail
    through ``smtp_url``, what it writes to stderr kept in ``log``."""
    settings = app.config["LABAPP"]
    env = {**os.environ, "LABAPP_INSTANCE_PATH": settings["INSTANCE_PATH"],
           "LABAPP_DATABASE_URL": settings["DATABASE_URL"], "LABAPP_SECRET_KEY": SECRET_KEY,
           "LABAPP_SMTP_URL": smtp_url, "LABAPP_MAIL_FROM": "alerts@lab.example.org",
           "LABAPP_PUBLIC_URL": "https://lab.example.org"}
    with log.open("wb") as errors:
        process = subprocess.Popen([sys.executable, "-m", "flask", "--app", "labapp", "worker"],
                                   env=env, cwd=ROOT, start_new_session=True,
                                   stdout=subprocess.DEVNULL, stderr=errors)
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


def _outbox(app: Flask) -> dict[str, MailMessage]:
    with app.app_context():
        try:
            return {row.recipient: row for row in db.session.scalars(select(MailMessage))}
        finally:
            db.session.remove()


def test_a_poisoned_outbox_does_not_stop_the_worker(
        fresh_app: Callable[..., Flask], smtp: tuple[Inbox, MailSettings],
        tmp_path: Path) -> None:
    inbox, settings = smtp
    assert settings.url is not None
    app = fresh_app(initialised=True)
    _poison(app)

    log = tmp_path / "worker.log"

    def alive_and(condition: Callable[[], Any]) -> Callable[[], Any]:
        def check() -> Any:
            assert process.poll() is None, f"the worker exited: {log.read_text()}"
            return condition()
        return check

    with _worker(app, settings.url, log) as process:
        wait_for(alive_and(lambda: beating(app) == str(process.pid)), "the worker's heartbeat")
        wait_for(alive_and(lambda: len(inbox.messages) == 2
                           and _outbox(app)[BAD_ADDRESS].given_up_utc is not None),
                 "the sendable messages sent and the other given up")
        given_up = _outbox(app)[BAD_ADDRESS]
        assert given_up.sent_utc is None and given_up.attempts == 0
        assert (given_up.last_error or "").startswith("Cannot be sent, not tried again: ")
        assert "not an e-mail address" in (given_up.last_error or "") \
            or "control character" in (given_up.last_error or "")

        # The worker goes on with everything else: a new sample becomes searchable.
        client_post(app, "indexed after the poison")
        wait_for(alive_and(lambda: client_found(app, "poison") == {"indexed after the poison"}),
                 "the worker to keep indexing")
        assert process.poll() is None
    assert process.returncode == 0, "stopped by SIGTERM, cleanly"

    subjects = sorted(str(message["Subject"]) for message in inbox.messages)
    assert subjects == ["Old Bcc: mallory@x", "[labapp] Running low Bcc: mallory@evil.example: "
                                              "1 sample"]
    for message in inbox.messages:
        assert message["Bcc"] is None and message.get_all("Bcc") is None
    assert all("mallory@evil.example" not in rcpt and "mallory@x" not in rcpt
               for _, rcpts in inbox.envelopes for rcpt in rcpts)
    assert sorted(rcpt for _, rcpts in inbox.envelopes for rcpt in rcpts) == [
        "alice@lab.example.org", "carol@lab.example.org"]


def test_a_message_given_up_is_never_tried_again(
        fresh_app: Callable[..., Flask], smtp: tuple[Inbox, MailSettings]) -> None:
    inbox, settings = smtp
    app = fresh_app(initialised=True)
    _poison(app)
    with app.app_context():
        first = evaluate(NOW, settings)
        assert (first.sent, first.failed) == (2, 1)
        for later in (timedelta(minutes=10), timedelta(days=1)):
            again = evaluate(NOW + later, settings)
            assert (again.sent, again.failed) == (0, 0), "nothing tried again"
        db.session.remove()
    assert len(inbox.messages) == 2
    given_up = _outbox(app)[BAD_ADDRESS]
    assert given_up.given_up_utc == NOW and given_up.attempts == 0


def test_a_message_queued_today_gets_a_header_safe_subject(
        fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app(initialised=True)
    with app.app_context(), transaction():
        queue("carol@lab.example.org", None, "A\r\nB\x00C\u2028D\tE", "text", "<p>html</p>",
              utc_now())
    with app.app_context():
        assert db.session.scalar(select(MailMessage.subject)) == "A B C D E"
        db.session.remove()
