"""The fragments of issue 24. The storage tree's: opening a location answers the location
and its visible children only, each with how many items lie in it and below it — a true
count, hidden items and locations included — and a hidden location is answered exactly like
one that never existed. The entity table's count of a filter's matches: the visible ones
only. A visitor who is not signed in is sent to the login page, through htmx's
``HX-Redirect`` (its 401)."""
from __future__ import annotations

import re

from labapp.model.registry import CLASSES
from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld, closed
from tests.contracts.visibility.item_pages import _hidden_like_unknown, _page_status
from tests.contracts.visibility.paths import UNKNOWN_ID, MatrixPath, Outcome
from tests.contracts.visibility.storage import LOCATIONS
from tests.contracts.visibility.world import ENTITIES, STORED_IN

_TOTAL = re.compile(r'<span id="table-total">(\d+)</span>')
_ENTRY = re.compile(r'<li data-location="([^"]+)">.*?(\d+) stored', re.S)
_HTMX = {"HX-Request": "true"}


def opened(live: LiveWorld, caller: str, key: str) -> Outcome:
    """``GET /storage/locations/{id}/children`` as htmx sends it: ``(the location first,
    {child: items within})``."""
    response = closed(live.client(caller).get(
        f"/storage/locations/{live.id(key)}/children", headers=_HTMX))
    status = _page_status(response)
    if status == 204 and "/login" in response.headers.get("HX-Redirect", ""):
        return 401
    if status == 404:
        unknown = closed(live.client(caller).get(
            f"/storage/locations/{UNKNOWN_ID}/children", headers=_HTMX))
        return _hidden_like_unknown(response, unknown, live.id(key))
    if status != 200:
        return status
    (first, _), *children = _ENTRY.findall(response.get_data(as_text=True))
    return live.key(first) == key, frozenset((live.key(child), int(within))
                                             for child, within in children)


def _within(key: str) -> int:
    """Items stored in the location or anywhere below it, whoever may see them."""
    below = {key}
    while grown := {entity.key for entity in ENTITIES if entity.eclass == "Location"
                    and entity.payload.get("parentID") in below} - below:
        below |= grown
    return sum(1 for location in STORED_IN.values() if location in below)


def expect_opened(caller: str, key: str) -> Outcome:
    if not oracle.visible(caller, key):
        return 404
    return True, frozenset((entity.key, _within(entity.key)) for entity in ENTITIES
                           if entity.eclass == "Location"
                           and entity.payload.get("parentID") == key
                           and oracle.visible(caller, entity.key))


def counted(live: LiveWorld, caller: str, eclass: str) -> Outcome:
    """``GET /entities/count/{eClass}`` as the table's htmx asks for it, with a filter every
    entity matches: the number it answers."""
    response = closed(live.client(caller).get(
        f"/entities/count/{eclass}", query_string={"filter": f"id ne '{UNKNOWN_ID}'"},
        headers=_HTMX))
    status = _page_status(response)
    if status == 204 and "/login" in response.headers.get("HX-Redirect", ""):
        return 401
    if status != 200:
        return status
    found = _TOTAL.fullmatch(response.get_data(as_text=True).strip())
    return int(found.group(1)) if found else ("not a count", response.get_data(as_text=True))


def expect_counted(caller: str, eclass: str) -> Outcome:
    return len(oracle.visible_keys(caller, eclass))


READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("page.tree_children", LOCATIONS, expect_opened, opened),
    MatrixPath("page.table_count", tuple(CLASSES), expect_counted, counted),
)
