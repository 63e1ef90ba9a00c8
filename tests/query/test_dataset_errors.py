"""``POST /api/query/dataset``: every malformed or invalid body is a 400 problem naming the
place of the error (``queries[2].filters[0].field``)."""
from __future__ import annotations

import json
from typing import Any

import pytest

from labapp.query.conditions import MAX_VALUES
from labapp.query.dataset import MAX_QUERIES
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem

EXPERIMENTS = {"collection": "experiments", "eClass": "Experiment"}
EXPERIMENT = {"entity": "experiment", "eClass": "Experiment"}


def steps(*filters: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"collection": "steps", "eClass": "Step", "filters": list(filters), **extra}


def post(api: ApiClient, body: Any) -> Any:
    return api.post("/api/query/dataset", json=body)


@pytest.mark.parametrize(("body", "field"), [
    ({"collection": "x", "eClass": "Sample"}, "queries"),
    ("Sample", "queries"),
    ([EXPERIMENTS] * (MAX_QUERIES + 1), "queries"),
    ([5], "queries[0]"),
    ([EXPERIMENTS, None], "queries[1]"),
    ([{"collection": "a", "entity": "b", "eClass": "Sample"}], "queries[0].collection"),
    ([{"eClass": "Sample"}], "queries[0].collection"),
    ([{"collection": "a", "eClass": "Sample", "view": "Sample"}], "queries[0].eClass"),
    ([{"collection": "a"}], "queries[0].eClass"),
    ([{"collection": 5, "eClass": "Sample"}], "queries[0].collection"),
    ([{**EXPERIMENTS, "where": "x"}], "queries[0].where"),
    ([EXPERIMENTS, steps({"field": "name", "bogus": 1})], "queries[1].filters[0].bogus"),
    ([steps({"value": 1})], "queries[0].filters[0].field"),
    ([steps({"field": "name", "values": "a"})], "queries[0].filters[0].values"),
    ([{**EXPERIMENTS, "sortings": [{"direction": "asc"}]}], "queries[0].sortings[0].field"),
    ([{**EXPERIMENTS, "select": ["name", 3]}], "queries[0].select[1]"),
    ([{**EXPERIMENTS, "filters": {"field": "name"}}], "queries[0].filters"),
])
def test_malformed_queries(admin: ApiClient, body: Any, field: str) -> None:
    problem = assert_problem(post(admin, body), 400, "validation_failed", errors=True)
    assert problem["errors"][0]["field"] == field, problem
    assert problem["detail"].startswith(field) or field == "queries"


@pytest.mark.parametrize(("body", "field", "message"), [
    ([{"collection": "x", "eClass": "Nope"}], "queries[0].eClass", "Unknown entity class"),
    ([{"collection": "x", "view": "Nope"}], "queries[0].view", "Unknown view"),
    ([EXPERIMENTS, {"collection": "experiments", "eClass": "Step"}], "queries[1].collection",
     "already used by queries[0]"),
    ([EXPERIMENTS, {"entity": "experiments", "eClass": "Step"}], "queries[1].entity",
     "already used"),
    ([{"collection": "a.b", "eClass": "Step"}], "queries[0].collection", "not a valid"),
    ([{"collection": "", "eClass": "Step"}], "queries[0].collection", "not a valid"),
    ([EXPERIMENTS, steps({"field": "nmae", "value": "x"})], "queries[1].filters[0].field",
     "Unknown field 'nmae'"),
    ([steps({"field": "attributes", "value": "x"})], "queries[0].filters[0].field", "JSON"),
    ([steps({"field": "name", "op": "like", "value": "x"})], "queries[0].filters[0].op",
     "Unknown operator 'like'"),
    ([steps({"field": "stepIndex", "value": "one"})], "queries[0].filters[0].value",
     "Cannot compare int field 'stepIndex' with string 'one'"),
    ([steps({"field": "startDate", "value": "yesterday"})], "queries[0].filters[0].value",
     "Invalid date"),
    ([steps({"field": "name", "value": {"a": 1}})], "queries[0].filters[0].value",
     "must be a string, number, boolean or null"),
    ([steps({"field": "name", "values": [["a"]]})], "queries[0].filters[0].values",
     "must be a string"),
    ([steps({"field": "stepIndex", "op": "contains", "value": "1"})],
     "queries[0].filters[0].value", "needs a text field"),
    ([steps({"field": "stepIndex", "op": "gt", "value": None})],
     "queries[0].filters[0].value", "null can only be compared with eq or ne"),
    ([steps({"field": "name", "op": "in", "value": ["a"]})], "queries[0].filters[0].value",
     "needs 'values' or 'in'"),
    ([steps({"field": "name", "op": "not_in"})], "queries[0].filters[0]",
     "needs 'values' or 'in'"),
    ([steps({"field": "name", "op": "eq", "values": ["a"]})],
     "queries[0].filters[0].values", "needs a 'value'"),
    ([steps({"field": "name"})], "queries[0].filters[0]", "needs a 'value'"),
    ([steps({"field": "name", "op": "isnull", "value": None})],
     "queries[0].filters[0].value", "takes no value"),
    ([steps({"field": "name", "value": "a", "values": ["a"]})], "queries[0].filters[0]",
     "only one of"),
    ([steps({"field": "name", "values": ["a"] * (MAX_VALUES + 1)})],
     "queries[0].filters[0].values", f"More than {MAX_VALUES} values"),
    ([steps({"field": "experimentID", "in": "experiments.id"}), EXPERIMENTS],
     "queries[0].filters[0].in", "later query (queries[1])"),
    ([steps({"field": "experimentID", "in": "steps.id"})], "queries[0].filters[0].in",
     "own result"),
    ([steps({"field": "experimentID", "in": "nothing.id"})], "queries[0].filters[0].in",
     "Unknown result key 'nothing'"),
    ([EXPERIMENT, steps({"field": "experimentID", "in": "experiment.id"})],
     "queries[1].filters[0].in", "is an entity result; use the value '$experiment.<field>'"),
    ([EXPERIMENTS, steps({"field": "experimentID", "in": "experiments"})],
     "queries[1].filters[0].in", "Expected 'key.field'"),
    ([EXPERIMENTS, steps({"field": "experimentID", "in": "experiments.nope"})],
     "queries[1].filters[0].in", "Unknown field 'nope'"),
    ([EXPERIMENTS, steps({"field": "experimentID", "in": "experiments.attributes"})],
     "queries[1].filters[0].in", "JSON"),
    ([EXPERIMENTS, steps({"field": "experimentID", "value": "$experiments.id"})],
     "queries[1].filters[0].value", "is a collection result; join it with in"),
    ([steps({"field": "experimentID", "value": "$experiment.id"}), EXPERIMENT],
     "queries[0].filters[0].value", "later query"),
    ([steps({"field": "experimentID", "value": "$nothing.id"})],
     "queries[0].filters[0].value", "Unknown result key 'nothing'"),
    ([EXPERIMENT, steps({"field": "experimentID", "value": "$experiment.nope"})],
     "queries[1].filters[0].value", "Unknown field 'nope'"),
    ([{"entity": "me", "eClass": "User", "filters": [{"field": "id", "value": "admin"}]},
      steps({"field": "stepIndex", "value": "$me.name"})], "queries[1].filters[0].value",
     "Cannot compare int field 'stepIndex' with string 'Administrator'"),
    ([steps(sortings=[{"field": "nope"}])], "queries[0].sortings[0].field", "Unknown field"),
    ([steps(sortings=[{"field": "attributes"}])], "queries[0].sortings[0].field", "JSON"),
    ([steps(sortings=[{"field": "name", "direction": "up"}])],
     "queries[0].sortings[0].direction", "Expected asc or desc"),
    ([steps(select=["name", "nope"])], "queries[0].select[1]", "Unknown field 'nope'"),
    ([{"collection": "x", "view": "SampleOverview", "select": ["attributes.batch"]}],
     "queries[0].select[0]", "there are no attributes here"),
])
def test_invalid_queries(admin: ApiClient, body: list[Any], field: str,
                         message: str) -> None:
    problem = assert_problem(post(admin, body), 400, "invalid_dataset", errors=True)
    assert problem["errors"] == [{"field": field, "message": problem["errors"][0]["message"]}]
    assert message in problem["errors"][0]["message"], problem
    assert problem["detail"] == f"{field}: {problem['errors'][0]['message']}"


def test_numbers_json_cannot_hold_are_refused(admin: ApiClient) -> None:
    body = json.dumps([steps({"field": "stepIndex", "value": 0})]).replace("0}", "NaN}")
    response = admin.post("/api/query/dataset", data=body,
                          headers={"Content-Type": "application/json"})
    problem = assert_problem(response, 400, "invalid_dataset", errors=True)
    assert problem["errors"][0]["field"] == "queries[0].filters[0].value"


def test_body_must_be_json(admin: ApiClient) -> None:
    assert_problem(admin.post("/api/query/dataset", data="[]"), 415, "unsupported_media_type")
    assert_problem(admin.post("/api/query/dataset", data="[",
                              headers={"Content-Type": "application/json"}), 400,
                   "invalid_json")


def test_anonymous_callers_are_401(client) -> None:
    assert_problem(client.post("/api/query/dataset", json=[]), 401, "not_authenticated")
