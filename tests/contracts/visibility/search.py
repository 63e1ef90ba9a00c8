"""The read paths of search (issue 10): every mode, searched for each entity's own id, finds
the entity exactly when the caller may read it, and never answers anything they may not."""
from __future__ import annotations

from collections.abc import Callable

from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld
from tests.contracts.visibility.paths import MatrixPath, Outcome
from tests.contracts.visibility.world import KEYS

SEARCHES = {"search": "/api/search/{}", "search.exact": "/api/search/exact/{}",
            "search.like": "/api/search/like/{}", "search.fulltext": "/api/search/fulltext/{}",
            "query.freetext": "/api/query/freetext/{}"}


def _finds(url: str) -> Callable[[LiveWorld, str, str], Outcome]:
    def observe(live: LiveWorld, caller: str, key: str) -> Outcome:
        status, body = live.get_json(caller, url.format(live.id(key)) + "?$top=500")
        if status != 200:
            return status
        keys = {live.key(item["id"]) for item in body["data"]}
        unreadable = sorted(found for found in keys
                            if found.startswith("?") or not oracle.visible(caller, found))
        return ("shows unreadable", unreadable) if unreadable else key in keys
    return observe


def expect_found(caller: str, key: str) -> Outcome:
    return oracle.visible(caller, key)


SEARCH_READ_PATHS: tuple[MatrixPath, ...] = tuple(
    MatrixPath(name, KEYS, expect_found, _finds(url)) for name, url in SEARCHES.items())
