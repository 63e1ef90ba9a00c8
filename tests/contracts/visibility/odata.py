"""The OData feed (issue 13): ``/odata`` and every view's feed answer exactly what the caller
may read, across server-driven pages (the world's feeds are read two rows a page, so the
``$skiptoken`` keyset position is crossed by every caller)."""
from __future__ import annotations

from typing import Any

from labapp.query.dbviews import BUILT_IN_VIEWS as VIEWS
from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld, closed
from tests.contracts.visibility.paths import MatrixPath, Outcome
from tests.contracts.visibility.queries import OVERVIEWS, expect_overview

PAGE_SIZE = 2
ORIGIN = "http://localhost"


def _get(live: LiveWorld, caller: str, url: str) -> tuple[int, Any]:
    response = closed(live.client(caller).get(url))
    return response.status_code, response.get_json(silent=True)


def feed_keys(live: LiveWorld, caller: str, view: str) -> Outcome:
    """Every page of ``/odata/{view}?$count=true``: the set of keys, the count agreeing."""
    settings = live.app.config["LABAPP"]
    saved, settings["ODATA_PAGE_SIZE"] = settings["ODATA_PAGE_SIZE"], PAGE_SIZE
    try:
        status, body = _get(live, caller, f"/odata/{view}?$count=true&$select=id")
        if status != 200:
            return status
        count, keys = body["@odata.count"], [row["id"] for row in body["value"]]
        while "@odata.nextLink" in body:
            status, body = _get(live, caller, body["@odata.nextLink"].removeprefix(ORIGIN))
            if status != 200:
                return ("a next page failed", status)
            keys.extend(row["id"] for row in body["value"])
    finally:
        settings["ODATA_PAGE_SIZE"] = saved
    if len(keys) != len(set(keys)) or count != len(keys):
        return ("pages disagree", count, sorted(keys))
    return frozenset(live.key(entity_id) for entity_id in keys)


def service_document(live: LiveWorld, caller: str, path: str) -> Outcome:
    status, body = _get(live, caller, path)
    return status if status != 200 else ("listed", len(body["value"]))


def expect_service(caller: str, path: str) -> Outcome:
    return ("listed", len(VIEWS))  # every view, for every authenticated caller


ODATA_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("odata.service", ("/odata",), expect_service, service_document),
    MatrixPath("odata.flat", ("Sample", "Experiment", "Note", "File"), oracle.visible_keys,
               feed_keys),
    MatrixPath("odata.overview", tuple(OVERVIEWS), expect_overview, feed_keys),
)
