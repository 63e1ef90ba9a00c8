"""Changes delivered by the delivery lane to real receivers on 127.0.0.1: in the log's order,
one at a time, signed (checked with ``standardwebhooks``), only what the owner may read and
the subscription asks for; retried with a doubling wait on the settable clock, switched off
after days of failure or a 410 with the owner told, caught up after the retention."""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from flask import Flask
from sqlalchemy import update
from standardwebhooks.webhooks import Webhook

from labapp.changefeed.feed import current_cursor
from labapp.db import db, transaction
from labapp.model import ChangeLogHorizon
from labapp.webhooks import delivery
from labapp.webhooks.settings import WebhookSettings
from tests.conftest import PASSWORD, ApiClient, basic_header, run_init
from tests.webhooks.conftest import (
    NOW,
    Lab,
    Receiver,
    body_of,
    hook_body,
    log_of,
    made,
    run,
    save,
    stored,
    told,
)


def drain(app: Flask, now=NOW) -> int:
    """Runs of the lane at ``now`` until it finds no work; how many found some."""
    runs = 0
    while run(app, now):
        runs += 1
        assert runs < 100, "the lane keeps finding work"
    return runs


def messages(receiver: Receiver, secret: str) -> list[dict[str, Any]]:
    """What the receiver got, each checked against the secret."""
    return [Webhook(secret).verify(request.body, request.headers)
            for request in receiver.requests]


def sample(api: ApiClient, name: str, **values: Any) -> str:
    return save(api, {"eClass": "Sample", "name": name, **values})[0]["id"]


def test_changes_are_delivered_in_order_and_signed(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    alice = lab.alice
    before = sample(alice, "Made before the webhook")
    receiver = serve_receivers()
    hook = made(alice, hook_body(receiver.url, eClasses=["Sample"]))
    ids = [sample(alice, f"Tube {number}") for number in range(3)]
    body_of(alice.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": ids[0], "name": "Tube 0 renamed"}]}), 200)
    drain(lab.app)
    got = messages(receiver, hook["secret"])
    assert [(item["type"], item["data"]["entityID"]) for item in got] == [
        ("entity.create", ids[0]), ("entity.create", ids[1]), ("entity.create", ids[2]),
        ("entity.update", ids[0])]
    assert before not in {item["data"]["entityID"] for item in got}
    seqs = [item["data"]["seq"] for item in got]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4
    assert got[-1]["data"]["entity"]["name"] == "Tube 0 renamed"
    assert [request.headers["webhook-id"] for request in receiver.requests] == [
        f"msg_{hook['id']}_{seq}" for seq in seqs]
    assert stored(lab.app, hook["id"]).cursor == seqs[-1]
    assert [line.status for line in log_of(lab.app, hook["id"])] == ["succeeded"] * 4


def test_only_what_the_owner_may_read(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    alice, bob, admin = lab.alice, lab.bob, lab.admin
    alices, admins = serve_receivers(), serve_receivers()
    alice_hook = made(alice, hook_body(alices.url, eClasses=["Sample"]))
    admin_hook = made(admin, hook_body(admins.url, eClasses=["Sample"]))
    mine = sample(alice, "Alice's")
    theirs = sample(bob, "Bob's")
    drain(lab.app)
    assert [item["data"]["entityID"] for item in messages(alices, alice_hook["secret"])] == [
        mine]
    assert [item["data"]["entityID"] for item in messages(admins, admin_hook["secret"])] == [
        mine, theirs]


def test_classes_kinds_and_filter_choose_the_changes(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    alice = lab.alice
    low, updates = serve_receivers(), serve_receivers()
    low_hook = made(alice, hook_body(low.url, "Low", eClasses=["Sample"],
                                     filter="amount le 5"))
    update_hook = made(alice, hook_body(updates.url, "Updates", kinds=["update"]))
    small = sample(alice, "Small", amount=2.0, unit="mL")
    sample(alice, "Large", amount=50.0, unit="mL")
    save(alice, {"eClass": "Experiment", "name": "Not a sample"})
    body_of(alice.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": small, "amount": 3.0}]}), 200)
    drain(lab.app)
    assert [(item["type"], item["data"]["entityID"])
            for item in messages(low, low_hook["secret"])] == [
        ("entity.create", small), ("entity.update", small)]
    assert [(item["type"], item["data"]["entityID"])
            for item in messages(updates, update_hook["secret"])] == [
        ("entity.update", small)]


def test_a_failing_receiver_is_retried_with_a_doubling_wait_and_holds_the_line(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    alice = lab.alice
    receiver = serve_receivers(status=503, body=b"try later")
    hook = made(alice, hook_body(receiver.url, eClasses=["Sample"]))
    first, second = sample(alice, "First"), sample(alice, "Second")
    assert run(lab.app, NOW)
    assert not run(lab.app, NOW + timedelta(seconds=59))  # the first wait is a minute
    assert run(lab.app, NOW + timedelta(seconds=60))
    assert not run(lab.app, NOW + timedelta(seconds=60 + 119))  # then two
    assert run(lab.app, NOW + timedelta(seconds=60 + 120))
    lines = log_of(lab.app, hook["id"])
    assert [(line.attempt, line.status, line.response_code) for line in lines] == [
        (1, "failed", 503), (2, "failed", 503), (3, "failed", 503)]
    assert [line.next_attempt_utc - line.attempted_utc for line in lines] == [
        timedelta(minutes=1), timedelta(minutes=2), timedelta(minutes=4)]
    assert lines[0].response_body == "try later"
    shown = body_of(alice.get(f"/api/webhook/{hook['id']}"), 200)
    assert shown["state"] == "failing" and shown["failingSince"]
    # Every attempt sent the first change, as it was, under one id; never the second.
    assert {request.body for request in receiver.requests} == {receiver.requests[0].body}
    assert len({request.headers["webhook-id"] for request in receiver.requests}) == 1
    receiver.status = 200
    later = NOW + timedelta(seconds=60 + 120 + 240)
    drain(lab.app, later)
    assert [item["data"]["entityID"] for item in messages(receiver, hook["secret"])] == [
        first] * 4 + [second]
    assert body_of(alice.get(f"/api/webhook/{hook['id']}"), 200)["state"] == "active"


def test_the_wait_is_capped() -> None:
    settings = WebhookSettings(timeout=10, retry_first=timedelta(minutes=1),
                               retry_max=timedelta(hours=24),
                               disable_after=timedelta(days=5), allowed=(), secret_keys=("k",),
                               secret_overlap=timedelta(hours=24))
    assert [settings.backoff(n) for n in (1, 2, 3, 11, 12, 60)] == [
        timedelta(minutes=1), timedelta(minutes=2), timedelta(minutes=4),
        timedelta(minutes=1024), timedelta(hours=24), timedelta(hours=24)]


def test_switched_off_after_days_of_failure_and_the_owner_told(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    alice = lab.alice
    receiver = serve_receivers(status=500)
    hook = made(alice, hook_body(receiver.url, "Broken mirror", eClasses=["Sample"]))
    sample(alice, "One")
    moment = NOW
    while run(lab.app, moment):
        moment = stored(lab.app, hook["id"]).next_attempt_utc or moment
        assert moment - NOW <= timedelta(days=7)
    shown = body_of(alice.get(f"/api/webhook/{hook['id']}"), 200)
    assert (shown["active"], shown["state"]) == (False, "disabled")
    assert "failed for 5 days" in shown["disabledReason"]
    [message] = told(lab.app, "alice")
    assert "Broken mirror" in message and "switched off" in message
    assert log_of(lab.app, hook["id"])[-1].next_attempt_utc is None


def test_a_410_switches_off_and_switching_on_goes_on_from_that_change(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    alice = lab.alice
    receiver = serve_receivers(status=410)
    hook = made(alice, hook_body(receiver.url, eClasses=["Sample"]))
    first = sample(alice, "First")
    drain(lab.app)
    shown = body_of(alice.get(f"/api/webhook/{hook['id']}"), 200)
    assert shown["state"] == "disabled" and "410" in shown["disabledReason"]
    assert len(told(lab.app, "alice")) == 1
    receiver.status = 200
    body_of(alice.put(f"/api/webhook/{hook['id']}", json={**shown, "active": True}), 200)
    # The switch-on is stamped by the real clock, which may be past the lane's NOW.
    switched_on = stored(lab.app, hook["id"]).next_attempt_utc
    drain(lab.app, max(NOW, switched_on) + timedelta(minutes=1))
    got = messages(receiver, hook["secret"])
    assert [item["data"]["entityID"] for item in got] == [first, first]


def test_a_past_change_is_redelivered(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    alice = lab.alice
    receiver = serve_receivers()
    hook = made(alice, hook_body(receiver.url, eClasses=["Sample"]))
    sample(alice, "Once")
    drain(lab.app)
    [line] = body_of(alice.get(f"/api/webhook/{hook['id']}/deliveries"), 200)
    body_of(alice.post(f"/api/webhook/{hook['id']}/deliveries/{line['id']}/redeliver"), 202)
    drain(lab.app)
    one, two = receiver.requests
    assert one.body == two.body and one.headers["webhook-id"] == two.headers["webhook-id"]
    assert stored(lab.app, hook["id"]).cursor == line["seq"]


def test_a_cursor_past_the_retention_catches_up_and_the_owner_is_told(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    alice = lab.alice
    receiver = serve_receivers()
    hook = made(alice, hook_body(receiver.url, "Late", eClasses=["Sample"]))
    sample(alice, "Lost")
    with lab.app.app_context(), transaction():
        end = current_cursor()
        if db.session.get(ChangeLogHorizon, 1) is None:
            db.session.add(ChangeLogHorizon(id=1, removed_through=end))
        else:
            db.session.execute(update(ChangeLogHorizon).values(removed_through=end))
    drain(lab.app)
    assert receiver.requests == []
    [line] = log_of(lab.app, hook["id"])
    assert line.event_type == "cursor.expired" and "were removed" in (line.error or "")
    assert stored(lab.app, hook["id"]).cursor == end
    [message] = told(lab.app, "alice")
    assert "Late" in message and "missed changes" in message
    after = sample(alice, "Caught up")
    drain(lab.app)
    assert [json.loads(request.body)["data"]["entityID"]
            for request in receiver.requests] == [after]


def test_two_workers_never_hold_one_subscription_at_once(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    hook = made(lab.admin, hook_body(serve_receivers().url))
    with lab.app.app_context():
        settings = WebhookSettings.current()
        first = delivery._claim(hook["id"], NOW, settings)
        assert first is not None
        assert delivery._claim(hook["id"], NOW, settings) is None
        # A lease left by a worker that died runs out: another worker takes over.
        later = NOW + delivery._lease(settings) + timedelta(seconds=1)
        assert delivery._claim(hook["id"], later, settings) is not None


def test_a_change_that_hides_the_entity_is_delivered_without_it(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    receiver = serve_receivers()
    hook = made(lab.alice, hook_body(receiver.url, eClasses=["Sample"]))
    moved = sample(lab.alice, "Moving away")
    body_of(lab.admin.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "id": moved, "departmentID": "DEP-C"}]}), 200)
    drain(lab.app)
    got = messages(receiver, hook["secret"])
    assert [item["type"] for item in got] == ["entity.create", "entity.hidden"]
    assert got[1]["data"]["entityID"] == moved and "entity" not in got[1]["data"]


def test_two_workers_deliver_each_change_once_in_order(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    receiver = serve_receivers()
    hook = made(lab.admin, hook_body(receiver.url, eClasses=["Sample"]))
    ids = [item["id"] for item in save(lab.admin, *(
        {"eClass": "Sample", "name": f"Tube {number}"} for number in range(30)))]
    failures: list[BaseException] = []

    def worker() -> None:
        try:
            with lab.app.app_context():
                while delivery.upkeep(NOW):
                    pass
                db.session.remove()
        except BaseException as error:  # noqa: BLE001 (reported by the test below)
            failures.append(error)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    drain(lab.app)  # what a worker left to the other when it stopped looking
    got = [item["data"]["entityID"] for item in messages(receiver, hook["secret"])]
    assert got == ids


def test_an_owner_no_longer_active_switches_the_webhook_off(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    receiver = serve_receivers()
    hook = made(lab.alice, hook_body(receiver.url, "Alice's", eClasses=["Sample"]))
    body_of(lab.admin.put("/api/user", json={"userID": "alice", "isActive": False}), 200)
    sample(lab.admin, "Made after she left")
    drain(lab.app)
    assert receiver.requests == []
    shown = body_of(lab.admin.get(f"/api/webhook/{hook['id']}"), 200)
    assert shown["state"] == "disabled" and "no longer an active user" in shown["disabledReason"]


def test_a_secret_sealed_under_a_key_rotated_into_the_fallbacks_still_signs(
        lab: Lab, serve_receivers: Callable[..., Receiver]) -> None:
    receiver = serve_receivers()
    hook = made(lab.alice, hook_body(receiver.url, eClasses=["Sample"]))
    first = sample(lab.alice, "Delivered after the key's rotation")
    config = lab.app.config
    old_key = config["SECRET_KEY"]
    try:
        config["SECRET_KEY"], config["SECRET_KEY_FALLBACKS"] = "a key that sealed nothing", []
        drain(lab.app)
        assert receiver.requests == []
        assert "rotate the secret" in log_of(lab.app, hook["id"])[0].error
        config["SECRET_KEY_FALLBACKS"] = [old_key]
        drain(lab.app, NOW + timedelta(days=1))
        assert [item["data"]["entityID"] for item in messages(receiver, hook["secret"])] == [
            first]
        # init seals the secret anew under the new key; then the old one may go.
        assert "sealed 1 secret(s) under SECRET_KEY" in run_init(lab.app)
        config["SECRET_KEY_FALLBACKS"] = []
        # Bearer tokens signed by the old key ended with it; a password still signs in.
        alice = ApiClient(lab.app.test_client(), basic_header("alice", PASSWORD), "basic")
        second = body_of(alice.post("/api/entity", json={"entities": [
            {"eClass": "Sample", "name": "Delivered once the old key is gone"}]}), 201)
        drain(lab.app, NOW + timedelta(days=2))
        assert [item["data"]["entityID"] for item in messages(receiver, hook["secret"])] == [
            first, second["entities"][0]["id"]]
    finally:
        config["SECRET_KEY"], config["SECRET_KEY_FALLBACKS"] = old_key, []
