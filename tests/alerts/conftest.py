"""Fixtures of the alert rule tests: a lab of two departments with samples, rule bodies, one
evaluation tick at a chosen moment, and a real SMTP server (aiosmtpd) keeping what it
accepts."""
from __future__ import annotations

import email
import socket
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from email.message import EmailMessage
from email.policy import default
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from flask import Flask
from sqlalchemy import select

from labapp.alerts.evaluate import Report, evaluate
from labapp.alerts.mail import MailSettings
from labapp.db import db
from labapp.model import AlertRule, AlertState, Notification
from tests.conftest import ApiClient
from tests.entities.conftest import (  # noqa: F401
    admin,
    body_of,
    department,
    grant,
    member,
    project,
    save,
)

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
BASE = "https://lab.example.org"


def rule_body(name: str = "Running low", eclass: str = "Sample", filter: str | None = "amount le 5",
              **values: Any) -> dict[str, Any]:
    """A rule body; ``users=[...]`` are its userIDs, other keyword arguments override."""
    users = values.pop("users", ["alice"])
    return {"name": name, "eClass": eclass, "filter": filter,
            "recipients": {"userIDs": users, "departmentIDs": values.pop("departments", []),
                           "projectIDs": values.pop("projects", []),
                           "userRoles": values.pop("roles", [])},
            "channels": values.pop("channels", ["bell"]),
            "cadence": values.pop("cadence", "immediate"), "active": True, **values}


def made(api: ApiClient, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /api/alert-rule`` asserting 201."""
    return body_of(api.post("/api/alert-rule", json=body), 201)


def set_amount(api: ApiClient, sample_id: str, amount: float) -> None:
    body_of(api.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": sample_id, "amount": amount}]}), 200)


def tick(app: Flask, now: datetime = NOW, mail: MailSettings | None = None) -> Report:
    """One evaluation at ``now``."""
    with app.app_context():
        return evaluate(now, mail)


ALICE, ADMIN_OWNER = "Alice (alice)", "Administrator (admin)"


def said(line: str, owner: str = ALICE) -> str:
    """A bell line as an alert says it, naming the rule's owner."""
    return f"{line} · rule of {owner}"


def alerts_of(app: Flask, user_id: str) -> list[str]:
    """The messages of the user's Alert notifications, oldest first."""
    with app.app_context():
        return list(db.session.scalars(
            select(Notification.message).where(Notification.user_id == user_id,
                                               Notification.kind == "Alert")
            .order_by(Notification.created_utc, Notification.id)))


def digest_due(app: Flask, rule_id: str) -> datetime:
    """When the rule's next digest is due, as the service set it: from the clock of the
    moment the rule was saved, which the ticks' fixed :data:`NOW` is not (computed from
    NOW, the tests passed only on the day NOW names)."""
    with app.app_context():
        due = db.session.get(AlertRule, rule_id).digest_due_utc
    assert due is not None, "not a digest rule"
    return due


def states_of(app: Flask, rule_id: str) -> set[str]:
    with app.app_context():
        return set(db.session.scalars(select(AlertState.entity_id)
                                      .where(AlertState.rule_id == rule_id)))


@pytest.fixture
def lab(admin: ApiClient, member: Callable[..., ApiClient],  # noqa: F811
        department: Callable[..., str]) -> dict[str, Any]:  # noqa: F811
    """Physics (alice, with two samples, one low) and Chemistry (bob, one low sample);
    each member reads only their own department."""
    physics, chemistry = department("Physics"), department("Chemistry")
    alice = member("alice", department_id=physics)
    bob = member("bob", department_id=chemistry)
    low, full = (item["id"] for item in save(
        alice, {"eClass": "Sample", "name": "Tube low", "amount": 2.0, "unit": "mL"},
        {"eClass": "Sample", "name": "Tube full", "amount": 50.0, "unit": "mL"}))
    bobs = save(bob, {"eClass": "Sample", "name": "Bob tube", "amount": 1.0, "unit": "mL"})[0]["id"]
    return {"physics": physics, "chemistry": chemistry, "alice": alice, "bob": bob,
            "low": low, "full": full, "bobs": bobs}


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
