"""``GET /api/query/hierarchy/{eClass}/{id}`` and the lazy one-level service behind the tree
pages: parents by the first set link, visibility cutting the tree in both directions, the
depth limit and cyclic data."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from flask import Flask

from labapp.access.actor import Actor
from labapp.access.grant_sets import actor_for
from labapp.db import db, transaction
from labapp.errors import NotFound
from labapp.model import Sample, User
from labapp.model.registry import CLASSES
from labapp.query.hierarchy import MAX_DEPTH, ancestor_entities, child_entities
from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of, listing, save

NOTE = {"content": "cloudy", "type": "Other"}


@pytest.fixture
def world(admin: ApiClient, department: Callable[..., str]) -> dict[str, str]:
    """Names → ids of a small lab, everything in DEP00001 except three entities of ``Away``.

    HQ Site > Freezer A > Box 1 (locations). Growth curve (experiment) > Step 1, Step 2 and
    the hidden step "Hidden step". Culture A (step 1, stored in Box 1, with a note) > Aliquot
    B, Aliquot C; Aliquot B > "Hidden H" (Away) > Under H. Stored D is only stored in Box 1.
    Step 2 > Plate 1 > Well A1. "Hidden step" (Away) > Below hidden step > Grandchild.
    """
    away = department("Away")
    items = [
        {"eClass": "Location", "id": "#site", "name": "HQ Site", "locationType": "Site"},
        {"eClass": "Location", "id": "#freezer", "name": "Freezer A", "parentID": "#site"},
        {"eClass": "Location", "id": "#box", "name": "Box 1", "parentID": "#freezer"},
        {"eClass": "Experiment", "id": "#exp", "name": "Growth curve"},
        {"eClass": "Step", "id": "#s1", "name": "Step 1", "experimentID": "#exp"},
        {"eClass": "Step", "id": "#s2", "name": "Step 2", "experimentID": "#exp"},
        {"eClass": "Sample", "id": "#a", "name": "Culture A", "stepID": "#s1",
         "locationID": "#box", "notes": [NOTE]},
        {"eClass": "Sample", "id": "#b", "name": "Aliquot B", "parentID": "#a"},
        {"eClass": "Sample", "id": "#c", "name": "Aliquot C", "parentID": "#a"},
        {"eClass": "Sample", "id": "#d", "name": "Stored D", "locationID": "#box"},
        {"eClass": "Plate", "id": "#plate", "name": "Plate 1", "stepID": "#s2"},
        {"eClass": "Sample", "id": "#well", "name": "Well A1", "plateID": "#plate"},
        {"eClass": "Sample", "id": "#hidden", "name": "Hidden H", "parentID": "#b",
         "departmentID": away},
        {"eClass": "Sample", "id": "#under", "name": "Under H", "parentID": "#hidden",
         "departmentID": DEFAULT_DEPARTMENT},
        {"eClass": "Step", "id": "#hstep", "name": "Hidden step", "experimentID": "#exp",
         "departmentID": away},
        {"eClass": "Sample", "id": "#orphan", "name": "Below hidden step", "stepID": "#hstep",
         "departmentID": DEFAULT_DEPARTMENT},
        {"eClass": "Sample", "id": "#grand", "name": "Grandchild", "parentID": "#orphan"},
    ]
    saved = save(admin, *items)
    ids = {item["name"]: entity["id"] for item, entity in zip(items, saved, strict=True)}
    notes = listing(admin, "Note", filter=f"subjectID eq '{ids['Culture A']}'")["data"]
    ids["note"] = notes[0]["id"]
    return ids


@pytest.fixture
def alice(member: Callable[..., ApiClient], world: dict[str, str]) -> ApiClient:
    """A member of DEP00001: everything but the three entities of ``Away``."""
    return member("alice")


def hierarchy(api: ApiClient, eclass: str, entity_id: str, status: int = 200) -> Any:
    return body_of(api.get(f"/api/query/hierarchy/{eclass}/{quote(entity_id)}"), status)


def shape(nodes: list[dict[str, Any]]) -> list[Any]:
    """A tree as nested ``name`` / ``(name, [children])`` lists, for readable asserts."""
    return [(node["name"], shape(node["children"])) if node["children"] else node["name"]
            for node in nodes]


def names(entities: list[dict[str, Any]]) -> list[str]:
    return [entity["name"] for entity in entities]


def test_an_experiment_shows_its_whole_tree_to_the_admin(admin: ApiClient,
                                                         world: dict[str, str]) -> None:
    body = hierarchy(admin, "Experiment", world["Growth curve"])

    assert set(body) == {"entity", "ancestors", "children"}
    assert body["entity"]["id"] == world["Growth curve"] and body["ancestors"] == []
    assert shape(body["children"]) == [
        ("Hidden step", [("Below hidden step", ["Grandchild"])]),
        ("Step 1", [("Culture A", [("Aliquot B", [("Hidden H", ["Under H"])]), "Aliquot C",
                                   world["note"]])]),
        ("Step 2", [("Plate 1", ["Well A1"])]),
    ]
    step = body["children"][1]
    assert step["eClass"] == "Step" and step["experimentID"] == world["Growth curve"]
    assert {"id", "status", "departmentID", "stepIndex", "children"} <= set(step)
    assert "children" not in body["entity"]


def test_ancestors_run_from_the_root_to_the_direct_parent(admin: ApiClient,
                                                          world: dict[str, str]) -> None:
    body = hierarchy(admin, "Sample", world["Aliquot B"])

    assert names(body["ancestors"]) == ["Growth curve", "Step 1", "Culture A"]
    assert body["ancestors"][0]["eClass"] == "Experiment"
    assert shape(body["children"]) == [("Hidden H", ["Under H"])]


def test_the_first_set_link_is_the_parent_and_locations_hold_the_rest(
        admin: ApiClient, world: dict[str, str]) -> None:
    """Culture A is stored in Box 1 but hangs under its step; Stored D under its box."""
    body = hierarchy(admin, "location", world["HQ Site"])

    assert body["entity"]["eClass"] == "Location"
    assert shape(body["children"]) == [("Freezer A", [("Box 1", ["Stored D"])])]
    assert names(hierarchy(admin, "Sample", world["Stored D"])["ancestors"]) == [
        "HQ Site", "Freezer A", "Box 1"]
    assert names(hierarchy(admin, "Sample", world["Well A1"])["ancestors"]) == [
        "Growth curve", "Step 2", "Plate 1"]
    assert names(hierarchy(admin, "Note", world["note"])["ancestors"]) == [
        "Growth curve", "Step 1", "Culture A"]


def test_invisible_children_are_left_out_with_everything_below_them(
        alice: ApiClient, world: dict[str, str]) -> None:
    body = hierarchy(alice, "Experiment", world["Growth curve"])

    assert shape(body["children"]) == [
        ("Step 1", [("Culture A", ["Aliquot B", "Aliquot C", world["note"]])]),
        ("Step 2", [("Plate 1", ["Well A1"])]),
    ]


def test_an_invisible_ancestor_ends_the_breadcrumb(alice: ApiClient, admin: ApiClient,
                                                   world: dict[str, str]) -> None:
    below = hierarchy(alice, "Sample", world["Below hidden step"])
    assert below["ancestors"] == [] and shape(below["children"]) == ["Grandchild"]
    assert names(hierarchy(alice, "Sample", world["Grandchild"])["ancestors"]) == [
        "Below hidden step"]
    assert names(hierarchy(admin, "Sample", world["Grandchild"])["ancestors"]) == [
        "Growth curve", "Hidden step", "Below hidden step"]
    assert hierarchy(alice, "Sample", world["Under H"])["ancestors"] == []


@pytest.mark.parametrize("path", ["Sample/{Hidden H}", "Step/{Hidden step}", "Sample/NOPE-1",
                                  "Experiment/{Culture A}"])
def test_what_the_caller_may_not_see_is_404(alice: ApiClient, world: dict[str, str],
                                            path: str) -> None:
    assert_problem(alice.get("/api/query/hierarchy/" + path.format_map(world)), 404,
                   "not_found")


def test_an_unknown_class_is_404(admin: ApiClient) -> None:
    assert_problem(admin.get("/api/query/hierarchy/Gadget/X-1"), 404, "unknown_class")


def test_anonymous_callers_are_401(client, world: dict[str, str]) -> None:
    assert_problem(client.get(f"/api/query/hierarchy/Experiment/{world['Growth curve']}"),
                   401, "not_authenticated")


def test_ids_with_slashes_and_spaces_work(admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "id": "rack 1/box 2"},
         {"eClass": "Sample", "id": "rack 1/box 2/tube 3", "parentID": "rack 1/box 2"})

    body = hierarchy(admin, "Sample", "rack 1/box 2")
    assert shape(body["children"]) == ["rack 1/box 2/tube 3"]
    encoded = admin.get("/api/query/hierarchy/Sample/" + quote("rack 1/box 2/tube 3", safe=""))
    assert names(body_of(encoded, 200)["ancestors"]) == ["rack 1/box 2"]


def test_both_directions_stop_after_ten_levels(admin: ApiClient) -> None:
    chain = [{"eClass": "Sample", "id": f"DEEP-{level:02d}", "name": f"Deep {level:02d}",
              **({"parentID": f"DEEP-{level - 1:02d}"} if level else {})}
             for level in range(MAX_DEPTH + 2)]
    save(admin, *chain)

    tree, depth = hierarchy(admin, "Sample", "DEEP-00")["children"], 0
    while tree:
        depth += 1
        assert len(tree) == 1
        tree = tree[0]["children"]
    assert depth == MAX_DEPTH
    ancestors = hierarchy(admin, "Sample", f"DEEP-{MAX_DEPTH + 1:02d}")["ancestors"]
    assert names(ancestors) == [f"Deep {level:02d}" for level in range(1, MAX_DEPTH + 1)]


def test_cyclic_data_ends(app: Flask, admin: ApiClient) -> None:
    """Links the API would accept one by one can close a loop; the hierarchy still ends."""
    save(admin, {"eClass": "Sample", "id": "LOOP-1"},
         {"eClass": "Sample", "id": "LOOP-2", "parentID": "LOOP-1"},
         {"eClass": "Sample", "id": "SELF-1"})
    with app.app_context(), transaction() as session:
        session.get(Sample, "LOOP-1").parent_id = "LOOP-2"
        session.get(Sample, "SELF-1").parent_id = "SELF-1"

    body = hierarchy(admin, "Sample", "LOOP-1")
    assert names(body["ancestors"]) == ["LOOP-2"] and shape(body["children"]) == ["LOOP-2"]
    self_loop = hierarchy(admin, "Sample", "SELF-1")
    assert self_loop["ancestors"] == [] and self_loop["children"] == []
    with app.app_context():
        assert child_entities(actor_of("admin"), "SELF-1") == []


def actor_of(username: str) -> Actor:
    """The actor of a user as the auth loader builds it (inside an app context)."""
    return actor_for(db.session.get(User, username), method=None)


def test_one_level_of_children_says_which_have_children(app: Flask, alice: ApiClient,
                                                        world: dict[str, str]) -> None:
    with app.app_context():
        as_alice, as_admin = actor_of("alice"), actor_of("admin")
        steps = child_entities(as_alice, world["Growth curve"])
        culture = child_entities(as_alice, world["Culture A"])
        culture_for_admin = child_entities(as_admin, world["Culture A"])

    assert [(step["name"], step["hasChildren"]) for step in steps] == [
        ("Step 1", True), ("Step 2", True)]
    assert steps[0]["eClass"] == "Step" and steps[0]["id"] == world["Step 1"]
    assert [(child["name"], child["hasChildren"]) for child in culture] == [
        ("Aliquot B", False), ("Aliquot C", False), (world["note"], False)]
    assert [(child["name"], child["hasChildren"]) for child in culture_for_admin][0] == (
        "Aliquot B", True)


def test_one_level_of_an_invisible_entity_is_not_found(app: Flask, alice: ApiClient,
                                                       world: dict[str, str]) -> None:
    with app.app_context():
        as_alice = actor_of("alice")
        for entity_id in (world["Hidden H"], "NOPE-1"):
            with pytest.raises(NotFound):
                child_entities(as_alice, entity_id)


def test_ancestor_entities_is_the_breadcrumb_of_the_full_answer(
        app: Flask, admin: ApiClient) -> None:
    """The detail page's cheap breadcrumb agrees with the hierarchy endpoint's ancestors."""
    created = admin.post("/api/entity", json={"entities": [
        {"eClass": "Experiment", "id": "#e"}, {"eClass": "Step", "id": "#s", "experimentID": "#e"},
        {"eClass": "Sample", "id": "#p", "stepID": "#s"},
        {"eClass": "Sample", "id": "#c", "parentID": "#p"}]}).get_json()["entities"]
    leaf = created[-1]["id"]
    full = admin.get(f"/api/query/hierarchy/Sample/{leaf}").get_json()["ancestors"]
    with app.app_context():
        actor = actor_for(db.session.get(User, "admin"), method="bearer")
        cheap = ancestor_entities(actor, CLASSES["Sample"], leaf)
    assert [a["id"] for a in cheap] == [a["id"] for a in full] == [e["id"] for e in created[:3]]
