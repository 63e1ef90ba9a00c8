"""The storage paths of the matrix (issue 11): locations, their parents, children and log
answer only what the caller may see (a hidden location exactly like an unknown one), counts
stay true, and check-in, check-out and location creation succeed exactly where the rule
allows."""
from __future__ import annotations

from typing import Any

from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld
from tests.contracts.visibility.paths import (
    MatrixPath,
    Outcome,
    hidden_like_unknown,
    paged_keys,
    placement,
)
from tests.contracts.visibility.world import ENTITIES, ENTITY, STORED_IN, EntityDef
from tests.contracts.visibility.writes import HOME, TARGETS, expect_create

LOCATIONS = tuple(entity.key for entity in ENTITIES if entity.eclass == "Location")
BASE = "/api/storage/location"


def _location_get(live: LiveWorld, caller: str, key: str, suffix: str) -> tuple[int, Any]:
    url = f"{BASE}/{live.id(key)}{suffix}"
    status, body = live.get_json(caller, url)
    if status == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), body), body
    return status, body


def _parent_chain(key: str) -> list[str]:
    chain = []
    parent = ENTITY[key].payload.get("parentID")
    while parent:
        chain.append(parent)
        parent = ENTITY[parent].payload.get("parentID")
    return chain


def get_counts(live: LiveWorld, caller: str, key: str) -> Outcome:
    status, body = _location_get(live, caller, key, "")
    if status != 200:
        return status
    return body["id"] == live.id(key), body["stored"], body["checkin"], body["checkout"]


def expect_counts(caller: str, key: str) -> Outcome:
    """Visible: the true counts, hidden items included."""
    if not oracle.visible(caller, key):
        return 404
    stored = sum(1 for location in STORED_IN.values() if location == key)
    return True, stored, stored, 0


def list_locations(live: LiveWorld, caller: str, eclass: str) -> Outcome:
    return paged_keys(live, caller, BASE)


def _keys_of(live: LiveWorld, caller: str, key: str, suffix: str) -> Outcome:
    status, body = _location_get(live, caller, key, suffix)
    if status != 200:
        return status
    return tuple(live.key(location["id"]) for location in body)


def parents(live: LiveWorld, caller: str, key: str) -> Outcome:
    return _keys_of(live, caller, key, "/parents")


def expect_parents(caller: str, key: str) -> Outcome:
    if not oracle.visible(caller, key):
        return 404
    return tuple(parent for parent in reversed(_parent_chain(key))
                 if oracle.visible(caller, parent))


def children(live: LiveWorld, caller: str, key: str) -> Outcome:
    found = _keys_of(live, caller, key, "/children")
    return frozenset(found) if isinstance(found, tuple) else found


def expect_children(caller: str, key: str) -> Outcome:
    if not oracle.visible(caller, key):
        return 404
    return frozenset(entity.key for entity in ENTITIES if entity.eclass == "Location"
                     and entity.payload.get("parentID") == key
                     and oracle.visible(caller, entity.key))


def log_items(live: LiveWorld, caller: str, key: str) -> Outcome:
    status, body = _location_get(live, caller, key, "/log")
    if status != 200:
        return status
    keys = frozenset(live.key(entry["entityID"]) for entry in body["data"])
    return keys if body["total"] == len(body["data"]) else ("total disagrees", body["total"])


def expect_log_items(caller: str, key: str) -> Outcome:
    if not oracle.visible(caller, key):
        return 404
    return frozenset(item for item, location in STORED_IN.items()
                     if location == key and oracle.visible(caller, item))


READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("storage.list", ("Location",), oracle.visible_keys, list_locations),
    MatrixPath("storage.get", LOCATIONS, expect_counts, get_counts),
    MatrixPath("storage.parents", LOCATIONS, expect_parents, parents),
    MatrixPath("storage.children", LOCATIONS, expect_children, children),
    MatrixPath("storage.log", LOCATIONS, expect_log_items, log_items),
)


def create_location(live: LiveWorld, caller: str, target: str) -> Outcome:
    item: dict[str, Any] = {"name": f"by {caller}"}
    if target != HOME:
        item["departmentID"], item["projectID"] = TARGETS[target]
    response = live.client(caller).post(BASE, json=[item])
    return placement(response.get_json()[0]) if response.status_code == 201 \
        else response.status_code


def _new_sample(live: LiveWorld, source: str) -> str:
    department, project = TARGETS[source]
    made = live.client("admin").post("/api/entity", json={"entities": [{
        "eClass": "Sample", "departmentID": department, "projectID": project}]})
    assert made.status_code == 201, made.get_data(as_text=True)
    return made.get_json()["entities"][0]["id"]


def _access_of_new(caller: str, source: str) -> str | None:
    return oracle.access(caller, EntityDef("new", "Sample", *TARGETS[source]))


def check_in(live: LiveWorld, caller: str, label: str) -> Outcome:
    """The admin makes a Sample at the label's source; the caller checks it into the
    label's world location."""
    source, location = label.split(">")
    sample = _new_sample(live, source)
    url = f"{BASE}/{live.id(location)}/checkin"
    response = live.client(caller).post(url, json=[{"eClass": "Sample", "id": sample}])
    return response.status_code


def expect_check_in(caller: str, label: str) -> Outcome:
    """The location first (hidden 404, read-only 403), then the item likewise."""
    source, location = label.split(">")
    for held in (oracle.access(caller, ENTITY[location]), _access_of_new(caller, source)):
        if held != oracle.WRITE:
            return 404 if held is None else 403
    return 200


def check_out(live: LiveWorld, caller: str, source: str) -> Outcome:
    """The admin makes a Sample at ``source`` and stores it in L-0; the caller checks it
    out."""
    sample = _new_sample(live, source)
    stored = live.client("admin").post(f"{BASE}/{live.id('L-0')}/checkin",
                                       json=[{"eClass": "Sample", "id": sample}])
    assert stored.status_code == 200, stored.get_data(as_text=True)
    response = live.client(caller).post(f"{BASE}/checkout",
                                        json=[{"eClass": "Sample", "id": sample}])
    return response.status_code


def expect_check_out(caller: str, source: str) -> Outcome:
    held = _access_of_new(caller, source)
    return 200 if held == oracle.WRITE else 404 if held is None else 403


CHECKINS = tuple(f"{source}>{location}" for source in ("DEP-A", "DEP-B", "PRJ-1", "DEP-C")
                 for location in LOCATIONS)
WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("storage.create", (HOME, *TARGETS), expect_create, create_location),
    MatrixPath("storage.checkin", CHECKINS, expect_check_in, check_in),
    MatrixPath("storage.checkout", tuple(TARGETS), expect_check_out, check_out),
)
