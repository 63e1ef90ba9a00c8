"""The worker delivers webhooks in a lane of its own: while a receiver keeps an attempt
waiting, the worker's other lanes go on (a change made meanwhile is found by search), and
the delivery completes once the receiver answers."""
from __future__ import annotations

import threading
from collections.abc import Callable

from flask import Flask

from tests.helpers.processes import ADMIN, alive, wait_for, worker_in_thread
from tests.helpers.searching import client_found
from tests.webhooks.conftest import Receiver, hook_body, log_of


def test_a_slow_receiver_never_stalls_the_other_lanes(
        fresh_app: Callable[..., Flask], serve_receivers: Callable[..., Receiver]) -> None:
    app = fresh_app(initialised=True, WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8",
                    WEBHOOK_TIMEOUT_SECONDS=120)
    held = threading.Event()
    receiver = serve_receivers(hold=held)
    client = app.test_client()
    made = client.post("/api/webhook", headers=ADMIN,
                       json=hook_body(receiver.url, eClasses=["Sample"]))
    assert made.status_code == 201, made.get_json()
    hook_id = made.get_json()["id"]
    with worker_in_thread(app, threading.Event()) as thread:
        try:
            wait_for(lambda: alive(app), "the worker's heartbeat")
            first = client.post("/api/entity", headers=ADMIN, json={
                "entities": [{"eClass": "Sample", "name": "held by the receiver"}]})
            assert first.status_code == 201, first.get_json()
            wait_for(lambda: receiver.requests, "the delivery to reach the receiver")
            second = client.post("/api/entity", headers=ADMIN, json={
                "entities": [{"eClass": "Sample", "name": "indexed meanwhile"}]})
            assert second.status_code == 201, second.get_json()
            wait_for(lambda: client_found(app, "meanwhile") == {"indexed meanwhile"},
                     "the search lane to index while the receiver holds the webhooks lane")
            assert not held.is_set() and len(receiver.requests) == 1
            held.set()  # the held request now ends without an answer: that attempt fails
            wait_for(lambda: log_of(app, hook_id), "the held attempt to be logged")
        finally:
            held.set()
    assert not thread.is_alive()
    assert log_of(app, hook_id)[0].status == "failed"
