"""``GET /api/query/suggest/entity/...`` and ``/suggest/field/...``: only what the caller may
see, best matches first, wildcards taken literally, and 400 for what cannot be suggested."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of, fetch, save


@pytest.fixture
def away(department: Callable[..., str]) -> str:
    return department("Away")


@pytest.fixture
def world(admin: ApiClient, away: str) -> None:
    """Samples of DEP00001 (alice's) and one of ``Away``, two steps (one in ``Away``) and an
    experiment whose name would match too."""
    save(admin,
         {"eClass": "Step", "id": "SG-STEP-V", "name": "Prep"},
         {"eClass": "Step", "id": "SG-STEP-H", "name": "Secret prep", "departmentID": away},
         {"eClass": "Experiment", "id": "SG-EXP", "name": "Beta experiment"},
         {"eClass": "Sample", "id": "SG-1", "name": "BETA", "unit": "ml", "amount": 1.5,
          "dateTaken": "2026-01-31", "stepID": "SG-STEP-V"},
         {"eClass": "Sample", "id": "SG-2", "name": "Zulu", "barcode": "beta", "unit": "l"},
         {"eClass": "Sample", "id": "SG-3", "name": "Betamax", "unit": "ml", "amount": 10},
         {"eClass": "Sample", "id": "SG-4", "name": "Other", "barcode": "BETA-9", "unit": "ul"},
         {"eClass": "Sample", "id": "SG-5", "name": "Alphabeta", "unit": ""},
         {"eClass": "Sample", "id": "X-BETA-1", "name": "Yankee", "stepID": "SG-STEP-H",
          "departmentID": DEFAULT_DEPARTMENT},
         {"eClass": "Sample", "id": "SG-6", "name": "Gamma"},
         {"eClass": "Sample", "id": "SG-H", "name": "Hidden beta", "unit": "secret-unit",
          "stepID": "SG-STEP-H", "departmentID": away})


@pytest.fixture
def alice(member: Callable[..., ApiClient], world: None) -> ApiClient:
    """A member of DEP00001: every sample but ``Hidden beta``, the step ``Prep`` only."""
    return member("alice")


def entities(api: ApiClient, path: str, status: int = 200) -> Any:
    return body_of(api.get(f"/api/query/suggest/entity/{path}"), status)


def values(api: ApiClient, path: str, status: int = 200, **query: str) -> Any:
    return body_of(api.get(f"/api/query/suggest/field/{path}",
                           query_string={f"${key}": value for key, value in query.items()}),
                   status)


def names(found: list[dict[str, Any]]) -> list[str]:
    return [entity["name"] for entity in found]


def test_exact_matches_come_first_then_prefixes_then_the_rest(alice: ApiClient) -> None:
    found = entities(alice, "Sample/beta")

    # Within each kind by the matched text: barcode "BETA-9" before name "Betamax".
    assert names(found) == ["BETA", "Zulu", "Other", "Betamax", "Alphabeta", "Yankee"]
    assert found[0] == {"id": "SG-1", "name": "BETA", "eClass": "Sample"}


def test_only_visible_entities_are_suggested(admin: ApiClient, alice: ApiClient) -> None:
    assert names(entities(admin, "sample/beta")) == [
        "BETA", "Zulu", "Other", "Betamax", "Alphabeta", "Hidden beta", "Yankee"]
    assert "Hidden beta" not in names(entities(alice, "Sample"))
    assert names(entities(alice, "Step")) == ["Prep"]


def test_without_a_query_the_first_twenty_by_name(alice: ApiClient, admin: ApiClient) -> None:
    save(admin, *({"eClass": "Sample", "id": f"SG-M{number:02d}", "name": f"Many {number:02d}"}
                  for number in range(25, 0, -1)))

    found = names(entities(alice, "Sample"))
    assert found == sorted(found) and len(found) == 20
    assert found[:4] == ["Alphabeta", "BETA", "Betamax", "Gamma"]
    assert names(entities(alice, "Sample/many")) == [f"Many {n:02d}" for n in range(1, 21)]


@pytest.mark.parametrize(("query", "expected"), [
    ("%", ["100% pure"]), ("_", ["a_b"]), ("0% p", ["100% pure"]), ("x/y", ["x/y"]),
    ("x/", ["x/y"]), ("A_B", ["a_b"]), ("no such thing", []),
])
def test_wildcards_spaces_and_slashes_are_literal(admin: ApiClient, query: str,
                                                  expected: list[str]) -> None:
    save(admin, *({"eClass": "Sample", "id": f"WC-{number}", "name": name}
                  for number, name in enumerate(["100% pure", "100 percent", "a_b", "axb",
                                                 "x/y"])))

    assert names(entities(admin, "Sample/" + quote(query))) == expected
    assert names(entities(admin, "Sample/" + quote(query, safe=""))) == expected


def test_entity_suggestions_of_an_unknown_class_are_404(admin: ApiClient, client) -> None:
    assert_problem(admin.get("/api/query/suggest/entity/Gadget"), 404, "unknown_class")
    assert_problem(admin.get("/api/query/suggest/entity/Gadget/x"), 404, "unknown_class")
    assert_problem(client.get("/api/query/suggest/entity/Sample"), 401, "not_authenticated")


def test_field_values_are_distinct_sorted_and_only_from_visible_entities(
        admin: ApiClient, alice: ApiClient) -> None:
    assert values(alice, "Sample/unit") == [{"value": "l", "name": None},
                                            {"value": "ml", "name": None},
                                            {"value": "ul", "name": None}]
    assert [item["value"] for item in values(admin, "sample/UNIT")] == [
        "l", "ml", "secret-unit", "ul"]


def test_field_values_contain_the_query_ignoring_case(admin: ApiClient,
                                                      alice: ApiClient) -> None:
    assert [item["value"] for item in values(alice, "Sample/unit/L")] == ["l", "ml", "ul"]
    assert [item["value"] for item in values(alice, "Sample/unit/u")] == ["ul"]
    assert [item["value"] for item in values(admin, "Sample/unit/u")] == ["secret-unit", "ul"]


def test_a_filter_narrows_the_entities_that_count(alice: ApiClient) -> None:
    assert values(alice, "Sample/unit", filter="amount gt 5") == [{"value": "ml", "name": None}]
    assert values(alice, "Sample/name/a", filter="unit eq 'ml' and amount lt 5") == [
        {"value": "BETA", "name": None}]


def test_references_carry_the_name_only_of_visible_entities(admin: ApiClient,
                                                            alice: ApiClient) -> None:
    assert values(alice, "Sample/stepID") == [{"value": "SG-STEP-H", "name": None},
                                              {"value": "SG-STEP-V", "name": "Prep"}]
    assert values(admin, "Sample/stepID") == [{"value": "SG-STEP-H", "name": "Secret prep"},
                                              {"value": "SG-STEP-V", "name": "Prep"}]
    home = fetch(admin, "Department", DEFAULT_DEPARTMENT)["name"]
    assert values(alice, "Sample/departmentID") == [{"value": DEFAULT_DEPARTMENT,
                                                     "name": home}]


def test_numbers_and_dates_come_back_as_text(alice: ApiClient) -> None:
    assert values(alice, "Sample/amount") == [{"value": "1.5", "name": None},
                                              {"value": "10.0", "name": None}]
    assert values(alice, "Sample/amount/10") == [{"value": "10.0", "name": None}]
    assert values(alice, "Sample/dateTaken/01-3") == [{"value": "2026-01-31", "name": None}]


def test_at_most_fifty_values(admin: ApiClient) -> None:
    save(admin, *({"eClass": "Sample", "id": f"SG-U{number:02d}", "unit": f"u{number:02d}"}
                  for number in range(55)))

    found = [item["value"] for item in values(admin, "Sample/unit/u")]
    assert found == [f"u{number:02d}" for number in range(50)]


@pytest.mark.parametrize(("query", "expected"), [
    ("b c%", ["a/b c%"]), ("a/", ["a/b c%"]), ("_", ["x_y"]), ("%", ["a/b c%"]),
])
def test_field_queries_take_wildcards_spaces_and_slashes_literally(
        admin: ApiClient, query: str, expected: list[str]) -> None:
    save(admin, {"eClass": "Sample", "id": "SG-W1", "unit": "a/b c%"},
         {"eClass": "Sample", "id": "SG-W2", "unit": "x_y"},
         {"eClass": "Sample", "id": "SG-W3", "unit": "xzy"})

    assert [item["value"] for item in values(admin, "Sample/unit/" + quote(query))] == expected


@pytest.mark.parametrize(("path", "code"), [
    ("Sample/volume", "unknown_field"),
    ("Sample/attributes", "unsupported_field"),
    ("User/roles", "unsupported_field"),
    ("Sample/attributes.batch", "unknown_field"),
])
def test_fields_that_cannot_be_suggested_are_400(admin: ApiClient, path: str,
                                                 code: str) -> None:
    assert_problem(admin.get(f"/api/query/suggest/field/{path}"), 400, code)


def test_a_bad_filter_is_400_with_its_position(admin: ApiClient) -> None:
    body = assert_problem(admin.get("/api/query/suggest/field/Sample/unit",
                                    query_string={"$filter": "amount gt"}),
                          400, "invalid_filter", errors=True)
    assert "position 9" in body["detail"]
    unknown = assert_problem(admin.get("/api/query/suggest/field/Sample/unit",
                                       query_string={"$filter": "volume eq 1"}),
                             400, "invalid_filter", errors=True)
    assert "volume" in unknown["detail"] and "position 0" in unknown["detail"]


def test_field_suggestions_of_an_unknown_class_are_404(admin: ApiClient, client) -> None:
    assert_problem(admin.get("/api/query/suggest/field/Gadget/name"), 404, "unknown_class")
    assert_problem(admin.get("/api/query/suggest/field/Gadget/name/x"), 404, "unknown_class")
    assert_problem(client.get("/api/query/suggest/field/Sample/name"), 401,
                   "not_authenticated")
