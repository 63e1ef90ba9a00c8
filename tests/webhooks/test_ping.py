"""Pings and redeliveries, sent by the delivery lane to real receivers on 127.0.0.1: signed
per Standard Webhooks (checked with the ``standardwebhooks`` package), logged with the
receiver's answer, bounded in time and in what is kept of the answer, and never sent to an
address the setting does not allow."""
from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from labapp.model.types import utc_now
from labapp.webhooks.addresses import Target
from labapp.webhooks.sending import KEPT_BYTES, post
from tests.conftest import ApiClient
from tests.webhooks.conftest import (
    Receiver,
    body_of,
    hook_body,
    log_of,
    made,
    run,
    stored,
    told,
)


def pinged(api: ApiClient, hook_id: str) -> dict:
    return body_of(api.post(f"/api/webhook/{hook_id}/ping"), 202)


def test_a_ping_is_delivered_signed(app: Flask, admin: ApiClient,
                                    receivers: Callable[..., Receiver]) -> None:
    receiver = receivers(status=200, body=b'{"ok": true}')
    hook = made(admin, hook_body(receiver.url))
    queued = pinged(admin, hook["id"])
    assert queued["status"] == "queued" and queued["type"] == "webhook.ping"
    assert run(app)
    [request] = receiver.requests
    assert request.path == "/hook"
    message = Webhook(hook["secret"]).verify(request.body, request.headers)
    assert message["type"] == "webhook.ping"
    assert message["data"] == {"webhookID": hook["id"], "message": "ping"}
    assert request.headers["webhook-id"] == queued["messageID"]
    assert request.headers["Content-Type"] == "application/json"
    [line] = body_of(admin.get(f"/api/webhook/{hook['id']}/deliveries"), 200)
    assert (line["status"], line["responseCode"], line["responseBody"]) == (
        "succeeded", 200, '{"ok": true}')
    assert line["durationMs"] >= 0 and line["attemptedUtc"]
    assert not run(app)  # sent once


def test_a_rotated_secret_signs_the_next_attempt(app: Flask, admin: ApiClient,
                                                 receivers: Callable[..., Receiver]) -> None:
    receiver = receivers()
    hook = made(admin, hook_body(receiver.url))
    secret = body_of(admin.post(f"/api/webhook/{hook['id']}/secret"), 200)["secret"]
    pinged(admin, hook["id"])
    run(app)
    [request] = receiver.requests
    Webhook(secret).verify(request.body, request.headers)


def test_a_rotated_secret_signs_beside_the_new_one_until_its_overlap_ends(
        app: Flask, admin: ApiClient, receivers: Callable[..., Receiver],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After a rotation each delivery carries two signatures, by the new secret and the old
    one, so a receiver still holding the old secret accepts it; after
    WEBHOOK_SECRET_OVERLAP_HOURS only the new one signs. With 0 the old one ends at once."""
    receiver = receivers()
    hook = made(admin, hook_body(receiver.url))
    old = hook["secret"]
    new = body_of(admin.post(f"/api/webhook/{hook['id']}/secret"), 200)["secret"]
    for moment in (utc_now(), utc_now() + timedelta(hours=23)):
        pinged(admin, hook["id"])
        assert run(app, moment)
        request = receiver.requests[-1]
        assert len(request.headers["webhook-signature"].split(" ")) == 2
        for secret in (old, new):
            assert Webhook(secret).verify(request.body, request.headers)["type"] == (
                "webhook.ping")
    pinged(admin, hook["id"])
    assert run(app, utc_now() + timedelta(hours=25))
    request = receiver.requests[-1]
    assert Webhook(new).verify(request.body, request.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(request.body, request.headers)

    monkeypatch.setitem(app.config["LABAPP"], "WEBHOOK_SECRET_OVERLAP_HOURS", 0)
    newest = body_of(admin.post(f"/api/webhook/{hook['id']}/secret"), 200)["secret"]
    pinged(admin, hook["id"])
    assert run(app, utc_now())
    request = receiver.requests[-1]
    assert Webhook(newest).verify(request.body, request.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(new).verify(request.body, request.headers)


def test_a_failed_ping_is_logged_with_the_answer(app: Flask, admin: ApiClient,
                                                 receivers: Callable[..., Receiver]) -> None:
    receiver = receivers(status=500, body=b"database down")
    hook = made(admin, hook_body(receiver.url))
    pinged(admin, hook["id"])
    run(app)
    [line] = log_of(app, hook["id"])
    assert (line.status, line.response_code, line.response_body) == (
        "failed", 500, "database down")
    assert stored(app, hook["id"]).active  # a ping's failure does not count against it


def test_a_redirect_is_not_followed(app: Flask, admin: ApiClient,
                                    receivers: Callable[..., Receiver]) -> None:
    elsewhere = receivers()
    receiver = receivers(status=307, body=b"")
    hook = made(admin, hook_body(receiver.url))
    pinged(admin, hook["id"])
    run(app)
    assert [line.response_code for line in log_of(app, hook["id"])] == [307]
    assert elsewhere.requests == []


def test_a_slow_receiver_times_out(app: Flask, admin: ApiClient,
                                   receivers: Callable[..., Receiver]) -> None:
    receiver = receivers(hold=threading.Event())
    app.config["LABAPP"]["WEBHOOK_TIMEOUT_SECONDS"] = 1
    hook = made(admin, hook_body(receiver.url))
    pinged(admin, hook["id"])
    run(app)
    [line] = log_of(app, hook["id"])
    assert (line.status, line.response_code, line.error) == (
        "failed", None, "no answer within 1 s")
    assert len(receiver.requests) == 1


def test_a_huge_answer_costs_a_few_kilobytes(app: Flask, admin: ApiClient,
                                             receivers: Callable[..., Receiver]) -> None:
    receiver = receivers(status=200, huge=True)
    hook = made(admin, hook_body(receiver.url))
    pinged(admin, hook["id"])
    run(app)
    [line] = log_of(app, hook["id"])
    assert line.status == "succeeded"
    assert line.response_body is not None and len(line.response_body) == KEPT_BYTES


def test_a_ping_answered_410_switches_the_webhook_off(
        app: Flask, member: Callable[..., ApiClient],
        receivers: Callable[..., Receiver]) -> None:
    alice = member("alice")
    receiver = receivers(status=410)
    hook = made(alice, hook_body(receiver.url, "Gone one"))
    pinged(alice, hook["id"])
    run(app)
    again = body_of(alice.get(f"/api/webhook/{hook['id']}"), 200)
    assert (again["active"], again["state"]) == (False, "disabled")
    assert "410" in again["disabledReason"]
    [message] = told(app, "alice")
    assert "Gone one" in message and "410" in message


def test_redelivered_as_it_was_under_the_same_id(app: Flask, admin: ApiClient,
                                                 receivers: Callable[..., Receiver]) -> None:
    receiver = receivers()
    hook = made(admin, hook_body(receiver.url))
    first = pinged(admin, hook["id"])
    run(app)
    again = body_of(admin.post(
        f"/api/webhook/{hook['id']}/deliveries/{first['id']}/redeliver"), 202)
    assert again["messageID"] == first["messageID"] and again["status"] == "queued"
    run(app)
    one, two = receiver.requests
    assert one.body == two.body and one.headers["webhook-id"] == two.headers["webhook-id"]
    Webhook(hook["secret"]).verify(two.body, two.headers)
    statuses = [line["status"] for line in
                body_of(admin.get(f"/api/webhook/{hook['id']}/deliveries"), 200)]
    assert statuses == ["succeeded", "succeeded"]


def test_a_name_resolving_to_loopback_is_refused_at_delivery(
        app: Flask, admin: ApiClient, receivers: Callable[..., Receiver]) -> None:
    receiver = receivers()
    url = receiver.url.replace("127.0.0.1", "localhost")
    hook = made(admin, hook_body(url))  # a name is judged when it is delivered to
    app.config["LABAPP"]["WEBHOOK_ALLOWED_NETWORKS"] = ()
    pinged(admin, hook["id"])
    run(app)
    [line] = log_of(app, hook["id"])
    assert line.status == "failed" and line.error is not None
    assert line.error.startswith("refused: localhost resolves to") and "loopback" in line.error
    assert receiver.requests == []


def test_a_name_that_does_not_resolve_in_time_fails_the_attempt_within_it(
        app: Flask, admin: ApiClient, receivers: Callable[..., Receiver],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A name server that never answers holds the lane for the delivery's timeout only:
    the attempt fails naming why, and is retried as any failed one."""
    receiver = receivers()
    hook = made(admin, hook_body(receiver.url.replace("127.0.0.1", "stuck.invalid")))
    released = threading.Event()
    system_resolver = socket.getaddrinfo

    def never_answers(host: str, *args: Any, **kwargs: Any) -> Any:
        if host != "stuck.invalid":
            return system_resolver(host, *args, **kwargs)
        released.wait()
        raise socket.gaierror("the test let the lookup go")

    monkeypatch.setattr(socket, "getaddrinfo", never_answers)
    monkeypatch.setitem(app.config["LABAPP"], "WEBHOOK_TIMEOUT_SECONDS", 1)
    pinged(admin, hook["id"])
    try:
        assert run(app)
    finally:
        released.set()
    [line] = log_of(app, hook["id"])
    assert (line.status, line.error) == (
        "failed", "refused: stuck.invalid did not resolve within 1 s")
    assert receiver.requests == []


def test_an_address_allowed_at_saving_is_judged_again_at_delivery(
        app: Flask, admin: ApiClient, receivers: Callable[..., Receiver]) -> None:
    receiver = receivers()
    hook = made(admin, hook_body(receiver.url))
    app.config["LABAPP"]["WEBHOOK_ALLOWED_NETWORKS"] = ()
    pinged(admin, hook["id"])
    run(app)
    [line] = log_of(app, hook["id"])
    assert "127.0.0.1 is a loopback address" in (line.error or "")
    assert receiver.requests == []


def test_the_body_is_the_standard_shape(app: Flask, admin: ApiClient,
                                        receivers: Callable[..., Receiver]) -> None:
    receiver = receivers()
    hook = made(admin, hook_body(receiver.url))
    pinged(admin, hook["id"])
    run(app)
    body = json.loads(receiver.requests[0].body)
    assert set(body) == {"type", "timestamp", "data"}
    assert body["timestamp"].endswith("Z")


def test_the_connection_goes_to_the_checked_address_only(
        serve_receivers: Callable[..., Receiver]) -> None:
    """DNS rebinding: the host name is never resolved again after its check; it only names
    the request (``Host``), while the connection goes to the address checked."""
    receiver = serve_receivers(status=200)
    port = int(receiver.url.split(":")[2].split("/")[0])
    checked = Target("http", "rebinding.invalid", port, "/hook?x=1", ("127.0.0.1",))
    outcome = post(checked, {"webhook-id": "msg_1"}, b"{}", timeout=5)
    assert outcome.succeeded, outcome
    [request] = receiver.requests
    assert request.headers["Host"] == f"rebinding.invalid:{port}"
    assert request.path == "/hook?x=1"
