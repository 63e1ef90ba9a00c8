"""The read paths of ``/api/query`` (issue 5): views, datasets, hierarchy, status, suggestions
and the uniqueness check. Each answers exactly what the caller may see — except ``unique``,
the one careful exception of decisions §5: ``false`` for every authenticated caller when any
row holds the value, visible or not, and nothing more.

Per-entity paths are tried on the world's samples only, to keep the matrix fast.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld
from tests.contracts.visibility.paths import (
    MatrixPath,
    Outcome,
    hidden_like_unknown,
    paged_keys,
)
from tests.contracts.visibility.world import ENTITIES, ENTITY, EntityDef

SAMPLES: tuple[str, ...] = tuple(entity.key for entity in ENTITIES if entity.eclass == "Sample")
MAX_SUGGESTED_ENTITIES = 20  # decisions §8: "up to 20 visible entities"


# ---------------------------------------------------------------- GET /api/query/view/<name>

def view_ids(live: LiveWorld, caller: str, name: str) -> Outcome:
    return paged_keys(live, caller, f"/api/query/view/{name}")


OVERVIEWS = {"SampleOverview": "Sample"}  # an overview view: the class whose rows it shows


def expect_overview(caller: str, name: str) -> Outcome:
    return oracle.visible_keys(caller, OVERVIEWS[name])


# ------------------------------------------------------------- POST /api/query/dataset

def _dataset(live: LiveWorld, caller: str, queries: list[dict[str, Any]]) -> tuple[int, Any]:
    response = live.client(caller).post("/api/query/dataset", json=queries)
    return response.status_code, response.get_json(silent=True)


def _world_parent(entity: EntityDef) -> str | None:
    return entity.payload.get("parentID")


# Chained subjects: "<Class>.<field> in <Class>.id" → how the world sets that field.
CHAIN_FIELDS: dict[str, Callable[[EntityDef], str | None]] = {
    "subjectID": lambda entity: entity.subject,
    "projectID": lambda entity: entity.project,
    "departmentID": lambda entity: entity.department,
    "parentID": _world_parent,
}
CHAINS: tuple[str, ...] = (
    "Note.subjectID in Sample.id",
    "File.subjectID in Sample.id",
    "Sample.projectID in Project.id",
    "Sample.parentID in Sample.id",
)


def _chain(subject: str) -> tuple[str, str, str]:
    """``(later class, its field, earlier class)`` of a chained subject."""
    later, earlier = subject.split(" in ")
    eclass, field = later.split(".")
    return eclass, field, earlier.split(".")[0]


def dataset_collection(live: LiveWorld, caller: str, subject: str) -> Outcome:
    """A plain collection (``subject`` is a class) or a chain joining an earlier collection
    with ``in`` (the outcome is then the later collection's keys)."""
    if " in " not in subject:
        queries = [{"collection": "c", "eClass": subject}]
    else:
        eclass, field, earlier = _chain(subject)
        queries = [{"collection": "first", "eClass": earlier},
                   {"collection": "c", "eClass": eclass,
                    "filters": [{"field": field, "in": "first.id"}]}]
    status, body = _dataset(live, caller, queries)
    if status != 200:
        return status
    if set(body) != {query["collection"] for query in queries}:
        return ("unexpected result keys", sorted(body))
    return frozenset(live.key(row["id"]) for row in body["c"])


def expect_collection(caller: str, subject: str) -> Outcome:
    if " in " not in subject:
        return oracle.visible_keys(caller, subject)
    eclass, field, earlier = _chain(subject)
    joinable = oracle.visible_keys(caller, earlier)
    return frozenset(key for key in oracle.visible_keys(caller, eclass)
                     if CHAIN_FIELDS[field](ENTITY[key]) in joinable)


def dataset_entity(live: LiveWorld, caller: str, key: str) -> Outcome:
    """The entity query for one id: its key, or None when the answer is null."""
    status, body = _dataset(live, caller, [{
        "entity": "e", "eClass": ENTITY[key].eclass,
        "filters": [{"field": "id", "value": live.id(key)}]}])
    if status != 200:
        return status
    if set(body) != {"e"}:
        return ("unexpected result keys", sorted(body))
    return None if body["e"] is None else live.key(body["e"]["id"])


def expect_dataset_entity(caller: str, key: str) -> Outcome:
    return key if oracle.visible(caller, key) else None


# ------------------------------------------------ GET /api/query/hierarchy, /status

def _nodes(body: dict[str, Any]) -> Iterator[str]:
    """Every entity id of a hierarchy answer: the entity, its ancestors, the whole tree."""
    yield body["entity"]["id"]
    for ancestor in body["ancestors"]:
        yield ancestor["id"]
    stack = list(body["children"])
    while stack:
        node = stack.pop()
        yield node["id"]
        stack.extend(node["children"])


def hierarchy(live: LiveWorld, caller: str, key: str) -> Outcome:
    """200 when shown, provided it names the entity and nothing the caller may not read."""
    url = f"/api/query/hierarchy/{ENTITY[key].eclass}/{live.id(key)}"
    status, body = live.get_json(caller, url)
    if status == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), body)
    if status != 200:
        return status
    if body["entity"]["id"] != live.id(key):
        return ("wrong entity", body["entity"]["id"])
    hidden = sorted({live.key(node) for node in _nodes(body)}
                    - {key for key in live.ids if oracle.visible(caller, key)})
    return ("shows unreadable", hidden) if hidden else 200


def entity_status(live: LiveWorld, caller: str, key: str) -> Outcome:
    url = f"/api/query/status/{ENTITY[key].eclass}/{live.id(key)}"
    status, body = live.get_json(caller, url)
    if status == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), body)
    return status


def expect_visible(caller: str, key: str) -> Outcome:
    return 200 if oracle.visible(caller, key) else 404


# ------------------------------------------------------------ GET /api/query/suggest/...

NO_QUERY = "<no query>"
ALL_SAMPLES_QUERY = "s-"  # every world sample's id (and name) starts with "S-"
assert all(key.lower().startswith(ALL_SAMPLES_QUERY) for key in SAMPLES)


def suggest_entities(live: LiveWorld, caller: str, query: str) -> Outcome:
    url = "/api/query/suggest/entity/Sample" + ("" if query == NO_QUERY else f"/{query}")
    status, body = live.get_json(caller, url)
    if status != 200:
        return status
    if len(body) > MAX_SUGGESTED_ENTITIES:
        return ("more than 20", len(body))
    if any(item["eClass"] != "Sample" for item in body):
        return ("not a Sample", body)
    return frozenset(live.key(item["id"]) for item in body)


def expect_suggested(caller: str, query: str) -> Outcome:
    readable = oracle.visible_keys(caller, "Sample")
    # With 20 or more readable samples the answer would only be a subset: not in this world.
    assert len(readable) < MAX_SUGGESTED_ENTITIES, "the world outgrew the suggestion limit"
    return readable


def suggest_field(live: LiveWorld, caller: str, field: str) -> Outcome:
    """``{(value, named)}``: ``named`` is True when the name shown is the referenced
    entity's (as the administrator sees it), False when it is null."""
    url = f"/api/query/suggest/field/Sample/{field}"
    status, body = live.get_json(caller, url)
    if status != 200:
        return status
    _, everything = live.get_json("admin", url)
    names = {item["value"]: item["name"] for item in everything}
    outcome: set[Any] = set()
    for item in body:
        name = item["name"]
        named = False if name is None else True if name == names.get(item["value"]) else (
            "wrong name", name)
        outcome.add((live.key(item["value"]), named))
    return frozenset(outcome)


SUGGESTED_FIELDS: dict[str, Callable[[EntityDef], str | None]] = {
    "projectID": lambda entity: entity.project,
    "departmentID": lambda entity: entity.department,
}


def expect_field_values(caller: str, field: str) -> Outcome:
    values = {SUGGESTED_FIELDS[field](ENTITY[key])
              for key in oracle.visible_keys(caller, "Sample")} - {None}
    return frozenset((value, oracle.visible(caller, value)) for value in values)


# ---------------------------------------------------- GET /api/query/unique/field/...

def unique_name(live: LiveWorld, caller: str, key: str) -> Outcome:
    """The whole answer to the uniqueness check of the entity's name."""
    _, entity = live.get_json("admin", f"/api/entity/{ENTITY[key].eclass}/{live.id(key)}")
    status, body = live.get_json(
        caller, f"/api/query/unique/field/{ENTITY[key].eclass}/name/{entity['name']}")
    return body if status == 200 else status


def expect_not_unique(caller: str, key: str) -> Outcome:
    return {"unique": False}  # visible or not (decisions §5), and nothing else


QUERY_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("view.flat", ("Sample", "Experiment", "Note", "File"), oracle.visible_keys,
               view_ids),
    MatrixPath("view.overview", tuple(OVERVIEWS), expect_overview, view_ids),
    MatrixPath("dataset.collection", ("Sample", *CHAINS), expect_collection,
               dataset_collection),
    MatrixPath("dataset.entity", SAMPLES, expect_dataset_entity, dataset_entity),
    MatrixPath("hierarchy", SAMPLES, expect_visible, hierarchy),
    MatrixPath("status", SAMPLES, expect_visible, entity_status),
    MatrixPath("suggest.entity", (NO_QUERY, ALL_SAMPLES_QUERY), expect_suggested,
               suggest_entities),
    MatrixPath("suggest.field", tuple(SUGGESTED_FIELDS), expect_field_values, suggest_field),
    MatrixPath("unique", SAMPLES, expect_not_unique, unique_name),
)
