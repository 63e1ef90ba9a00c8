"""``GET /api/entity/{eClass}`` pages by keyset (issue 24): ``nextSkipToken`` is the position
after a page's last row, ``$skiptoken`` starts the next page right there. A client following
``nextSkip`` and ``nextSkipToken`` reads every visible row once, in any order."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from labapp.query import paging
from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import listing, save, snapshot

MINE = "startswith(id, 'KS-')"


@pytest.fixture
def samples(admin: ApiClient) -> None:
    """Seven samples: names repeat, amounts and barcodes are partly missing."""
    rows = [("kilo", 2, "KS-B3"), ("kilo", None, None), ("lima", 2, None),
            ("alfa", None, "KS-B1"), ("kilo", 5, "KS-B2"), ("mike", 1, None),
            ("kilo", None, None)]
    save(admin, *({"eClass": "Sample", "id": f"KS-{number}", "name": name, "amount": amount,
                   "barcode": barcode, "departmentID": DEFAULT_DEPARTMENT}
                  for number, (name, amount, barcode) in enumerate(rows, start=1)))


def ids(page: dict[str, Any]) -> list[str]:
    return [row["id"] for row in page["data"]]


def walk(api: ApiClient, top: int = 2, **options: Any) -> list[str]:
    """Every id a client reads following ``nextSkip`` and ``nextSkipToken``, ``top`` a page."""
    seen: list[str] = []
    query: dict[str, Any] = {**options, "top": top}
    for _ in range(20):
        page = listing(api, "Sample", **query)
        seen += ids(page)
        if page["nextSkipToken"] is None:
            return seen
        assert page["nextSkip"] == query.get("skip", 0) + 500  # $skip still only counts
        query.update(skip=page["nextSkip"], skiptoken=page["nextSkipToken"])
    raise AssertionError(f"no last page after {seen}")


def test_a_page_tells_where_the_next_one_starts(admin: ApiClient, samples: None) -> None:
    first = listing(admin, "Sample", filter=MINE, top=3)
    assert set(first) == {"data", "total", "nextSkip", "nextSkipToken"}
    assert ids(first) == ["KS-1", "KS-2", "KS-3"] and first["nextSkip"] == 500
    second = listing(admin, "Sample", filter=MINE, top=3, skip=3,
                     skiptoken=first["nextSkipToken"])
    assert ids(second) == ["KS-4", "KS-5", "KS-6"] and second["total"] == 7
    last = listing(admin, "Sample", filter=MINE, skiptoken=second["nextSkipToken"])
    assert ids(last) == ["KS-7"] and last["nextSkipToken"] is None
    assert listing(admin, "Sample", filter=MINE, skiptoken="")["data"] == \
        listing(admin, "Sample", filter=MINE)["data"]


@pytest.mark.parametrize(("orderby", "expected"), [
    (None, [1, 2, 3, 4, 5, 6, 7]),
    ("name desc", [6, 3, 1, 2, 5, 7, 4]),
    ("amount", [6, 1, 3, 5, 2, 4, 7]),  # missing amounts last
    ("amount desc", [2, 4, 7, 5, 1, 3, 6]),  # missing amounts first
    ("barcode desc, name", [2, 7, 3, 6, 1, 5, 4]),
])
def test_following_the_tokens_reads_every_row_once(admin: ApiClient, samples: None,
                                                   orderby: str | None,
                                                   expected: list[int]) -> None:
    options = {"filter": MINE, **({"orderby": orderby} if orderby else {})}
    assert walk(admin, **options) == [f"KS-{number}" for number in expected]
    assert walk(admin, top=1, **options) == ids(listing(admin, "Sample", **options))


def test_a_filter_narrows_the_rows_after_a_position(admin: ApiClient, samples: None) -> None:
    kilos = f"{MINE} and startswith(name, 'k')"
    assert walk(admin, orderby="amount desc", filter=kilos) == ["KS-2", "KS-7", "KS-5", "KS-1"]
    # A position is only a position: another filter reads on from it.
    first = listing(admin, "Sample", filter=MINE, orderby="amount desc", top=2)
    rest = listing(admin, "Sample", filter=kilos, orderby="amount desc",
                   skiptoken=first["nextSkipToken"])
    assert ids(rest) == ["KS-7", "KS-5", "KS-1"]


def test_rows_the_caller_may_not_see_never_appear(admin: ApiClient, samples: None,
                                                 department: Callable[..., str],
                                                 member: Callable[..., ApiClient]) -> None:
    away = department("Away")
    save(admin, *({"eClass": "Sample", "id": f"KS-{number}h", "name": "kilo",
                   "departmentID": away} for number in range(1, 8)))
    everything = walk(admin, filter=MINE, orderby="name")
    assert len(everything) == 14
    alice = member("alice")
    assert walk(alice, filter=MINE, orderby="name") == [
        entity_id for entity_id in everything if not entity_id.endswith("h")]
    # A position at a hidden row (from someone who sees it) shows only what alice may see.
    admin_page = listing(admin, "Sample", filter=MINE, orderby="name", top=3)
    assert ids(admin_page)[-1] == "KS-1h"
    after_hidden = listing(alice, "Sample", filter=MINE, orderby="name",
                           skiptoken=admin_page["nextSkipToken"])
    assert ids(after_hidden) == ["KS-2", "KS-5", "KS-7", "KS-3", "KS-6"]


def experiments(admin: ApiClient) -> str:
    """A token of the Experiment list by name."""
    save(admin, {"eClass": "Experiment", "name": "one"}, {"eClass": "Experiment", "name": "two"})
    return listing(admin, "Experiment", orderby="name", top=1)["nextSkipToken"]


@pytest.mark.parametrize("case", ["malformed", "not base64 json", "another class",
                                  "another order", "another direction", "OData's"])
def test_a_foreign_or_bad_token_is_a_400_that_writes_nothing(app: Flask, admin: ApiClient,
                                                            samples: None, case: str) -> None:
    by_name = listing(admin, "Sample", orderby="name", top=1)["nextSkipToken"]
    token, orderby = {
        "malformed": ("%%%", "name"),
        "not base64 json": ("bm90IGpzb24", "name"),
        "another class": (experiments(admin), "name"),
        "another order": (by_name, "amount"),
        "another direction": (by_name, "name desc"),
        "OData's": (paging.encode(paging.fingerprint("Sample", ""), ["KS-1"]), None),
    }[case]
    before = snapshot(app)
    query = {"$skiptoken": token, **({"$orderby": orderby} if orderby else {})}
    response = admin.get("/api/entity/Sample", query_string=query)
    problem = assert_problem(response, 400, "invalid_skiptoken", errors=True)
    assert problem["errors"][0]["field"] == "$skiptoken"
    assert snapshot(app) == before
