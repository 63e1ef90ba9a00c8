"""Without a filter the list's ``total`` comes from the entity tallies (issue 24: counting a
million visible rows took 0.8-1.6 s); it must be the count of the rows the caller may see,
before and after the worker folds the tallies, and as entities move out of sight."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask

from labapp.dashboards import tally_folding
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import Grants, listing, save


def _walked(api: ApiClient, eclass: str) -> int:
    """How many rows the caller reads, page by page (the true count)."""
    seen, query = 0, {}
    while True:
        page = listing(api, eclass, **query)
        seen += len(page["data"])
        if page["nextSkipToken"] is None:
            return seen
        query = {"skip": page["nextSkip"], "skiptoken": page["nextSkipToken"]}


def test_the_unfiltered_total_counts_what_the_caller_may_see(
        app: Flask, admin: ApiClient, department: Callable[..., str],
        project: Callable[..., str], member: Callable[..., ApiClient], grant: Grants) -> None:
    own, other = department("Tally own"), department("Tally other")
    granted = project("Tally granted", departmentID=other)
    reader = member("tally-reader", department_id=own)
    grant.project(granted, "Read", user="tally-reader")
    made: list[dict[str, Any]] = save(
        admin, *({"eClass": "Sample", "name": f"Tally {n}", "departmentID": own}
                 for n in range(3)),
        {"eClass": "Sample", "name": "Tally granted", "departmentID": other,
         "projectID": granted},
        {"eClass": "Sample", "name": "Tally hidden", "departmentID": other})

    def totals() -> tuple[int, int]:
        page = listing(reader, "Sample", top=0)
        assert page["total"] == _walked(reader, "Sample")
        assert listing(admin, "Sample", top=0)["total"] == _walked(admin, "Sample")
        return page["total"], listing(reader, "Department", top=0)["total"]

    unfolded = totals()
    assert unfolded[0] == 4  # three of their department's, one of the granted project's
    with app.app_context():
        tally_folding.fold()
    assert totals() == unfolded
    save(admin, {"eClass": "Sample", "id": made[0]["id"], "departmentID": other}, status=200)
    assert totals()[0] == 3  # moved out of their sight
    assert listing(reader, "Department", top=0)["total"] == _walked(reader, "Department")


def test_count_false_leaves_the_total_out_and_pages_alike(
        admin: ApiClient, department: Callable[..., str],
        member: Callable[..., ApiClient]) -> None:
    """``$count=false``: the same rows, positions and tokens, ``total`` null; a client reads
    to the end by ``nextSkipToken``."""
    own = department("Uncounted own")
    reader = member("uncounted-reader", department_id=own)
    save(admin, *({"eClass": "Sample", "name": f"Uncounted {n}", "amount": n,
                   "departmentID": own} for n in range(7)),
         {"eClass": "Sample", "name": "Uncounted hidden", "amount": 9})
    query = {"filter": "amount ge 2", "orderby": "name desc", "top": 2}
    for count in ("false", "FALSE", "False"):
        counted, uncounted = (listing(reader, "Sample", **query, **extra)
                              for extra in ({}, {"count": count}))
        assert counted["total"] == 5 and uncounted["total"] is None
        assert {key: value for key, value in uncounted.items() if key != "total"} == {
            key: value for key, value in counted.items() if key != "total"}
    assert listing(reader, "Sample", count="true", **query)["total"] == 5
    seen, extra = [], {}
    while True:
        page = listing(reader, "Sample", count="false", **query, **extra)
        seen += [item["name"] for item in page["data"]]
        if page["nextSkipToken"] is None:
            break
        extra = {"skip": page["nextSkip"], "skiptoken": page["nextSkipToken"]}
    assert seen == [f"Uncounted {n}" for n in range(6, 1, -1)]


def test_a_count_neither_true_nor_false_is_refused(admin: ApiClient) -> None:
    for value in ("yes", "1", "tru"):
        response = admin.get("/api/entity/Sample", query_string={"$count": value})
        problem = assert_problem(response, 400, "invalid_count", errors=True)
        assert problem["errors"][0]["field"] == "$count", problem
