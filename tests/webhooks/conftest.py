"""Fixtures of the webhook tests: real HTTP receivers on 127.0.0.1 (allowed by the setting
for the length of a test), webhook bodies, and one run of the delivery lane at a chosen
moment."""
from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from labapp.db import db
from labapp.model import Notification, WebhookDelivery, WebhookSubscription
from labapp.setting_values import parse_networks
from labapp.webhooks import delivery
from tests.changefeed.conftest import signed_in
from tests.conftest import ADMIN_PASSWORD, PASSWORD, ApiClient
from tests.entities.conftest import (  # noqa: F401
    admin,
    body_of,
    department,
    grant,
    member,
    project,
    save,
)
from tests.helpers.serving import serving_in_thread

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@dataclass
class Received:
    """One request a receiver got."""

    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A real HTTP server on 127.0.0.1 answering every POST with ``status`` (and ``body``);
    ``hold`` set, it answers nothing until the event is set (a slow receiver)."""

    url: str = ""
    status: int = 204
    body: bytes = b""
    requests: list[Received] = field(default_factory=list)
    hold: threading.Event | None = None
    huge: bool = False


def _handler(receiver: Receiver) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            receiver.requests.append(Received(self.path, dict(self.headers.items()),
                                              self.rfile.read(length)))
            if receiver.hold is not None:
                receiver.hold.wait()
                return
            self.send_response(receiver.status)
            if receiver.huge:
                self.send_header("Content-Length", str(1 << 30))
                self.end_headers()
                try:
                    chunk = b"x" * 65536
                    for _ in range(64):  # more than the client reads; it hangs up first
                        self.wfile.write(chunk)
                except OSError:
                    pass
                return
            self.send_header("Content-Length", str(len(receiver.body)))
            self.end_headers()
            self.wfile.write(receiver.body)

        def log_message(self, *_args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def serve_receivers() -> Iterator[Callable[..., Receiver]]:
    """Factory of receivers on 127.0.0.1, stopped at the end of the test."""
    with ExitStack() as servers:

        def make(**values: Any) -> Receiver:
            receiver = Receiver(**values)
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
            server.daemon_threads = True
            receiver.url = f"http://127.0.0.1:{server.server_port}/hook"
            servers.enter_context(serving_in_thread(server, "webhook-receiver"))
            # Runs before its server stops (callbacks unwind in reverse): a held answer lets go.
            servers.callback(_release, receiver)
            return receiver

        yield make


def _release(receiver: Receiver) -> None:
    if receiver.hold is not None:
        receiver.hold.set()


@pytest.fixture
def receivers(app: Flask, serve_receivers: Callable[..., Receiver]
              ) -> Iterator[Callable[..., Receiver]]:
    """Receivers for the shared application, which allows 127.0.0.0/8 meanwhile."""
    settings = app.config["LABAPP"]
    before = settings["WEBHOOK_ALLOWED_NETWORKS"], settings["WEBHOOK_TIMEOUT_SECONDS"]
    settings["WEBHOOK_ALLOWED_NETWORKS"] = parse_networks("127.0.0.0/8")
    try:
        yield serve_receivers
    finally:
        settings["WEBHOOK_ALLOWED_NETWORKS"], settings["WEBHOOK_TIMEOUT_SECONDS"] = before


@dataclass
class Lab:
    """An application of its own with real commits (PostgreSQL numbers a change in the log
    only as its transaction commits, which the shared application's rolled-back tests never
    do), allowing 127.0.0.0/8: its administrator, alice (Physics) and bob (Chemistry), each
    reading their own department only."""

    app: Flask
    admin: ApiClient
    alice: ApiClient
    bob: ApiClient


@pytest.fixture
def lab(fresh_app: Callable[..., Flask]) -> Lab:
    application = fresh_app(initialised=True, WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8")
    administrator = signed_in(application, "admin", ADMIN_PASSWORD)
    body_of(administrator.post("/api/entity", json={"entities": [
        {"eClass": "Department", "id": "DEP-P", "name": "Physics"},
        {"eClass": "Department", "id": "DEP-C", "name": "Chemistry"},
        {"eClass": "User", "id": "alice", "name": "Alice", "departmentID": "DEP-P",
         "password": PASSWORD},
        {"eClass": "User", "id": "bob", "name": "Bob", "departmentID": "DEP-C",
         "password": PASSWORD}]}), 201)
    return Lab(application, administrator, signed_in(application, "alice"),
               signed_in(application, "bob"))


def hook_body(url: str, name: str = "Mirror", **values: Any) -> dict[str, Any]:
    return {"name": name, "url": url, "eClasses": values.pop("eClasses", []),
            "kinds": values.pop("kinds", []), "filter": values.pop("filter", None),
            "active": values.pop("active", True), **values}


def made(api: ApiClient, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /api/webhook`` asserting 201."""
    return body_of(api.post("/api/webhook", json=body), 201)


def run(app: Flask, now: datetime = NOW) -> bool:
    """One run of the delivery lane at ``now``."""
    with app.app_context():
        return delivery.upkeep(now)


def log_of(app: Flask, hook_id: str) -> list[WebhookDelivery]:
    """The webhook's delivery log, oldest first."""
    with app.app_context():
        return list(db.session.scalars(select(WebhookDelivery).where(
            WebhookDelivery.subscription_id == hook_id).order_by(WebhookDelivery.id)))


def stored(app: Flask, hook_id: str) -> WebhookSubscription:
    with app.app_context():
        hook = db.session.get(WebhookSubscription, hook_id, populate_existing=True)
        assert hook is not None
        return hook


def told(app: Flask, user_id: str) -> list[str]:
    """The messages of the user's Webhook notifications, oldest first."""
    with app.app_context():
        return list(db.session.scalars(
            select(Notification.message).where(Notification.user_id == user_id,
                                               Notification.kind == "Webhook")
            .order_by(Notification.created_utc, Notification.id)))
