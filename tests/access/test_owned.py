"""The rule every owned thing follows (labapp/access/owned.py, decisions §12 and §16), tried
on its three kinds through the same cases: dashboards, saved views and alert rules.

The owner and ADMIN read and change a thing; a dashboard or a saved view is also read by
whoever it is shared with (a user, the members of a department, the readers of a project,
the holders of a role), who may not change it (403); an alert rule is shared with nobody:
its recipients are told of what it matches but are answered, like everyone else, as for an
id that never existed (404). The owner deletes; ADMIN deletes only an alert rule. Every 404
is word for word the answer for an unknown id. A party one may not see (a project one cannot
read) is refused as one that does not exist; a party the thing already names is kept.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import delete

from labapp.db import db, transaction
from labapp.model.access import ProjectAccess
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import Grants, body_of

UNKNOWN = "0" * 32
NOTE = {"plugin": {"app": "labapp", "plugin": "note"},
        "gridster": {"x": 0, "y": 0, "cols": 6, "rows": 2}, "config": {"markdown": "hi"}}


@dataclass(frozen=True)
class Kind:
    """One kind of owned thing as the API serves it."""

    name: str
    url: str
    owner_field: str
    parties_field: str  # "shares" or "recipients"
    shared: bool
    admin_deletes: bool

    def body(self, name: str, parties: dict[str, list[str]] | None = None) -> dict[str, Any]:
        listed = {"userIDs": [], "departmentIDs": [], "projectIDs": [], "userRoles": [],
                  **(parties or {})}
        if self.name == "dashboard":
            return {"name": name, "widgets": [NOTE], "shares": listed}
        if self.name == "saved view":
            return {"name": name, "eClass": "Sample", "shares": listed}
        return {"name": name, "eClass": "Sample", "filter": None, "recipients": listed,
                "channels": ["bell"], "cadence": "immediate"}

    def read_url(self, thing_id: str) -> str:
        """Where one thing is read: a dashboard has no GET of its own, its widgets do."""
        if self.name == "dashboard":
            return f"{self.url}/{thing_id}/widget/0"
        return f"{self.url}/{thing_id}"


KINDS = (Kind("dashboard", "/api/dashboard", "userID", "shares", True, False),
         Kind("saved view", "/api/saved-view", "userID", "shares", True, False),
         Kind("alert rule", "/api/alert-rule", "ownerID", "recipients", False, True))
CALLERS = ("owner", "shared user", "department member", "project member", "role holder",
           "stranger", "admin")
USER_OF = {"owner": "olga", "shared user": "sam", "department member": "dora",
           "project member": "pete", "role holder": "rita", "stranger": "stan"}


def reads(kind: Kind, caller: str) -> bool:
    return caller in ("owner", "admin") or (kind.shared and caller != "stranger")


def expected_update(kind: Kind, caller: str) -> int:
    if caller in ("owner", "admin"):
        return 200
    return 403 if reads(kind, caller) else 404


def expected_delete(kind: Kind, caller: str) -> int:
    if caller == "owner" or (caller == "admin" and kind.admin_deletes):
        return 204
    return 403 if reads(kind, caller) else 404


@dataclass
class Lab:
    """Olga owns the things; each other caller is one way of being shared with (or not)."""

    clients: dict[str, ApiClient]
    parties: dict[str, list[str]]
    vaccine: str
    secret: str


@pytest.fixture
def lab(app: Flask, admin: ApiClient, member: Callable[..., ApiClient],
        make_user: Callable[..., str], department: Callable[..., str],
        project: Callable[..., str], grant: Grants) -> Lab:
    """Olga (Physics) shares with sam (a user), Biology (dora's home), the Vaccine project
    (pete reads it) and DATA_MANAGER (rita). Olga may address them all by an alert rule: she
    holds Write on Chemistry (sam's home), Biology and Vaccine. Stan is a stranger; nobody
    but the admin sees the Secret project."""
    physics, chemistry, biology, geology = (department(name) for name in (
        "Physics", "Chemistry", "Biology", "Geology"))
    vaccine, secret = project("Vaccine"), project("Secret")
    olga = member("olga", department_id=physics)
    for user, home, roles in (("sam", chemistry, ()), ("dora", biology, ()),
                              ("pete", geology, ()), ("rita", geology, ("DATA_MANAGER",)),
                              ("stan", geology, ())):
        make_user(user, department_id=home, roles=roles)
    grant.project(vaccine, "Read", user="pete")
    grant.project(vaccine, "Write", user="olga")
    grant.department(chemistry, "Write", user="olga")
    grant.department(biology, "Write", user="olga")
    return Lab({"owner": olga, "admin": admin},
               {"userIDs": ["sam"], "departmentIDs": [biology], "projectIDs": [vaccine],
                "userRoles": ["DATA_MANAGER"]}, vaccine, secret)


def client_of(lab: Lab, api_as: Callable[..., ApiClient], caller: str) -> ApiClient:
    if caller not in lab.clients:
        lab.clients[caller] = api_as(USER_OF[caller])
    return lab.clients[caller]


def made(kind: Kind, lab: Lab, name: str = "Olga's") -> dict[str, Any]:
    """A thing of olga's naming every party (an alert rule: those she may address)."""
    parties = dict(lab.parties)
    if not kind.shared:
        parties["userRoles"] = []  # a role is beyond a member's reach (decisions §16)
    return body_of(lab.clients["owner"].post(kind.url, json=kind.body(name, parties)), 201)


def like_unknown(api: ApiClient, method: str, url: str, thing_id: str, response: Any,
                 **kwargs: Any) -> None:
    """``response`` is a 404 word for word as ``method url`` of an unknown id answers."""
    problem = assert_problem(response, 404, "not_found")
    unknown = api.open(method, url.replace(thing_id, UNKNOWN), **kwargs)
    assert unknown.status_code == 404
    assert json.dumps(unknown.get_json()).replace(UNKNOWN, thing_id) == json.dumps(problem)


def check_read(kind: Kind, caller: str, api: ApiClient, thing: dict[str, Any]) -> None:
    """The caller reads the thing and lists it, or gets the 404 of an unknown id and does
    not list it."""
    response = api.get(kind.read_url(thing["id"]))
    listed = [item["id"] for item in body_of(api.get(kind.url), 200)]
    if not reads(kind, caller):
        like_unknown(api, "GET", kind.read_url(thing["id"]), thing["id"], response)
        assert thing["id"] not in listed
        return
    assert response.status_code == 200, response.get_data(as_text=True)
    assert thing["id"] in listed
    if kind.name != "dashboard":
        seen = response.get_json()
        assert seen["canWrite"] is (caller in ("owner", "admin"))
        assert seen[kind.owner_field] == "olga"


def check_change(kind: Kind, caller: str, api: ApiClient, owner: ApiClient,
                 thing: dict[str, Any]) -> dict[str, Any]:
    """The caller changes the thing sent back as read (200), or gets 403 or the 404 of an
    unknown id and changes nothing; returns the thing as it is now."""
    url = f"{kind.url}/{thing['id']}"
    sent = {**thing, "name": f"Renamed by {caller}"}
    response = api.put(url, json=sent)
    assert response.status_code == expected_update(kind, caller), \
        f"PUT: {response.get_data(as_text=True)}"
    [now] = [item for item in body_of(owner.get(kind.url), 200) if item["id"] == thing["id"]]
    if response.status_code == 200:
        assert now["name"] == sent["name"] and now[kind.owner_field] == "olga"
        return now
    assert now == thing, "a refused change changes nothing"
    if response.status_code == 403:
        assert_problem(response, 403, "forbidden")
        assert response.get_json()["detail"] == (
            f"Only the owner or ADMIN may change {kind.name} {thing['id']!r}.")
    else:
        like_unknown(api, "PUT", url, thing["id"], response, json=sent)
    return now


def check_delete(kind: Kind, caller: str, api: ApiClient, owner: ApiClient,
                 thing: dict[str, Any]) -> None:
    """The caller deletes the thing (gone for its owner too), or gets 403 or the 404 of an
    unknown id and the thing stays."""
    url = f"{kind.url}/{thing['id']}"
    response = api.delete(url)
    assert response.status_code == expected_delete(kind, caller), \
        f"DELETE: {response.get_data(as_text=True)}"
    still = thing["id"] in [item["id"] for item in body_of(owner.get(kind.url), 200)]
    assert still is (response.status_code != 204)
    if response.status_code == 403:
        assert_problem(response, 403, "forbidden")
        who = "the owner or ADMIN" if kind.admin_deletes else "the owner"
        assert response.get_json()["detail"] == (
            f"Only {who} may delete {kind.name} {thing['id']!r}.")
    elif response.status_code == 404:
        like_unknown(api, "DELETE", url, thing["id"], response)
    else:
        read = kind.read_url(thing["id"])
        like_unknown(owner, "GET", read, thing["id"], owner.get(read))


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_who_reads_changes_and_deletes(kind: Kind, caller: str, lab: Lab,
                                       api_as: Callable[..., ApiClient]) -> None:
    thing = made(kind, lab)
    api, owner = client_of(lab, api_as, caller), lab.clients["owner"]
    check_read(kind, caller, api, thing)
    thing = check_change(kind, caller, api, owner, thing)
    check_delete(kind, caller, api, owner, thing)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_the_owner_is_the_maker_and_never_changes(kind: Kind, lab: Lab) -> None:
    olga, admin = lab.clients["owner"], lab.clients["admin"]
    thing = body_of(olga.post(kind.url, json={**kind.body("Mine"), kind.owner_field: "stan"}),
                    201)
    assert thing[kind.owner_field] == "olga"
    url = f"{kind.url}/{thing['id']}"
    for api in (olga, admin):
        answer = body_of(api.put(url, json={**thing, kind.owner_field: "stan"}), 200)
        assert answer[kind.owner_field] == "olga"


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_project_the_saver_cannot_read_is_unknown(kind: Kind, lab: Lab) -> None:
    olga = lab.clients["owner"]
    before = body_of(olga.get(kind.url), 200)
    secret = olga.post(kind.url, json=kind.body("Secret", {"projectIDs": [lab.secret]}))
    unknown = olga.post(kind.url, json=kind.body("Secret", {"projectIDs": ["NO-SUCH"]}))
    problem = assert_problem(secret, 400, secret.get_json()["code"], errors=True)
    assert [error["field"] for error in problem["errors"]] == [
        f"{kind.parties_field}.projectIDs"]
    assert json.dumps(problem).replace(lab.secret, "NO-SUCH") == json.dumps(unknown.get_json())
    assert body_of(olga.get(kind.url), 200) == before, "nothing written"
    # ADMIN sees every project, so may name it.
    admins = lab.clients["admin"]
    if kind.shared:
        body_of(admins.post(kind.url, json=kind.body("Secret", {"projectIDs": [lab.secret]})),
                201)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_project_named_already_is_kept_when_sent_back(app: Flask, kind: Kind,
                                                        lab: Lab) -> None:
    """Olga named Vaccine while she could; her grant is taken back. Sent back as read, the
    thing keeps it (an alert rule then answers that it is beyond her reach, §16, never that
    it is unknown); a project she cannot see added beside it, or Vaccine named anew
    elsewhere, is unknown."""
    thing = made(kind, lab)
    with app.app_context(), transaction():
        db.session.execute(delete(ProjectAccess).where(ProjectAccess.user_id == "olga"))
    olga = lab.clients["owner"]
    url = f"{kind.url}/{thing['id']}"
    parties = {**thing[kind.parties_field], "projectIDs": [lab.vaccine, lab.secret]}
    widened = olga.put(url, json={**thing, kind.parties_field: parties})
    problem = assert_problem(widened, 400, widened.get_json()["code"], errors=True)
    assert problem["errors"] == [{"field": f"{kind.parties_field}.projectIDs",
                                  "message": f"unknown {lab.secret!r}"}], "kept: Vaccine only"
    response = olga.put(url, json={**thing, "name": "Kept"})
    if kind.shared:
        assert body_of(response, 200)[kind.parties_field]["projectIDs"] == [lab.vaccine]
    else:
        problem = assert_problem(response, 403, "recipient_out_of_reach", errors=True)
        assert f"project {lab.vaccine!r}" in problem["detail"]
    anew = olga.post(kind.url, json=kind.body("Anew", {"projectIDs": [lab.vaccine]}))
    problem = assert_problem(anew, 400, anew.get_json()["code"], errors=True)
    assert problem["errors"] == [{"field": f"{kind.parties_field}.projectIDs",
                                  "message": f"unknown {lab.vaccine!r}"}]


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_hostile_parties_are_a_400_naming_them(kind: Kind, lab: Lab) -> None:
    """As many parties as a list holds, none real, with control characters: a 400 naming
    each list, nothing written, never a 500."""
    olga = lab.clients["owner"]
    before = body_of(olga.get(kind.url), 200)
    parties = {"userIDs": ["olga\r\nBcc: x", "\u2028"],
               "projectIDs": [f"P-{index}\t" for index in range(500)]}
    response = olga.post(kind.url, json=kind.body("Hostile", parties))
    problem = assert_problem(response, 400, response.get_json()["code"], errors=True)
    fields = {error["field"] for error in problem["errors"]}
    assert fields == {f"{kind.parties_field}.userIDs", f"{kind.parties_field}.projectIDs"}
    assert len(problem["errors"]) == 502
    too_many = olga.post(kind.url, json=kind.body("Hostile", {"userIDs": ["x"] * 501}))
    assert_problem(too_many, 400, "validation_failed", errors=True)
    assert body_of(olga.get(kind.url), 200) == before
