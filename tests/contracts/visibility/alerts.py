"""Alert rules in the matrix (issue 23): a rule is seen and changed by its owner and ADMIN,
404 like an unknown id for everyone else; what a rule matches is answered as the caller
may read it; and an evaluation tells each recipient only of the items they may read.

The rules of :data:`RULES` are made by their owners the first time a path needs them (they
live in tables of their own, so the entity expectations of the world are untouched); write
paths work on fresh copies.
"""
from __future__ import annotations

from typing import Any

from labapp.alerts.evaluate import evaluate
from labapp.alerts.wording import noun
from tests.contracts.visibility import oracle
from tests.contracts.visibility.boards import _like_unknown
from tests.contracts.visibility.build import LiveWorld
from tests.contracts.visibility.paths import MatrixPath, Outcome, hidden_like_unknown
from tests.contracts.visibility.world import USERS

RULES = {"R-ALICE": "alice", "R-BOB": "bob", "R-CAROL": "carol", "R-ADMIN": "admin"}
RULE_KEYS = tuple(RULES)
_MADE = "alert-rules-made"
TOLD = "Every sample"
ACTIVE = tuple(user.id for user in USERS if user.active)


def _body(name: str, owner: str) -> dict[str, Any]:
    return {"name": name, "eClass": "Sample", "filter": None,
            "recipients": {"userIDs": [owner]}, "channels": ["bell"], "cadence": "immediate"}


def _made(live: LiveWorld, key: str) -> dict[str, Any]:
    response = live.client(RULES[key]).post("/api/alert-rule", json=_body(key, RULES[key]))
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()


def ensure_rules(live: LiveWorld) -> None:
    """Make the world's rules once (their ids join the world's keys)."""
    if _MADE in live.ids:
        return
    for key in RULE_KEYS:
        made = _made(live, key)
        live.ids[key] = made["id"]
        live.keys[made["id"]] = key
    live.ids[_MADE] = _MADE


def sees(caller: str, key: str) -> bool:
    mine = oracle.reach(caller)
    return mine is not None and (mine.admin or RULES[key] == caller)


def listed(live: LiveWorld, caller: str, _subject: str) -> Outcome:
    ensure_rules(live)
    status, body = live.get_json(caller, "/api/alert-rule")
    return frozenset(live.key(item["id"]) for item in body) if status == 200 else status


def expect_listed(caller: str, _subject: str) -> Outcome:
    return frozenset(key for key in RULE_KEYS if sees(caller, key))


def get_one(live: LiveWorld, caller: str, key: str) -> Outcome:
    ensure_rules(live)
    url = f"/api/alert-rule/{live.id(key)}"
    status, body = live.get_json(caller, url)
    if status == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), body)
    return status


def expect_seen(caller: str, key: str) -> Outcome:
    return 200 if sees(caller, key) else 404


def matches(live: LiveWorld, caller: str, key: str) -> Outcome:
    """The samples the rule (every sample) matches, as the caller may read them."""
    ensure_rules(live)
    url = f"/api/alert-rule/{live.id(key)}/matches?top=500"
    status, body = live.get_json(caller, url)
    if status == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), body)
    if status != 200:
        return status
    if body["count"] != len(body["items"]):
        return ("count unlike the items", body["count"], len(body["items"]))
    return frozenset(live.key(item["id"]) for item in body["items"])


def expect_matches(caller: str, key: str) -> Outcome:
    return oracle.visible_keys(caller, "Sample") if sees(caller, key) else 404


def change(live: LiveWorld, caller: str, key: str) -> Outcome:
    ensure_rules(live)
    copy = _made(live, key)
    url = f"/api/alert-rule/{copy['id']}"
    body = {**_body("changed", RULES[key])}
    response = live.client(caller).put(url, json=body)
    if response.status_code == 404:
        return _like_unknown(live, caller, "PUT", url, copy["id"], response.get_json(),
                             json=body)
    return response.status_code


def expect_change(caller: str, key: str) -> Outcome:
    return 200 if sees(caller, key) else 404


def remove(live: LiveWorld, caller: str, key: str) -> Outcome:
    ensure_rules(live)
    copy = _made(live, key)
    url = f"/api/alert-rule/{copy['id']}"
    response = live.client(caller).delete(url)
    if response.status_code != 204:
        assert live.client(RULES[key]).delete(url).status_code == 204
    if response.status_code == 404:
        return _like_unknown(live, caller, "DELETE", url, copy["id"], response.get_json())
    return response.status_code


def expect_remove(caller: str, key: str) -> Outcome:
    return 204 if sees(caller, key) else 404


def told(live: LiveWorld, caller: str, _subject: str) -> Outcome:
    """The admin's rule "every sample" (of the world) tells every active user; one
    evaluation, then the count of samples the caller's Alert says (none: not told)."""
    if "alert-told" not in live.ids:
        # The world's samples only: write paths run before may have added samples of their own.
        ids = ", ".join(f"'{live.id(entity.key)}'" for entity in oracle.ENTITIES
                        if entity.eclass == "Sample")
        response = live.client("admin").post("/api/alert-rule", json={
            **_body(TOLD, "admin"), "filter": f"id in ({ids})",
            "recipients": {"userIDs": list(ACTIVE)}})
        assert response.status_code == 201, response.get_data(as_text=True)
        live.ids["alert-told"] = response.get_json()["id"]
        with live.app.app_context():
            evaluate()
    status, body = live.get_json(caller, "/api/notification/unread")
    if status != 200:
        return status
    said = [item["message"] for item in body
            if item["kind"] == "Alert" and item["subjectID"] == live.ids["alert-told"]]
    if len(said) > 1:
        return ("told twice", said)
    return said[0] if said else None


def expect_told(caller: str, _subject: str) -> Outcome:
    count = len(oracle.visible_keys(caller, "Sample"))
    return f"{TOLD}: {noun('Sample', count)}" if count else None


ALERT_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("alert-rule.list", ("all",), expect_listed, listed),
    MatrixPath("alert-rule.get", RULE_KEYS, expect_seen, get_one),
    MatrixPath("alert-rule.matches", RULE_KEYS, expect_matches, matches),
)
ALERT_WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("alert-rule.update", RULE_KEYS, expect_change, change),
    MatrixPath("alert-rule.delete", RULE_KEYS, expect_remove, remove),
    MatrixPath("alert-rule.told", ("mine",), expect_told, told),
)
