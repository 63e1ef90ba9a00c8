"""A resource read from the API can be written back (issue 20 §7, decisions §4).

Driven from ``/api/openapi.json``: every write operation it documents (``PUT``, ``PATCH``,
``POST``) is either a write-back of a resource some ``GET`` answers — then the test reads the
resource, changes one writable field, sends the whole answer back (read-only fields included)
and expects success and the change stored — or is named in :data:`NOT_WRITE_BACKS` with the
reason. A new write operation fails the coverage test until it is one or the other.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask

from tests.conftest import ApiClient
from tests.entities.conftest import admin, body_of, department, member, project, save  # noqa: F401

WRITE_METHODS = {"put", "patch", "post"}

# Write operations that do not send back a resource a GET answered, and why.
NOT_WRITE_BACKS = {
    "POST /api/alert-rule": "creates a new rule; PUT /api/alert-rule/{id} writes one back",
    "POST /api/auth/login": "an action: starts a login",
    "POST /api/auth/refresh": "an action: renews tokens",
    "POST /api/auth/logout": "an action: ends a login",
    "POST /api/dashboard": "creates a new dashboard; PUT /api/dashboard/{id} writes one back",
    "POST /api/entity/{eclass}/{entity_id}": "clones an entity; POST /api/entity writes back",
    "POST /api/file": "uploads file content",
    "POST /api/import": "uploads a file to import; the job is read, never written back",
    "POST /api/import/{job_id}/commit": "an action: queues the commit of a dry run",
    "POST /api/query/dataset": "a query, read only",
    "POST /api/saved-view": "creates a new saved view; PUT /api/saved-view/{id} writes one back",
    "POST /api/storage/location/checkout": "an action on stored items",
    "POST /api/storage/location/{location_id}/checkin": "an action on stored items",
    "POST /api/sync": "an action: applies the data model",
    "POST /api/sync/save": "an action: starts an export",
    "POST /api/user/password/change": "an action: the secret is never read",
    "POST /api/user/pat": "creates a token; a token is never changed",
    "PUT /api/userRole/assign": "an action on a user's roles",
    "PUT /api/userRole/revoke": "an action on a user's roles",
    "POST /api/webhook": "creates a new webhook; PUT /api/webhook/{id} writes one back",
    "POST /api/webhook/{hook_id}/ping": "an action: sends a ping",
    "POST /api/webhook/{hook_id}/secret": "an action: a new secret, shown once",
    "POST /api/webhook/{hook_id}/deliveries/{delivery_id}/redeliver":
        "an action: sends a past message again",
}


@dataclass(frozen=True)
class RoundTrip:
    """Where a resource is read, how it is found in the answer, and how it is written back."""

    read: str
    pick: Callable[[Any], dict[str, Any]]
    write: str
    field: str
    value: Any
    wrap: Callable[[dict[str, Any]], Any] = lambda resource: resource
    rejects_unknown: bool = True
    caller: ApiClient | None = None


def _with_id(resource_id: str) -> Callable[[Any], dict[str, Any]]:
    """Pick the item of a list answer (or of a page's ``data``) with ``id`` ``resource_id``."""

    def pick(answer: Any) -> dict[str, Any]:
        items = answer["data"] if isinstance(answer, dict) else answer
        return next(item for item in items if item["id"] == resource_id)

    return pick


def _whole(answer: Any) -> dict[str, Any]:
    return answer


@dataclass
class Lab:
    """The callers and factories a case sets its resource up with."""

    app: Flask
    admin: ApiClient
    member: Callable[..., ApiClient]
    department: Callable[..., str]
    project: Callable[..., str]


def _dashboard(lab: Lab) -> RoundTrip:
    created = body_of(lab.admin.post("/api/dashboard", json={"name": "Board"}), 201)
    return RoundTrip("/api/dashboard", _with_id(created["id"]),
                     f"/api/dashboard/{created['id']}", "name", "Renamed board")


def _saved_view(lab: Lab) -> RoundTrip:
    created = body_of(lab.admin.post("/api/saved-view", json={
        "name": "View", "eClass": "Sample", "filter": "status eq 'Initial'",
        "columns": ["name"], "orderby": "name desc"}), 201)
    url = f"/api/saved-view/{created['id']}"
    return RoundTrip(url, _whole, url, "name", "Renamed view")


def _alert_rule(lab: Lab) -> RoundTrip:
    created = body_of(lab.admin.post("/api/alert-rule", json={
        "name": "Rule", "eClass": "Sample", "filter": "amount le 5"}), 201)
    url = f"/api/alert-rule/{created['id']}"
    return RoundTrip(url, _whole, url, "name", "Renamed rule")


def _webhook(lab: Lab) -> RoundTrip:
    created = body_of(lab.admin.post("/api/webhook", json={
        "name": "Hook", "url": "https://receiver.example.org/labapp"}), 201)
    url = f"/api/webhook/{created['id']}"
    return RoundTrip(url, _whole, url, "name", "Renamed hook")


def _department_access(lab: Lab) -> RoundTrip:
    target = lab.department("Target")
    lab.member("grantee")
    body_of(lab.admin.post(f"/api/department/{target}/access",
                           json={"accessType": "Read", "userID": "grantee"}), 201)

    def pick(answer: Any) -> dict[str, Any]:
        return next(entry for entry in answer if entry["userID"] == "grantee")

    return RoundTrip(f"/api/department/{target}/access", pick,
                     f"/api/department/{target}/access", "accessType", "Write")


def _entity(lab: Lab) -> RoundTrip:
    sample = save(lab.admin, {"eClass": "Sample", "name": "Before"})[0]
    return RoundTrip(f"/api/entity/Sample/{sample['id']}", _whole, "/api/entity", "name",
                     "After", wrap=lambda resource: {"entities": [resource]})


def _notification(lab: Lab) -> RoundTrip:
    assignee = lab.member("assignee")
    save(lab.admin, {"eClass": "Request", "name": "R1", "assigneeID": "assignee"})
    return RoundTrip("/api/notification/unread", lambda answer: answer[0],
                     "/api/notification", "status", "Seen", caller=assignee)


def _project_rls(lab: Lab) -> RoundTrip:
    proj = lab.project("Vaccine")
    lab.member("grantee")
    body_of(lab.admin.post(f"/api/project/{proj}/rls",
                           json={"accessType": "Read", "userID": "grantee"}), 201)

    def pick(answer: Any) -> dict[str, Any]:
        return next(entry for entry in answer if entry["userID"] == "grantee")

    return RoundTrip(f"/api/project/{proj}/rls", pick, f"/api/project/{proj}/rls",
                     "accessType", "Write")


def _project_settings(lab: Lab) -> RoundTrip:
    proj = lab.project("Settled")
    path = f"/api/project/{proj}/settings/columns"
    body_of(lab.admin.post(path, json={"order": ["name"], "width": 3}), 200)
    return RoundTrip(path, _whole, path, "width", 4, rejects_unknown=False)


def _sequence(lab: Lab) -> RoundTrip:
    body_of(lab.admin.post("/api/sequence", json={"id": "RT", "prefix": "RT-"}), 201)
    return RoundTrip("/api/sequence", _with_id("RT"), "/api/sequence", "prefix", "RTX-")


def _location(lab: Lab) -> RoundTrip:
    location = body_of(lab.admin.post("/api/storage/location",
                                      json=[{"name": "Freezer"}]), 201)[0]
    return RoundTrip("/api/storage/location", _with_id(location["id"]),
                     "/api/storage/location", "name", "Fridge", wrap=lambda item: [item])


def _user(lab: Lab) -> RoundTrip:
    # A user who is not an administrator: departmentID and isActive come back unchanged.
    return RoundTrip("/api/user", _whole, "/api/user", "initials", "RT",
                     caller=lab.member("self"))


# Write operation → how to set up, read and write back its resource.
ROUND_TRIPS: dict[str, Callable[[Lab], RoundTrip]] = {
    "PUT /api/alert-rule/{rule_id}": _alert_rule,
    "PUT /api/dashboard/{dashboard_id}": _dashboard,
    "POST /api/department/{department_id}/access": _department_access,
    "POST /api/entity": _entity,
    "POST /api/notification": _notification,
    "POST /api/project/{project_id}/rls": _project_rls,
    "POST /api/project/{project_id}/settings/{settings_name}": _project_settings,
    "PUT /api/saved-view/{view_id}": _saved_view,
    "POST /api/sequence": _sequence,
    "POST /api/storage/location": _location,
    "PUT /api/user": _user,
    "PUT /api/webhook/{hook_id}": _webhook,
}


def _write_operations(document: dict[str, Any]) -> set[str]:
    return {f"{method.upper()} {path}" for path, item in document["paths"].items()
            for method in item if method in WRITE_METHODS}


@pytest.fixture
def lab(app: Flask, admin: ApiClient, member: Callable[..., ApiClient],  # noqa: F811
        department: Callable[..., str], project: Callable[..., str]) -> Lab:  # noqa: F811
    return Lab(app, admin, member, department, project)


def test_every_write_operation_is_a_round_trip_or_says_why_not(admin: ApiClient) -> None:  # noqa: F811
    document = body_of(admin.get("/api/openapi.json"), 200)
    operations = _write_operations(document)
    assert operations - set(ROUND_TRIPS) - set(NOT_WRITE_BACKS) == set()
    assert (set(ROUND_TRIPS) | set(NOT_WRITE_BACKS)) - operations == set()
    assert set(ROUND_TRIPS).isdisjoint(NOT_WRITE_BACKS)


@pytest.mark.parametrize("operation", sorted(ROUND_TRIPS))
def test_a_resource_read_can_be_changed_and_sent_back(lab: Lab, operation: str) -> None:
    method = operation.split(" ", 1)[0]
    trip = ROUND_TRIPS[operation](lab)
    caller = trip.caller or lab.admin
    resource = trip.pick(body_of(caller.get(trip.read), 200))
    assert resource[trip.field] != trip.value
    if trip.rejects_unknown:
        stray = trip.wrap({**resource, "noSuchField": 1})
        assert caller.open(method, trip.write, json=stray).status_code == 400
    answer = caller.open(method, trip.write, json=trip.wrap({**resource, trip.field: trip.value}))
    assert answer.status_code in (200, 201), answer.get_data(as_text=True)
    stored = trip.pick(body_of(caller.get(trip.read), 200))
    assert stored[trip.field] == trip.value
    assert {key for key in stored if key != trip.field} >= set(resource) - {trip.field}
