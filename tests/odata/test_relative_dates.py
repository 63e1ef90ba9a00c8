"""Relative dates in the OData feed's ``$filter``: ``now()``, ``date(...)`` and durations,
evaluated at each request in UTC (decisions §7).

Samples are seeded through the API with expiry dates whole days from today and never within
a day of a filter's bound, so a request just after midnight UTC selects the same samples.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from tests.conftest import ApiClient
from tests.entities.conftest import save
from tests.odata.conftest import all_pages, odata_error, page

OFFSETS = (-30, -3, 3, 10, 20, 40)
OURS = "startswith(name, 'OdRel')"


def _seed(api: ApiClient) -> dict[int, str]:
    """One sample per offset, expiring that many days from today: ids by offset."""
    today = datetime.now(UTC).date()
    stored = save(api, *({"eClass": "Sample", "name": f"OdRel {offset:+d}",
                          "expiryDate": (today + timedelta(days=offset)).isoformat()}
                         for offset in OFFSETS))
    return {offset: item["id"] for offset, item in zip(OFFSETS, stored, strict=True)}


def _within(seeded: dict[int, str], keep: Callable[[int], bool]) -> set[str]:
    return {entity_id for offset, entity_id in seeded.items() if keep(offset)}


def test_views_filter_on_expiry_relative_to_today(admin: ApiClient) -> None:
    seeded = _seed(admin)
    soon = _within(seeded, lambda offset: offset < 14)
    for view in ("Sample", "SampleOverview"):
        body = page(admin, f"/odata/{view}", **{
            "$filter": f"{OURS} and expiryDate lt now() add duration'P14D'",
            "$select": "id,expiryDate", "$count": "true"})
        assert {row["id"] for row in body["value"]} == soon
        assert body["@odata.count"] == len(soon)
    body = page(admin, "/odata/Sample", **{"$filter": f"{OURS} and expiryDate ge date(now())",
                                           "$orderby": "expiryDate desc", "$select": "id"})
    assert [row["id"] for row in body["value"]] == [seeded[40], seeded[20], seeded[10],
                                                    seeded[3]]
    count = admin.get("/odata/Sample/$count", query_string={
        "$filter": f"{OURS} and createdUtc ge now() sub duration'PT12H'"})
    assert count.status_code == 200 and count.data == str(len(OFFSETS)).encode()


def test_next_links_carry_the_relative_filter(admin: ApiClient,
                                              small_pages: Callable[[int], None]) -> None:
    seeded = _seed(admin)
    small_pages(2)
    rows, pages = all_pages(admin, "/odata/Sample", **{
        "$filter": f"{OURS} and expiryDate gt now() sub duration'P7D' and "
                   "createdUtc le now()", "$select": "id"})
    assert {row["id"] for row in rows} == _within(seeded, lambda offset: offset > -7)
    assert pages == 3


def test_a_bad_duration_is_an_odata_error_with_its_position(admin: ApiClient) -> None:
    message = odata_error(admin.get("/odata/Sample", query_string={
        "$filter": "expiryDate lt now() add duration'P1M'"}), 400, "invalid_filter", "$filter")
    assert message.startswith("Duration 'P1M' counts years, months or weeks")
    assert message.endswith("at position 24")
    message = odata_error(admin.get("/odata/Sample", query_string={
        "$filter": "expiryDate lt tomorrow()"}), 400, "invalid_filter", "$filter")
    assert message == "Unknown function 'tomorrow' at position 14"
