"""``POST /api/query/dataset``: joined queries over classes and views, every filter operator,
sorting, selection, the collection cap and row-level security (lab: ``tests/query/lab.py``)."""
from __future__ import annotations

from typing import Any

import pytest

from labapp.query import dataset
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import Grants, body_of
from tests.query.lab import ids, qv

OURS = {"field": "id", "op": "startswith", "value": "QV-"}


def run(api: ApiClient, *queries: dict[str, Any]) -> dict[str, Any]:
    """``POST /api/query/dataset`` with ``queries``; asserts 200 and returns the answer."""
    return body_of(api.post("/api/query/dataset", json=list(queries)), 200)


def samples(api: ApiClient, *filters: dict[str, Any]) -> list[str]:
    """The lab's sample ids (sorted) that ``filters`` keep."""
    answer = run(api, {"collection": "samples", "eClass": "Sample",
                       "filters": [OURS, *filters]})
    return ids(answer["samples"])


def test_the_spec_example_experiments_then_steps_then_samples(
        admin: ApiClient, lab: dict[str, Any]) -> None:
    answer = run(
        admin,
        {"collection": "experiments", "eClass": "Experiment",
         "filters": [{"field": "projectID", "value": lab["P"]}]},
        {"collection": "steps", "eClass": "Step",
         "filters": [{"field": "experimentID", "in": "experiments.id"}],
         "sortings": [{"field": "stepIndex", "direction": "desc"}]},
        {"collection": "samples", "eClass": "sample", "select": ["name", "STEPID"],
         "filters": [{"field": "stepID", "in": "steps.id"}]})
    assert list(answer) == ["experiments", "steps", "samples"]
    assert ids(answer["experiments"]) == [qv("EXP1")]
    assert answer["experiments"][0]["startDate"] == "2026-01-10"
    assert answer["experiments"][0]["attributes"] == {}
    assert ids(answer["steps"]) == [qv("STP4"), qv("STP3"), qv("STP2"), qv("STP1")]
    assert answer["samples"] == [
        {"id": qv("SAM1"), "eClass": "Sample", "name": "Alpha", "stepID": qv("STP1")},
        {"id": qv("SAMB"), "eClass": "Sample", "name": "Bravo", "stepID": qv("STP2")}]


def test_entity_results_and_dollar_references(admin: ApiClient,
                                              lab: dict[str, Any]) -> None:
    answer = run(
        admin,
        {"entity": "experiment", "eClass": "Experiment",
         "filters": [{"field": "name", "value": "Growth curve"}], "select": ["name"]},
        {"collection": "open", "eClass": "Step",
         "filters": [{"field": "experimentID", "value": "$experiment.id"},
                     {"field": "status", "op": "ne", "value": "Completed"}]},
        {"entity": "first", "eClass": "Step", "sortings": [{"field": "stepIndex"}],
         "filters": [{"field": "experimentID", "value": "$experiment.ID"}]},
        {"collection": "same_start", "eClass": "Experiment",
         "filters": [{"field": "startDate", "value": "$experiment.startDate"}]})
    assert answer["experiment"] == {"id": qv("EXP1"), "eClass": "Experiment",
                                    "name": "Growth curve"}
    assert ids(answer["open"]) == [qv("STP1"), qv("STP2")]
    assert answer["first"]["id"] == qv("STP1") and answer["first"]["stepIndex"] == 1
    assert ids(answer["same_start"]) == [qv("EXP1")]


@pytest.mark.parametrize("op", ["eq", "ne", "gt", "startswith"])
def test_a_reference_to_a_null_entity_matches_nothing(admin: ApiClient,
                                                      lab: dict[str, Any], op: str) -> None:
    answer = run(
        admin,
        {"entity": "missing", "eClass": "Experiment",
         "filters": [{"field": "name", "value": "No such experiment"}]},
        {"collection": "steps", "eClass": "Step",
         "filters": [OURS, {"field": "experimentID", "op": op, "value": "$missing.id"}]})
    assert answer == {"missing": None, "steps": []}


@pytest.mark.parametrize(("op", "expected"), [("in", 0), ("not_in", 4)])
def test_an_empty_collection_joins_nothing(admin: ApiClient, lab: dict[str, Any],
                                           op: str, expected: int) -> None:
    answer = run(
        admin,
        {"collection": "none", "eClass": "Experiment",
         "filters": [{"field": "name", "value": "No such experiment"}]},
        {"collection": "steps", "eClass": "Step",
         "filters": [OURS, {"field": "experimentID", "op": op, "in": "none.id"}]})
    assert answer["none"] == [] and len(answer["steps"]) == expected


def test_values_of_an_attribute_join_like_any_field(admin: ApiClient,
                                                    lab: dict[str, Any]) -> None:
    answer = run(
        admin,
        {"collection": "batches", "eClass": "Sample",
         "filters": [{"field": "attributes.batch", "values": ["B1", "B2", "B9"]}],
         "select": ["attributes.batch"]},
        {"collection": "same", "eClass": "Sample",
         "filters": [{"field": "attributes/batch", "in": "batches.attributes.batch"}]})
    assert answer["batches"] == [
        {"id": qv("SAM1"), "eClass": "Sample", "attributes.batch": "B1"},
        {"id": qv("SAM2"), "eClass": "Sample", "attributes.batch": "B2"}]
    assert ids(answer["same"]) == [qv("SAM1"), qv("SAM2")]


def test_views_in_a_dataset(admin: ApiClient, lab: dict[str, Any]) -> None:
    answer = run(
        admin,
        {"collection": "full", "view": "storageoverview",
         "filters": [OURS, {"field": "available", "op": "isnotnull"}],
         "select": ["stored", "available"]},
        {"collection": "steps", "eClass": "Step",
         "filters": [{"field": "status", "value": "InProgress"}, OURS]},
        {"collection": "inputs", "view": "StepSampleInput",
         "filters": [{"field": "stepID", "in": "steps.id"}]},
        {"entity": "progress", "view": "ExperimentProgress",
         "filters": [{"field": "id", "in": "inputs.experimentID"}]},
        {"collection": "overview", "view": "SampleOverview",
         "filters": [{"field": "experimentID", "value": "$progress.id"},
                     {"field": "plateName", "op": "isnotnull"}]})
    assert answer["full"] == [{"id": qv("LOC1"), "eClass": "Location", "stored": 3,
                               "available": 0}]
    assert [row["inputName"] for row in answer["inputs"]] == ["Alpha"]
    assert answer["progress"]["stepsCompleted"] == 2
    assert ids(answer["overview"]) == [qv("SAMB")]


@pytest.mark.parametrize(("item", "expected"), [
    ({"field": "name", "value": "Alpha"}, ["SAM1"]),
    ({"field": "NAME", "op": "EQ", "value": "Alpha"}, ["SAM1"]),
    ({"field": "name", "op": "ne", "value": "Alpha"}, ["SAM2", "SAM3", "SAMB"]),
    ({"field": "amount", "op": "gt", "value": 1.5}, ["SAM3"]),
    ({"field": "amount", "op": "ge", "value": 1.5}, ["SAM1", "SAM3"]),
    ({"field": "amount", "op": "lt", "value": 10}, ["SAM1"]),
    ({"field": "amount", "op": "le", "value": 10}, ["SAM1", "SAM3"]),
    ({"field": "name", "op": "contains", "value": "AM"}, ["SAM3"]),
    ({"field": "name", "op": "startswith", "value": "b"}, ["SAM2", "SAMB"]),
    ({"field": "name", "op": "endswith", "value": "A"}, ["SAM1", "SAM2", "SAM3"]),
    ({"field": "name", "op": "contains", "value": "%"}, []),
    ({"field": "name", "values": ["Alpha", "Gamma"]}, ["SAM1", "SAM3"]),
    ({"field": "name", "op": "not_in", "values": ["Alpha", "Gamma"]}, ["SAM2", "SAMB"]),
    ({"field": "name", "op": "in", "values": []}, []),
    ({"field": "amount", "values": [1.5, None]}, ["SAM1", "SAM2", "SAMB"]),
    ({"field": "amount", "op": "isnull"}, ["SAM2", "SAMB"]),
    ({"field": "amount", "value": None}, ["SAM2", "SAMB"]),
    ({"field": "amount", "op": "isnotnull"}, ["SAM1", "SAM3"]),
    ({"field": "unit", "op": "isempty"}, ["SAM2", "SAM3", "SAMB"]),
    ({"field": "unit", "op": "isnotempty"}, ["SAM1"]),
    ({"field": "dateTaken", "value": "2026-01-31"}, ["SAM1"]),
    ({"field": "createdUtc", "op": "gt", "value": "2000-01-01T00:00:00Z"},
     ["SAM1", "SAM2", "SAM3", "SAMB"]),
    ({"field": "attributes.batch", "value": "B2"}, ["SAM2"]),
    ({"field": "attributes.ph", "op": "gt", "value": 7}, ["SAM1"]),
    ({"field": "attributes.ph", "op": "isnull"}, ["SAM3", "SAMB"]),
    ({"field": "name", "value": "$not a reference"}, []),
])
def test_every_operator(admin: ApiClient, lab: dict[str, Any], item: dict[str, Any],
                        expected: list[str]) -> None:
    assert samples(admin, item) == [qv(name) for name in expected]


def test_sortings_and_select(admin: ApiClient, lab: dict[str, Any]) -> None:
    answer = run(admin, {"collection": "rows", "eClass": "Sample", "filters": [OURS],
                         "sortings": [{"field": "amount", "direction": "DESC"},
                                      {"field": "attributes.batch", "direction": "asc"}],
                         "select": ["amount", "attributes", "eClass", "amount"]})
    assert answer["rows"] == [
        {"id": qv("SAM2"), "eClass": "Sample", "amount": None,
         "attributes": {"batch": "B2", "ph": 6}},
        {"id": qv("SAMB"), "eClass": "Sample", "amount": None, "attributes": {}},
        {"id": qv("SAM3"), "eClass": "Sample", "amount": 10.0, "attributes": {}},
        {"id": qv("SAM1"), "eClass": "Sample", "amount": 1.5,
         "attributes": {"batch": "B1", "ph": 7.5}}]


def test_a_collection_over_the_cap_is_refused_not_cut(admin: ApiClient,
                                                       lab: dict[str, Any],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A shortened collection would silently drop rows from every later ``in`` join."""
    matching = len(run(admin, {"collection": "rows", "eClass": "Sample",
                               "filters": [OURS]})["rows"])
    assert matching > 1
    monkeypatch.setattr(dataset, "MAX_COLLECTION", matching - 1)
    response = admin.post("/api/query/dataset", json=[
        {"collection": "rows", "eClass": "Sample", "filters": [OURS]},
        {"collection": "joined", "eClass": "Sample",
         "filters": [{"field": "id", "in": "rows.id"}]}])
    body = assert_problem(response, 400, "invalid_dataset", errors=True)
    assert body["errors"][0]["field"] == "queries[0]"
    monkeypatch.setattr(dataset, "MAX_COLLECTION", matching)
    answer = run(admin, {"collection": "rows", "eClass": "Sample", "filters": [OURS]})
    assert len(answer["rows"]) == matching


def test_row_level_security_applies_to_every_query(bob: ApiClient, lab: dict[str, Any],
                                                   grant: Grants) -> None:
    queries = (
        {"collection": "experiments", "eClass": "Experiment", "filters": [OURS]},
        {"entity": "experiment", "eClass": "Experiment",
         "filters": [{"field": "id", "value": qv("EXP1")}]},
        {"collection": "steps", "eClass": "Step",
         "filters": [{"field": "experimentID", "value": "$experiment.id"}]},
        {"collection": "samples", "eClass": "Sample", "filters": [OURS]},
        {"collection": "overview", "view": "SampleOverview", "filters": [OURS]},
        {"collection": "storage", "view": "StorageOverview", "filters": [OURS]},
        {"collection": "locations", "eClass": "Location", "filters": [OURS]})
    answer = run(bob, *queries)
    assert answer["experiments"] == answer["steps"] == answer["storage"] == []
    assert answer["locations"] == [] and answer["experiment"] is None
    assert ids(answer["samples"]) == ids(answer["overview"]) == [qv("SAMB")]
    assert answer["overview"][0]["experimentName"] is None
    assert answer["overview"][0]["plateName"] is None

    grant.project(lab["P"], "Read", user="qv-bob")
    answer = run(bob, *queries)
    assert ids(answer["experiments"]) == [qv("EXP1")]
    assert answer["experiment"]["id"] == qv("EXP1") and len(answer["steps"]) == 4
    assert ids(answer["samples"]) == [qv("SAM1"), qv("SAM2"), qv("SAMB")]
    assert answer["overview"][2]["experimentName"] == "Growth curve"
    assert answer["overview"][2]["plateName"] is None and answer["storage"] == []


def test_an_empty_dataset_answers_an_empty_object(admin: ApiClient) -> None:
    assert run(admin) == {}
