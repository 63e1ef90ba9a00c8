"""Relative dates in ``$filter`` (decisions §7): ``now()``, ``date(...)`` and ``add``/``sub``
with durations, in the grammar, the entity list, the dataset endpoint and search.

The grammar tests fix ``now`` (2026-02-01T12:00Z) over the rows of ``tests/query/conftest.py``.
The API tests seed samples whose expiry dates lie whole days away from today and never within
a day of a filter's bound, so a request that starts just after midnight UTC selects the same
samples as one made before it.
"""
from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import func, select

from labapp.db import db
from labapp.model import Sample
from labapp.model.registry import find_class
from labapp.query.filter import FilterError, compile_filter, entity_fields, parse_filter
from tests.conftest import ApiClient
from tests.entities.conftest import body_of, listing, save

NOW = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)
# Days from today of the seeded samples' expiry dates: none near 0 or 14, the filters' bounds.
OFFSETS = (-30, -3, 3, 10, 20, 40)
MARK = "RelDate"


def matching(text: str, now: datetime | None = NOW) -> set[str]:
    """Ids of the conftest rows (samples TQ1..TQ5) that ``text`` selects at ``now``."""
    condition = compile_filter(text, entity_fields(find_class("Sample")), user_id="alice",
                               now=now)
    query = select(Sample.id).where(condition, func.lower(Sample.id).startswith("tq"))
    return set(db.session.scalars(query))


def error_of(text: str) -> str:
    with pytest.raises(FilterError) as caught:
        matching(text)
    return caught.value.detail


def test_the_grammar_reads_functions_shifts_and_durations() -> None:
    tree = parse_filter("expiryDate lt now() add duration'P14D'")
    shift = tree.children[2]
    assert shift.data == "shift"
    call, op, duration = shift.children
    assert (call.data, str(call.children[0]), call.children[1]) == ("call", "now", None)
    assert (op.type, duration.type, str(duration)) == ("ADD", "DURATION", "duration'P14D'")
    nested = parse_filter("expiryDate ge date(now()) sub duration'P1D'").children[2]
    assert nested.data == "shift" and nested.children[0].children[1].data == "call"
    # Function names are not reserved words: fields may be called now or date.
    for name in ("now", "date"):
        assert parse_filter(f"{name} eq 1").children[0].children[0].type == "FIELD"


@pytest.mark.usefixtures("rows")
@pytest.mark.parametrize(("text", "expected"), [
    ("dateTaken lt now()", {"TQ1", "TQ5"}),
    ("dateTaken ge now() sub duration'P1D'", {"TQ1", "TQ2"}),
    ("dateTaken eq date(now()) sub duration'P1D'", {"TQ1"}),
    ("dateTaken ge now() add duration'P14D'", {"TQ2"}),
    ("dateTaken lt now() add duration'-P1D'", {"TQ5"}),
    ("dateTaken LT NOW() ADD DURATION'p14d'", {"TQ1", "TQ5"}),
    ("dateTaken in (date(now()) sub duration'P1D', 2026-01-01)", {"TQ1", "TQ5"}),
    ("not (dateTaken lt now())", {"TQ2", "TQ3", "TQ4"}),
    ("dateTaken eq 2026-01-30 add duration'P1D'", {"TQ1"}),
    ("createdUtc ge now() sub duration'P1DT2H'", {"TQ1", "TQ2", "TQ3"}),
    ("createdUtc lt now() sub duration'P17D'", {"TQ4"}),
    ("createdUtc le now() sub duration'P17D'", {"TQ4", "TQ5"}),
    ("createdUtc ge date(now())", {"TQ2", "TQ3"}),
    ("createdUtc lt date(now()) sub duration'P1D' add duration'PT10H30M'",
     {"TQ1", "TQ4", "TQ5"}),
    ("createdUtc gt 2026-02-15T08:30:00Z sub duration'PT0.5S'", {"TQ2", "TQ3"}),
    # An attribute compares as text with the ISO date (else 'A1' and 'B2' sort below 'd').
    ("attributes.batch lt date(now())", {"TQ5"}),
])
def test_relative_dates_select_from_now(text: str, expected: set[str]) -> None:
    assert matching(text) == expected


@pytest.mark.usefixtures("rows")
def test_now_defaults_to_the_current_time() -> None:
    assert matching("createdUtc lt now()", now=None) == {"TQ1", "TQ2", "TQ3", "TQ4", "TQ5"}
    assert matching("dateTaken gt now()", now=None) == set()


@pytest.mark.usefixtures("rows")
def test_a_long_chain_of_shifts_is_walked_not_recursed() -> None:
    assert matching("dateTaken lt now()" + " add duration'PT1S'" * 3000) == {"TQ1", "TQ5"}


@pytest.mark.usefixtures("rows")
@pytest.mark.parametrize(("text", "detail"), [
    ("dateTaken lt today()", "Unknown function 'today' at position 13"),
    ("foo(name) eq 'x'", "Unknown function 'foo' at position 0"),
    ("now() gt dateTaken", "now() can only be a value: put the field first, as in "
                           "expiryDate lt now(...) at position 0"),
    ("dateTaken lt now(2026-01-01)", "now() takes no argument at position 13"),
    ("dateTaken lt date()", "date() needs a date or time, as in date(now()) at position 18"),
    ("dateTaken lt now(", "Unexpected end of filter at position 17"),
    ("dateTaken lt now() add", "Unexpected end of filter at position 22"),
    ("dateTaken lt now() add 5", "Unexpected token '5' at position 23"),
    ("dateTaken lt duration'P1D'", "A duration needs a date or time to add it to, as in now() "
                                   "add duration'P14D' at position 13"),
    ("dateTaken lt now() add duration'P1M'", "Duration 'P1M' counts years, months or weeks; "
     "use days, hours, minutes and seconds (a month has no fixed length): P30D, PT12H at "
     "position 23"),
    ("dateTaken lt now() sub duration'P1Y2D'", "Duration 'P1Y2D' counts years, months or "
     "weeks; use days, hours, minutes and seconds (a month has no fixed length): P30D, PT12H "
     "at position 23"),
    ("dateTaken lt now() add duration'P2W'", "Duration 'P2W' counts years, months or weeks; "
     "use days, hours, minutes and seconds (a month has no fixed length): P30D, PT12H at "
     "position 23"),
    *((f"dateTaken lt now() add duration'{body}'",
       f"Invalid duration '{body.upper()}': expected ISO 8601 days and time, as in P14D, PT12H "
       "or P1DT2H30M at position 23") for body in ("P", "PT", "P1DT", "14 days", "PT1D")),
    ("dateTaken lt now() add duration'P99999999999D'", "Duration 'P99999999999D' is out of "
                                                       "range at position 23"),
    ("dateTaken lt now() add duration'P999999999D'", "Date out of range at position 19"),
    ("name eq now()", "Cannot compare str field 'name' with datetime now() at position 8"),
    ("amount gt date(now())", "Cannot compare float field 'amount' with date date(now()) at "
                              "position 10"),
    ("contains(name, now())", "contains() needs a quoted string, not now() at position 15"),
    ("dateTaken lt " + "date(" * 40 + "now()" + ")" * 40,
     "Filter is nested more than 32 levels deep at position 173"),
])
def test_errors_name_the_token_and_position(text: str, detail: str) -> None:
    assert error_of(text) == detail


def _seed(api: ApiClient, today: date) -> dict[int, str]:
    """One sample per offset, expiring that many days from ``today``: ids by offset."""
    stored = save(api, *({"eClass": "Sample", "name": f"{MARK} {offset:+d}",
                          "expiryDate": (today + timedelta(days=offset)).isoformat()}
                         for offset in OFFSETS))
    return {offset: item["id"] for offset, item in zip(OFFSETS, stored, strict=True)}


def _ids(rows: list[dict[str, Any]], seeded: dict[int, str]) -> set[str]:
    return {row["id"] for row in rows} & set(seeded.values())


def _expected(seeded: dict[int, str], keep: Any) -> set[str]:
    return {entity_id for offset, entity_id in seeded.items() if keep(offset)}


def test_the_entity_list_filters_on_expiry_relative_to_today(admin: ApiClient) -> None:
    seeded = _seed(admin, datetime.now(UTC).date())
    ours = f"startswith(name, '{MARK}')"

    def listed(text: str) -> set[str]:
        return _ids(listing(admin, "Sample", filter=f"{ours} and {text}", top=100)["data"],
                    seeded)

    assert listed("expiryDate lt now() add duration'P14D'") == _expected(
        seeded, lambda offset: offset < 14)
    assert listed("expiryDate ge date(now())") == _expected(seeded, lambda offset: offset >= 0)
    assert listed("expiryDate ge now() and expiryDate lt now() add duration'P14D'") == (
        _expected(seeded, lambda offset: 0 <= offset < 14))
    assert listed("expiryDate lt now() sub duration'P7D'") == {seeded[-30]}
    assert listed("createdUtc ge now() sub duration'PT1H'") == set(seeded.values())
    assert listed("createdUtc lt now() sub duration'P7D'") == set()
    assert listed("createdUtc gt now()") == set()


def test_the_entity_list_answers_a_bad_duration_with_its_position(admin: ApiClient) -> None:
    body = body_of(admin.get("/api/entity/Sample", query_string={
        "$filter": "expiryDate lt now() add duration'P1M'"}), 400)
    assert body["code"] == "invalid_filter"
    assert body["errors"][0]["field"] == "$filter"
    assert body["errors"][0]["message"].endswith("at position 24")


def _dataset(api: ApiClient, *filters: dict[str, Any], status: int = 200) -> Any:
    return body_of(api.post("/api/query/dataset", json=[{
        "collection": "samples", "eClass": "Sample",
        "filters": [{"field": "name", "op": "startswith", "value": MARK}, *filters]}]), status)


def test_the_dataset_takes_relative_values_on_date_fields(admin: ApiClient) -> None:
    seeded = _seed(admin, datetime.now(UTC).date())

    def kept(*filters: dict[str, Any]) -> set[str]:
        return _ids(_dataset(admin, *filters)["samples"], seeded)

    assert kept({"field": "expiryDate", "op": "lt",
                 "value": "now() add duration'P14D'"}) == _expected(seeded, lambda o: o < 14)
    assert kept({"field": "expiryDate", "op": "ge", "value": "date(now())"}) == _expected(
        seeded, lambda offset: offset >= 0)
    assert kept({"field": "expiryDate", "op": "gt", "value": "date(now()) sub duration'P7D'"},
                {"field": "expiryDate", "op": "lt", "value": "now() add duration'P7D'"}
                ) == {seeded[-3], seeded[3]}
    assert kept({"field": "createdUtc", "op": "ge",
                 "value": "now() sub duration'P1D'"}) == set(seeded.values())
    # On a text field the same words are plain text.
    assert kept({"field": "name", "op": "eq", "value": "now()"}) == set()
    body = _dataset(admin, {"field": "expiryDate", "op": "lt",
                            "value": "now() add duration'P1Y'"}, status=400)
    assert body["code"] == "invalid_dataset"
    assert body["errors"][0]["field"] == "queries[0].filters[1].value"
    assert "years, months or weeks" in body["errors"][0]["message"]
    body = _dataset(admin, {"field": "expiryDate", "op": "lt", "value": "soon"}, status=400)
    assert body["errors"][0]["message"] == (
        "Invalid date or datetime 'soon': Unexpected token 'soon'")


def test_search_filters_on_created_relative_to_now(admin: ApiClient) -> None:
    seeded = _seed(admin, datetime.now(UTC).date())

    def found(text: str) -> set[str]:
        response = admin.get(f"/api/search/like/{MARK}", query_string={"$filter": text,
                                                                      "$top": "100"})
        return _ids(body_of(response, 200)["data"], seeded)

    assert found("createdUtc ge now() sub duration'P7D'") == set(seeded.values())
    assert found("createdUtc ge date(now()) add duration'P1D'") == set()
    body = body_of(admin.get(f"/api/search/like/{MARK}",
                             query_string={"$filter": "createdUtc ge yesterday()"}), 400)
    assert body["errors"][0]["message"] == "Unknown function 'yesterday' at position 14"


def test_the_api_document_describes_relative_dates(client: FlaskClient) -> None:
    paths = body_of(client.get("/api/openapi.json"), 200)["paths"]
    for path in ("/api/entity/{eclass}", "/api/query/view/{name}", "/api/search/{term}",
                 "/api/query/suggest/field/{eclass}/{field}"):
        [parameter] = [item for item in paths[path]["get"]["parameters"]
                       if item["name"] == "$filter"]
        assert "now() add duration'P14D'" in parameter["description"], path
        assert "date(now())" in parameter["description"], path
