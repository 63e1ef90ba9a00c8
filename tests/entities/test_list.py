"""``GET /api/entity/{eClass}``: pages of at most 500 with ``$top``, ``$skip``, ``$select``,
``$orderby`` and ``$filter``; ``{data, total, nextSkip, nextSkipToken}`` (keyset paging:
``test_keyset.py``)."""
from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import listing, save


@pytest.fixture
def samples(admin: ApiClient) -> list[dict[str, Any]]:
    """Five samples (LS-1..LS-5) and one experiment that no sample listing may show."""
    save(admin, {"eClass": "Experiment", "id": "LS-EXP", "name": "Alpha"})
    return save(
        admin,
        {"eClass": "Sample", "id": "LS-1", "name": "delta", "amount": 1.5, "status": "Completed",
         "attributes": {"colour": "red", "rank": 3}},
        {"eClass": "Sample", "id": "LS-2", "name": "Alpha", "amount": 10,
         "attributes": {"colour": "blue", "rank": 1}},
        {"eClass": "Sample", "id": "LS-3", "name": "charlie", "status": "Completed",
         "attributes": {"colour": "red"}},
        {"eClass": "Sample", "id": "LS-4", "name": "bravo", "amount": 2, "unit": "ml"},
        {"eClass": "Sample", "id": "LS-5", "name": "echo", "amount": 2, "experimentID": "LS-EXP",
         "status": "InProgress"})


def ids(page: dict[str, Any]) -> list[str]:
    return [row["id"] for row in page["data"]]


def test_a_listing_has_data_total_and_next_skip(admin: ApiClient, samples: list) -> None:
    page = listing(admin, "Sample")
    assert set(page) == {"data", "total", "nextSkip", "nextSkipToken"}
    assert ids(page) == ["LS-1", "LS-2", "LS-3", "LS-4", "LS-5"]
    assert page["nextSkipToken"] is None  # the last page
    assert page["total"] == 5 and page["nextSkip"] == 500
    assert page["data"] == samples  # every stored field, as the batch answered


def test_the_class_in_the_url_is_case_insensitive(admin: ApiClient, samples: list) -> None:
    page = listing(admin, "SAMPLE")
    assert ids(page) == ["LS-1", "LS-2", "LS-3", "LS-4", "LS-5"]
    assert {row["eClass"] for row in page["data"]} == {"Sample"}


def test_only_the_class_is_listed(admin: ApiClient, samples: list) -> None:
    page = listing(admin, "Experiment", filter="startswith(id, 'LS-')")
    assert ids(page) == ["LS-EXP"] and page["total"] == 1


def test_pages_hold_at_most_500_and_next_skip_advances_by_500(admin: ApiClient) -> None:
    created = save(admin, *({"eClass": "Sample", "type": "Bulk"} for _ in range(501)))
    assert len(created) == 501
    bulk = {"filter": "type eq 'Bulk'", "orderby": "id"}

    first = listing(admin, "Sample", top=1000, **bulk)
    assert len(first["data"]) == 500 and first["total"] == 501 and first["nextSkip"] == 500
    unbounded = listing(admin, "Sample", **bulk)
    assert ids(unbounded) == ids(first)
    last = listing(admin, "Sample", skip=first["nextSkip"], top=1000, **bulk)
    assert len(last["data"]) == 1 and last["total"] == 501 and last["nextSkip"] == 1000
    assert ids(first) + ids(last) == sorted(item["id"] for item in created)
    assert listing(admin, "Sample", skip=first["nextSkip"], skiptoken=first["nextSkipToken"],
                   **bulk) == last
    beyond = listing(admin, "Sample", skip=last["nextSkip"], **bulk)
    assert beyond == {"data": [], "total": 501, "nextSkip": 1500, "nextSkipToken": None}


@pytest.mark.parametrize(("top", "skip", "expected", "next_skip"), [
    (2, None, ["LS-1", "LS-2"], 500),
    (2, 1, ["LS-2", "LS-3"], 501),
    (0, None, [], 500),
    (None, 3, ["LS-4", "LS-5"], 503),
    (10, 5, [], 505),
    ("  3 ", "  0", ["LS-1", "LS-2", "LS-3"], 500),
])
def test_top_and_skip(admin: ApiClient, samples: list, top, skip, expected: list,
                      next_skip: int) -> None:
    options = {key: value for key, value in (("top", top), ("skip", skip)) if value is not None}
    page = listing(admin, "Sample", **options)
    assert ids(page) == expected
    assert page["total"] == 5 and page["nextSkip"] == next_skip


@pytest.mark.parametrize(("select", "keys"), [
    ("name", {"id", "eClass", "name"}),
    ("NAME, Amount", {"id", "eClass", "name", "amount"}),
    ("name,attributes.colour", {"id", "eClass", "name", "attributes.colour"}),
    ("attributes/colour", {"id", "eClass", "attributes.colour"}),
    ("attributes,attributes.rank", {"id", "eClass", "attributes", "attributes.rank"}),
    ("id,eClass", {"id", "eClass"}),
])
def test_select_picks_fields(admin: ApiClient, samples: list, select: str, keys: set) -> None:
    page = listing(admin, "Sample", select=select, orderby="id")
    assert all(set(row) == keys for row in page["data"])
    first = page["data"][0]
    if "attributes.colour" in keys:
        assert [row["attributes.colour"] for row in page["data"]] == ["red", "blue", "red",
                                                                       None, None]
    if "attributes" in keys:
        assert first["attributes"] == {"colour": "red", "rank": 3}
        assert first["attributes.rank"] == 3
    if "name" in keys:
        assert first["name"] == "delta"


@pytest.mark.parametrize(("orderby", "expected"), [
    ("name", ["LS-2", "LS-4", "LS-3", "LS-1", "LS-5"]),
    ("name desc", ["LS-5", "LS-1", "LS-3", "LS-4", "LS-2"]),
    ("amount desc", ["LS-3", "LS-2", "LS-4", "LS-5", "LS-1"]),
    ("amount", ["LS-1", "LS-4", "LS-5", "LS-2", "LS-3"]),
    ("amount, name desc", ["LS-1", "LS-5", "LS-4", "LS-2", "LS-3"]),
    ("AMOUNT desc, NAME DESC", ["LS-3", "LS-2", "LS-5", "LS-4", "LS-1"]),
    ("attributes.rank", ["LS-2", "LS-1", "LS-3", "LS-4", "LS-5"]),
])
def test_orderby_sorts(admin: ApiClient, samples: list, orderby: str, expected: list) -> None:
    assert ids(listing(admin, "Sample", orderby=orderby)) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("status eq 'Completed'", ["LS-1", "LS-3"]),
    ("status eq 'Completed' and amount gt 1", ["LS-1"]),
    ("amount ge 2 or status eq 'InProgress'", ["LS-2", "LS-4", "LS-5"]),
    ("id in ('LS-2', 'LS-4', 'LS-9')", ["LS-2", "LS-4"]),
    ("attributes.colour eq 'red'", ["LS-1", "LS-3"]),
    ("contains(tolower(name), 'a')", ["LS-1", "LS-2", "LS-3", "LS-4"]),
    ("unit isnull", ["LS-1", "LS-2", "LS-3", "LS-5"]),
    ("experimentID eq 'LS-EXP'", ["LS-5"]),
    ("createdBy eq 'admin' and not (status eq 'Initial')", ["LS-1", "LS-3", "LS-5"]),
])
def test_filter_selects_rows_and_total_counts_them(admin: ApiClient, samples: list, text: str,
                                                   expected: list) -> None:
    page = listing(admin, "Sample", filter=text, top=1)
    assert page["total"] == len(expected)
    assert ids(page) == expected[:1]
    assert ids(listing(admin, "Sample", filter=text)) == expected


def test_options_combine(admin: ApiClient, samples: list) -> None:
    page = listing(admin, "Sample", filter="amount ne null", orderby="amount desc, id",
                   select="amount", top=2, skip=1)
    assert isinstance(page.pop("nextSkipToken"), str)
    assert page == {"data": [{"id": "LS-4", "eClass": "Sample", "amount": 2.0},
                             {"id": "LS-5", "eClass": "Sample", "amount": 2.0}],
                    "total": 4, "nextSkip": 501}


def test_other_query_parameters_are_ignored(admin: ApiClient, samples: list) -> None:
    response = admin.get("/api/entity/Sample", query_string={"_": "12345", "$top": "1"})
    assert response.status_code == 200 and len(response.get_json()["data"]) == 1


def test_user_listing_reveals_no_secrets(admin: ApiClient, member) -> None:
    member("alice")
    page = listing(admin, "User", filter="id eq 'alice'")
    (row,) = page["data"]
    assert row["id"] == "alice" and row["isActive"] is True
    assert not {key for key in row if "password" in key.lower() or "hash" in key.lower()}
    assert "settings" not in row


# --- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "code"), [
    ({"top": "-1"}, "invalid_paging"),
    ({"top": "ten"}, "invalid_paging"),
    ({"top": "1.5"}, "invalid_paging"),
    ({"top": "1e3"}, "invalid_paging"),
    ({"skip": "-5"}, "invalid_paging"),
    ({"skip": "x"}, "invalid_paging"),
    ({"skip": "99999999999999999999"}, "invalid_paging"),
    ({"filter": "status eq"}, "invalid_filter"),
    ({"filter": "colour eq 'red'"}, "invalid_filter"),
    ({"filter": "name eq 'x' or"}, "invalid_filter"),
    ({"orderby": "colour"}, "invalid_orderby"),
    ({"orderby": "name sideways"}, "invalid_orderby"),
    ({"orderby": "attributes"}, "invalid_orderby"),
    ({"select": "colour"}, "invalid_select"),
    ({"select": "name,,id"}, "invalid_select"),
    ({"select": "experimentID/name"}, "invalid_select"),
])
def test_bad_options_are_400(admin: ApiClient, samples: list, options: dict,
                             code: str) -> None:
    query = {f"${key}": value for key, value in options.items()}
    response = admin.get("/api/entity/Sample", query_string=query)
    body = assert_problem(response, 400, code, errors=True)
    assert body["errors"][0]["field"] == f"${next(iter(options))}"


def test_a_filter_error_names_its_position(admin: ApiClient) -> None:
    response = admin.get("/api/entity/Sample", query_string={"$filter": "name eq 'x' and @"})
    body = assert_problem(response, 400, "invalid_filter", errors=True)
    assert "'@'" in body["detail"] and "position 16" in body["detail"]


def test_an_unknown_dollar_option_is_400(admin: ApiClient) -> None:
    response = admin.get("/api/entity/Sample", query_string={"$expand": "parent"})
    body = assert_problem(response, 400, "validation_failed", errors=True)
    assert body["errors"][0]["field"] == "$expand"


def test_an_unknown_class_is_404(admin: ApiClient) -> None:
    body = assert_problem(admin.get("/api/entity/Gadget"), 404, "unknown_class")
    assert "Gadget" in body["detail"]


def test_listing_needs_authentication(client) -> None:
    assert_problem(client.get("/api/entity/Sample"), 401, "not_authenticated")
