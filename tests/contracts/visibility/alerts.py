"""Alert rules in the matrix (issue 23): a rule is seen and changed by its owner and ADMIN,
404 like an unknown id for everyone else; what a rule matches is answered as the caller
may read it; and an evaluation tells each recipient only of the items they may read, naming
the rule's owner. Issue 32: a dashboard's alerts widget may name only a rule the caller may
read (400 like an unknown rule otherwise), and a rule may address only whom its owner may
(decisions §16 "who may address whom": 403 naming the recipient otherwise). Issue 33: a
recipient the caller may not even name (a project they cannot read) is refused as one that
does not exist (400), as a share is.

The rules of :data:`RULES` are made by their owners the first time a path needs them (they
live in tables of their own, so the entity expectations of the world are untouched); write
paths work on fresh copies.
"""
from __future__ import annotations

import json
from typing import Any

from labapp.alerts.evaluate import evaluate
from labapp.alerts.wording import noun
from tests.contracts.visibility import oracle
from tests.contracts.visibility.boards import (
    PARTIES,
    _like_unknown,
    may_name,
    naming,
    refused_like_unknown,
)
from tests.contracts.visibility.build import LiveWorld
from tests.contracts.visibility.owned import OwnedThings
from tests.contracts.visibility.paths import (
    UNKNOWN_ID,
    MatrixPath,
    Outcome,
    hidden_like_unknown,
)
from tests.contracts.visibility.world import GRANTS, USER_BY_ID, USERS

RULES = {"R-ALICE": "alice", "R-BOB": "bob", "R-CAROL": "carol", "R-ADMIN": "admin"}
TOLD = "Every sample"
ACTIVE = tuple(user.id for user in USERS if user.active)


def _body(name: str, owner: str) -> dict[str, Any]:
    return {"name": name, "eClass": "Sample", "filter": None,
            "recipients": {"userIDs": [owner]}, "channels": ["bell"], "cadence": "immediate"}


ALERT_RULES = OwnedThings("/api/alert-rule", RULES, _body)
RULE_KEYS = ALERT_RULES.keys


def matches(live: LiveWorld, caller: str, key: str) -> Outcome:
    """The samples the rule (every sample) matches, as the caller may read them."""
    ALERT_RULES.ensure(live)
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
    return oracle.visible_keys(caller, "Sample") if ALERT_RULES.sees(caller, key) else 404


def change(live: LiveWorld, caller: str, key: str) -> Outcome:
    ALERT_RULES.ensure(live)
    copy = ALERT_RULES.make(live, key)
    url = f"/api/alert-rule/{copy['id']}"
    body = {**_body("changed", RULES[key])}
    response = live.client(caller).put(url, json=body)
    if response.status_code == 404:
        return _like_unknown(live, caller, "PUT", url, copy["id"], response.get_json(),
                             json=body)
    return response.status_code


def remove(live: LiveWorld, caller: str, key: str) -> Outcome:
    ALERT_RULES.ensure(live)
    copy = ALERT_RULES.make(live, key)
    url = f"/api/alert-rule/{copy['id']}"
    response = live.client(caller).delete(url)
    if response.status_code != 204:
        assert live.client(RULES[key]).delete(url).status_code == 204
    if response.status_code == 404:
        return _like_unknown(live, caller, "DELETE", url, copy["id"], response.get_json())
    return response.status_code


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
    return (f"{TOLD}: {noun('Sample', count)} · rule of Administrator (admin)" if count
            else None)


def _board(rule_id: str) -> dict[str, Any]:
    return {"name": "Alerts", "widgets": [
        {"plugin": {"app": "labapp", "plugin": "alerts"},
         "gridster": {"x": 0, "y": 0, "cols": 6, "rows": 4}, "config": {"ruleID": rule_id}}],
        "shares": {}}


def widget(live: LiveWorld, caller: str, key: str) -> Outcome:
    """A dashboard of the caller's whose alerts widget names the rule: stored (201), or 400
    exactly as for a rule that never existed."""
    ALERT_RULES.ensure(live)
    client = live.client(caller)
    response = client.post("/api/dashboard", json=_board(live.id(key)))
    if response.status_code == 201:
        assert client.delete(f"/api/dashboard/{response.get_json()['id']}").status_code == 204
    elif response.status_code == 400:
        unknown = client.post("/api/dashboard", json=_board(UNKNOWN_ID)).get_json()
        if json.dumps(unknown).replace(UNKNOWN_ID, live.id(key)) != json.dumps(
                response.get_json()):
            return ("400 unlike an unknown rule", response.get_json(), unknown)
    return response.status_code


def expect_widget(caller: str, key: str) -> Outcome:
    return 201 if ALERT_RULES.sees(caller, key) else 400


def _project_members(project: str) -> set[str]:
    granted = [grant for grant in GRANTS if grant.on == "project" and grant.target == project]
    return {user.id for user in USERS for grant in granted
            if grant.user == user.id or (grant.department and grant.department == user.home)}


def may_address(caller: str, addressee: str) -> bool:
    """Decisions §16: themselves, the departments they belong to or write (and their
    users), the projects they write (and their members); anything else needs ADMIN."""
    mine = oracle.reach(caller)
    assert mine is not None
    kind, _, target = addressee.partition(":")
    if mine.admin:
        return True
    if kind == "user":
        return (target == caller or USER_BY_ID[target].home in mine.write_departments
                or any(target in _project_members(project) for project in mine.write_projects))
    if kind == "department":
        return target in mine.write_departments
    if kind == "project":
        return target in mine.write_projects
    return False


def address(live: LiveWorld, caller: str, addressee: str) -> Outcome:
    """A rule of the caller's addressing one recipient: made (201, then deleted), 403 naming
    that recipient, or 400 exactly as for a recipient that does not exist."""
    kind, _, _ = addressee.partition(":")
    client = live.client(caller)
    recipients = naming(live, addressee)
    body = {**_body("addressing", caller), "recipients": recipients}
    response = client.post("/api/alert-rule", json=body)
    if response.status_code == 201:
        assert client.delete(f"/api/alert-rule/{response.get_json()['id']}").status_code == 204
    elif response.status_code == 403:
        problem = response.get_json()
        [named] = [value for values in recipients.values() for value in values]
        if f"{kind} {named!r}" not in problem["detail"]:
            return ("403 not naming the recipient", problem)
    elif response.status_code == 400:
        return refused_like_unknown(live, caller, "/api/alert-rule", addressee, body,
                                    "recipients", response)
    return response.status_code


def expect_address(caller: str, addressee: str) -> Outcome:
    if may_address(caller, addressee):
        return 201
    return 403 if may_name(caller, addressee) else 400


ALERT_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("alert-rule.list", ("all",), ALERT_RULES.expect_listed, ALERT_RULES.listed),
    MatrixPath("alert-rule.get", RULE_KEYS, ALERT_RULES.expect(200), ALERT_RULES.read),
    MatrixPath("alert-rule.matches", RULE_KEYS, expect_matches, matches),
)
ALERT_WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("alert-rule.update", RULE_KEYS, ALERT_RULES.expect(200), change),
    MatrixPath("alert-rule.delete", RULE_KEYS, ALERT_RULES.expect(204), remove),
    MatrixPath("alert-rule.told", ("mine",), expect_told, told),
    MatrixPath("alert-rule.widget", RULE_KEYS, expect_widget, widget),
    MatrixPath("alert-rule.address", PARTIES, expect_address, address),
)
