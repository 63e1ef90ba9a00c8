"""Webhooks in the matrix (issue 36 §3): a webhook, its delivery log and its ping are its
owner's and ADMIN's; everyone else gets the 404 of an unknown id. What a webhook delivers is
what its owner may read (tests/webhooks/test_delivery.py: the change feed's one rule).

The webhooks of :data:`HOOKS` are made by their owners the first time a path needs them;
write paths work on fresh copies.
"""
from __future__ import annotations

from typing import Any

from tests.contracts.visibility import oracle
from tests.contracts.visibility.boards import _like_unknown
from tests.contracts.visibility.build import LiveWorld
from tests.contracts.visibility.paths import MatrixPath, Outcome, hidden_like_unknown

HOOKS = {"W-ALICE": "alice", "W-BOB": "bob", "W-CAROL": "carol", "W-ADMIN": "admin"}
HOOK_KEYS = tuple(HOOKS)
_MADE = "webhooks-made"


def _body(name: str) -> dict[str, Any]:
    return {"name": name, "url": "https://receiver.example.org/labapp",
            "eClasses": ["Sample"]}


def _made(live: LiveWorld, key: str) -> dict[str, Any]:
    response = live.client(HOOKS[key]).post("/api/webhook", json=_body(key))
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()


def ensure_hooks(live: LiveWorld) -> None:
    """Make the world's webhooks once (their ids join the world's keys)."""
    if _MADE in live.ids:
        return
    for key in HOOK_KEYS:
        made = _made(live, key)
        live.ids[key] = made["id"]
        live.keys[made["id"]] = key
    live.ids[_MADE] = _MADE


def sees(caller: str, key: str) -> bool:
    mine = oracle.reach(caller)
    return mine is not None and (mine.admin or HOOKS[key] == caller)


def listed(live: LiveWorld, caller: str, _subject: str) -> Outcome:
    ensure_hooks(live)
    status, body = live.get_json(caller, "/api/webhook")
    return frozenset(live.key(item["id"]) for item in body) if status == 200 else status


def expect_listed(caller: str, _subject: str) -> Outcome:
    return frozenset(key for key in HOOK_KEYS if sees(caller, key))


def _read(live: LiveWorld, caller: str, key: str, tail: str) -> Outcome:
    ensure_hooks(live)
    url = f"/api/webhook/{live.id(key)}{tail}"
    status, body = live.get_json(caller, url)
    if status == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), body)
    return status


def get_one(live: LiveWorld, caller: str, key: str) -> Outcome:
    return _read(live, caller, key, "")


def deliveries(live: LiveWorld, caller: str, key: str) -> Outcome:
    return _read(live, caller, key, "/deliveries")


def expect_seen(caller: str, key: str) -> Outcome:
    return 200 if sees(caller, key) else 404


def _write(live: LiveWorld, caller: str, key: str, method: str, tail: str,
           body: dict[str, Any] | None = None) -> Outcome:
    ensure_hooks(live)
    copy = _made(live, key)
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
    return _write(live, caller, key, "PUT", "", _body("changed"))


def remove(live: LiveWorld, caller: str, key: str) -> Outcome:
    return _write(live, caller, key, "DELETE", "")


def ping(live: LiveWorld, caller: str, key: str) -> Outcome:
    return _write(live, caller, key, "POST", "/ping")


def rotate(live: LiveWorld, caller: str, key: str) -> Outcome:
    return _write(live, caller, key, "POST", "/secret")


def expect(status: int) -> Any:
    def expected(caller: str, key: str) -> Outcome:
        return status if sees(caller, key) else 404
    return expected


WEBHOOK_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("webhook.list", ("all",), expect_listed, listed),
    MatrixPath("webhook.get", HOOK_KEYS, expect_seen, get_one),
    MatrixPath("webhook.deliveries", HOOK_KEYS, expect_seen, deliveries),
)
WEBHOOK_WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("webhook.update", HOOK_KEYS, expect(200), change),
    MatrixPath("webhook.delete", HOOK_KEYS, expect(204), remove),
    MatrixPath("webhook.ping", HOOK_KEYS, expect(202), ping),
    MatrixPath("webhook.secret", HOOK_KEYS, expect(200), rotate),
)
