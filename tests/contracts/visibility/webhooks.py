"""Webhooks in the matrix (issue 36 §3): a webhook, its delivery log and its ping are its
owner's and ADMIN's; everyone else gets the 404 of an unknown id. What a webhook delivers is
what its owner may read (tests/webhooks/test_delivery.py: the change feed's one rule).

The webhooks of :data:`HOOKS` are made by their owners the first time a path needs them;
write paths work on fresh copies.
"""
from __future__ import annotations

from typing import Any

from tests.contracts.visibility.boards import _like_unknown
from tests.contracts.visibility.build import LiveWorld
from tests.contracts.visibility.owned import OwnedThings
from tests.contracts.visibility.paths import MatrixPath, Outcome

HOOKS = {"W-ALICE": "alice", "W-BOB": "bob", "W-CAROL": "carol", "W-ADMIN": "admin"}


def _body(name: str, _owner: str) -> dict[str, Any]:
    return {"name": name, "url": "https://receiver.example.org/labapp",
            "eClasses": ["Sample"]}


WEBHOOKS = OwnedThings("/api/webhook", HOOKS, _body)


def deliveries(live: LiveWorld, caller: str, key: str) -> Outcome:
    return WEBHOOKS.read(live, caller, key, "/deliveries")


def _write(live: LiveWorld, caller: str, key: str, method: str, tail: str,
           body: dict[str, Any] | None = None) -> Outcome:
    WEBHOOKS.ensure(live)
    copy = WEBHOOKS.make(live, key)
    url = f"/api/webhook/{copy['id']}{tail}"
    response = live.client(caller).open(method, url, json=body)
    outcome: Outcome = response.status_code
    if response.status_code == 404:
        outcome = _like_unknown(live, caller, method, url, copy["id"], response.get_json(),
                                json=body)
    if method != "DELETE" or response.status_code != 204:
        assert live.client(HOOKS[key]).delete(f"/api/webhook/{copy['id']}").status_code == 204
    return outcome


def change(live: LiveWorld, caller: str, key: str) -> Outcome:
    return _write(live, caller, key, "PUT", "", _body("changed", HOOKS[key]))


def remove(live: LiveWorld, caller: str, key: str) -> Outcome:
    return _write(live, caller, key, "DELETE", "")


def ping(live: LiveWorld, caller: str, key: str) -> Outcome:
    return _write(live, caller, key, "POST", "/ping")


def rotate(live: LiveWorld, caller: str, key: str) -> Outcome:
    return _write(live, caller, key, "POST", "/secret")


WEBHOOK_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("webhook.list", ("all",), WEBHOOKS.expect_listed, WEBHOOKS.listed),
    MatrixPath("webhook.get", WEBHOOKS.keys, WEBHOOKS.expect(200), WEBHOOKS.read),
    MatrixPath("webhook.deliveries", WEBHOOKS.keys, WEBHOOKS.expect(200), deliveries),
)
WEBHOOK_WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("webhook.update", WEBHOOKS.keys, WEBHOOKS.expect(200), change),
    MatrixPath("webhook.delete", WEBHOOKS.keys, WEBHOOKS.expect(204), remove),
    MatrixPath("webhook.ping", WEBHOOKS.keys, WEBHOOKS.expect(202), ping),
    MatrixPath("webhook.secret", WEBHOOKS.keys, WEBHOOKS.expect(200), rotate),
)
