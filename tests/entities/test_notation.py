"""Functional notation in a batch (decisions §6): ``#var``, ``#var.prop``, ``!seq`` and their
combinations, resolved over the whole batch before anything is written."""
from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask

from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import add_sequence, fetch, next_value, save, snapshot


@pytest.fixture
def plasmids(app: Flask) -> str:
    """A custom sequence ``Plasmid`` that hands out PL-007, PL-008, ..."""
    add_sequence(app, "Plasmid", "PL-", next_value=7, min_digits=3)
    return "Plasmid"


def rejected(app: Flask, api: ApiClient, items: list[dict[str, Any]], field: str,
             code: str = "invalid_notation") -> str:
    """Post ``items``, assert a 400 naming ``field`` and an unchanged database; the message."""
    before = snapshot(app)
    response = api.post("/api/entity", json={"entities": items})
    body = assert_problem(response, 400, code, errors=True)
    assert body["errors"][0]["field"] == field, body
    assert body["detail"].startswith(field.replace("entities.", "entities[").replace(".", "].", 1))
    assert snapshot(app) == before
    return body["errors"][0]["message"]


def test_a_variable_names_a_new_entity_across_the_batch(admin: ApiClient) -> None:
    experiment, step, sample = save(
        admin, {"eClass": "Experiment", "id": "#e", "name": "Growth"},
        {"eClass": "Step", "id": "#s", "experimentID": "#e"},
        {"eClass": "Sample", "experimentID": "#e", "stepID": "#s"})

    assert re.fullmatch(r"EXP\d{5}", experiment["id"])
    assert re.fullmatch(r"STP\d{5}", step["id"])
    assert step["experimentID"] == experiment["id"]
    assert (sample["experimentID"], sample["stepID"]) == (experiment["id"], step["id"])
    assert fetch(admin, "Sample", sample["id"])["stepID"] == step["id"]


def test_a_variable_may_be_used_before_it_is_declared(admin: ApiClient) -> None:
    sample, parent = save(admin, {"eClass": "Sample", "parentID": "#p", "name": "#p.name"},
                          {"eClass": "Sample", "id": "#p", "name": "Parent"})
    assert sample["parentID"] == parent["id"]
    assert sample["name"] == "Parent"


def test_property_references_take_the_value_given_in_the_batch(admin: ApiClient) -> None:
    experiment, sample = save(
        admin, {"eClass": "Experiment", "id": "#e", "name": "Run 7", "barcode": "BC-run-7"},
        {"eClass": "Sample", "name": "#e.name", "barcode": "#e.id", "experimentID": "#e.id"})
    assert sample["name"] == "Run 7"
    assert sample["barcode"] == experiment["id"] == sample["experimentID"]


def test_a_variable_alone_in_name_is_the_id(admin: ApiClient) -> None:
    experiment, sample = save(admin, {"eClass": "Experiment", "id": "#e"},
                              {"eClass": "Sample", "name": "#e"})
    assert sample["name"] == experiment["id"]


def test_an_unset_name_is_the_id_it_defaults_to(admin: ApiClient) -> None:
    experiment, sample = save(admin, {"eClass": "Experiment", "id": "#e"},
                              {"eClass": "Sample", "name": "#e.name"})
    assert sample["name"] == experiment["id"] == experiment["name"]


def test_property_references_follow_chains(admin: ApiClient, plasmids: str) -> None:
    first, second, third = save(admin, {"eClass": "Sample", "id": "#a", "name": "#b.name"},
                                {"eClass": "Sample", "id": "#b", "name": "#c.name"},
                                {"eClass": "Sample", "id": "#c", "name": "!Plasmid"})
    assert first["name"] == second["name"] == third["name"] == "PL-007"


def test_a_notation_value_may_update_an_existing_entity(admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "id": "NOT-OLD"})
    updated, created = save(admin, {"eClass": "Sample", "id": "NOT-OLD", "parentID": "#new"},
                            {"eClass": "Sample", "id": "#new"})
    assert updated["parentID"] == created["id"]
    assert updated["version"] == 2


# --- sequences -----------------------------------------------------------------------------

def test_bang_sequence_as_id_uses_that_sequence(app: Flask, admin: ApiClient,
                                                plasmids: str) -> None:
    first, second = save(admin, {"eClass": "Sample", "id": "!Plasmid"},
                         {"eClass": "Sample", "id": "!Plasmid"})
    assert (first["id"], second["id"]) == ("PL-007", "PL-008")
    assert first["eClass"] == "Sample" and first["name"] == "PL-007"
    assert next_value(app, "Plasmid") == 9


def test_a_class_name_stands_for_its_default_sequence(app: Flask, admin: ApiClient) -> None:
    experiments = next_value(app, "Experiment")
    samples = next_value(app, "Sample")
    sample, step = save(admin, {"eClass": "Sample", "id": "#s!Experiment"},
                        {"eClass": "Step", "id": "!sample", "name": "#s.id"})
    assert sample["id"] == f"EXP{experiments:05d}" and sample["eClass"] == "Sample"
    assert step["id"] == f"SAM{samples:05d}" and step["eClass"] == "Step"
    assert step["name"] == sample["id"]
    assert (next_value(app, "Experiment"), next_value(app, "Sample")) == (experiments + 1,
                                                                          samples + 1)


def test_a_variable_with_a_sequence_does_both(admin: ApiClient, plasmids: str) -> None:
    plasmid, sample = save(admin, {"eClass": "Sample", "id": "#p!Plasmid", "name": "pUC19"},
                           {"eClass": "Sample", "parentID": "#p", "name": "#p.name"})
    assert plasmid["id"] == "PL-007"
    assert sample["parentID"] == "PL-007" and sample["name"] == "pUC19"


def test_bang_sequence_in_name_and_barcode_draws_numbers(app: Flask, admin: ApiClient,
                                                         plasmids: str) -> None:
    samples = next_value(app, "Sample")
    (sample,) = save(admin, {"eClass": "Sample", "name": "!Plasmid", "barcode": "!Plasmid"})
    assert sample["id"] == f"SAM{samples:05d}"
    assert {sample["name"], sample["barcode"]} == {"PL-007", "PL-008"}
    assert next_value(app, "Plasmid") == 9
    assert next_value(app, "Sample") == samples + 1


def test_a_user_id_may_come_from_a_sequence(admin: ApiClient, plasmids: str) -> None:
    (user,) = save(admin, {"eClass": "User", "id": "!Plasmid", "password": "long-password"})
    assert user["id"] == "PL-007"


def test_a_class_without_a_sequence_needs_one_named(app: Flask, admin: ApiClient) -> None:
    message = rejected(app, admin, [{"eClass": "User", "id": "#u", "password": "long-password"}],
                       "entities.0.id")
    assert "sequence" in message


# --- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize(("items", "field", "says"), [
    ([{"eClass": "Sample", "parentID": "#ghost"}], "entities.0.parentID", "#ghost"),
    ([{"eClass": "Sample", "name": "#ghost.name"}], "entities.0.name", "#ghost"),
    ([{"eClass": "Experiment", "id": "#e"}, {"eClass": "Sample", "name": "#e.description"}],
     "entities.1.name", "undefined"),
    ([{"eClass": "Experiment", "id": "#e"}, {"eClass": "Sample", "barcode": "#e.barcode"}],
     "entities.1.barcode", "undefined"),
    ([{"eClass": "Experiment", "id": "#e"}, {"eClass": "Sample", "name": "#e.colour"}],
     "entities.1.name", "colour"),
    ([{"eClass": "Sample", "id": "#a", "name": "#b.name"},
      {"eClass": "Sample", "id": "#b", "name": "#a.name"}], "entities.1.name", "refers back"),
    ([{"eClass": "Sample", "id": "#a"}, {"eClass": "Sample", "id": "#a"}], "entities.1.id",
     "twice"),
    ([{"eClass": "Sample", "id": "#a.name"}], "entities.0.id", "notation"),
    ([{"eClass": "Sample", "id": "#"}], "entities.0.id", "notation"),
    ([{"eClass": "Sample", "id": "#a!"}], "entities.0.id", "notation"),
    ([{"eClass": "Sample", "parentID": "#a b"}], "entities.0.parentID", "notation"),
    ([{"eClass": "Sample", "id": "!NoSuchSequence"}], "entities.0.id", "NoSuchSequence"),
    ([{"eClass": "Sample", "id": "#s!NoSuchSequence"}], "entities.0.id", "NoSuchSequence"),
    ([{"eClass": "Sample", "name": "!NoSuchSequence"}], "entities.0.name", "NoSuchSequence"),
    ([{"eClass": "Sample", "barcode": "!NoSuchSequence"}], "entities.0.barcode",
     "NoSuchSequence"),
    ([{"eClass": "Sample", "parentID": "!Sample"}], "entities.0.parentID", "!sequence"),
    ([{"eClass": "Sample", "userID": "!Plasmid"}], "entities.0.userID", "!sequence"),
    ([{"eClass": "Sample", "name": "!Plasmid!Plasmid"}], "entities.0.name", "!sequence"),
    ([{"eClass": "Step", "input": [{"inputID": "!Sample"}]}], "entities.0.input.0.inputID",
     "!sequence"),
    ([{"eClass": "Step", "input": [{"inputID": "#nobody"}]}], "entities.0.input.0.inputID",
     "#nobody"),
])
def test_bad_notation_is_rejected(app: Flask, admin: ApiClient, plasmids: str, items: list,
                                  field: str, says: str) -> None:
    assert says in rejected(app, admin, items, field)


def test_bad_notation_after_good_items_rolls_everything_back(app: Flask, admin: ApiClient,
                                                             plasmids: str) -> None:
    rejected(app, admin, [{"eClass": "Sample", "id": "#a!Plasmid"},
                          {"eClass": "Experiment", "id": "#b", "name": "!Plasmid"},
                          {"eClass": "Sample", "parentID": "#a", "name": "#b.barcode"}],
             "entities.2.name")


def test_parents_in_a_circle_are_rejected(app: Flask, admin: ApiClient) -> None:
    message = rejected(app, admin, [{"eClass": "Sample", "id": "#a", "parentID": "#b"},
                                    {"eClass": "Sample", "id": "#b", "parentID": "#a"}],
                       "entities.0.id", code="invalid_entity")
    assert "circle" in message


def test_an_entity_cannot_be_its_own_parent(app: Flask, admin: ApiClient) -> None:
    message = rejected(app, admin, [{"eClass": "Sample", "id": "#a", "parentID": "#a"}],
                       "entities.0.parentID", code="invalid_entity")
    assert "own parent" in message


def test_notation_is_only_read_in_ids_references_name_and_barcode(admin: ApiClient) -> None:
    (sample,) = save(admin, {"eClass": "Sample", "description": "!Sample #x.name",
                             "unit": "#x", "attributes": {"ref": "#x"}})
    assert sample["description"] == "!Sample #x.name"
    assert sample["unit"] == "#x" and sample["attributes"] == {"ref": "#x"}
