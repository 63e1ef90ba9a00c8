"""What a path of the matrix is, and the helpers its observers share.

A :class:`MatrixPath` is tried by every caller on each of its ``subjects``: ``expect`` says
what the rule (:mod:`.oracle`) allows an authenticated caller, ``observe`` what the API did.
Both return an *outcome*: a plain comparable value — a status code for a refusal, the set of
world keys a listing returned, ``(201, departmentID, projectID)`` for a create. Callers who
are not authenticated are expected ``401`` on every subject (the harness adds that).

To add an endpoint, write its ``observe`` (and ``expect`` when no existing one fits) and
append a ``MatrixPath`` to ``READ_PATHS`` in :mod:`.reads` (run on a world nothing writes
to; answers of the same URL are shared) or to ``WRITE_PATHS`` in :mod:`.writes` (run on a
world of their own; a write must not move existing entities, since every expectation is
computed from the world's definition — move only entities the observer makes itself).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.contracts.visibility.build import LiveWorld
from tests.contracts.visibility.world import ENTITY

Outcome = Any
SELF = "<self>"  # a created Department's departmentID, a Project's projectID
UNKNOWN_ID = "NO-SUCH-ID"


@dataclass(frozen=True)
class MatrixPath:
    """An endpoint of the matrix: its ``subjects`` (fixed at collection, so failures and
    known bugs name them), the outcome the rule allows and the outcome the API gives."""

    name: str
    subjects: tuple[str, ...]
    expect: Callable[[str, str], Outcome]
    observe: Callable[[LiveWorld, str, str], Outcome]


def hidden_like_unknown(live: LiveWorld, caller: str, url: str, entity_id: str,
                        body: Any, *, post: bool = False) -> Outcome:
    """404, provided the answer is the one an id that never existed gets (nothing revealed).

    ``post``: the 404 came from ``POST url`` with an empty object (a clone), not from a GET.
    """
    before, _, after = url.rpartition(entity_id)
    unknown = live.unknown_answer(caller, before + UNKNOWN_ID + after, post=post)
    if json.dumps(unknown).replace(UNKNOWN_ID, entity_id) != json.dumps(body):
        return ("404 unlike an unknown id", body, unknown)
    return 404


def entity_url(live: LiveWorld, key: str) -> str:
    return f"/api/entity/{ENTITY[key].eclass}/{live.id(key)}"


def placement(entity: dict[str, Any]) -> tuple[int, str | None, str | None]:
    """``(201, departmentID, projectID)`` of a created entity, its own id shown as SELF."""
    def shown(value: str | None) -> str | None:
        return SELF if value is not None and value == entity["id"] else value
    return 201, shown(entity.get("departmentID")), shown(entity.get("projectID"))


def created(response: Any, batch: bool = True) -> Outcome:
    """The placement of what a 201 created (``batch``: answered as ``{entities: [...]}``),
    else the status."""
    if response.status_code != 201:
        return response.status_code
    body = response.get_json()
    return placement(body["entities"][0] if batch else body)


def paged_keys(live: LiveWorld, caller: str, url: str) -> Outcome:
    """Every page of a ``{data, total, nextSkip}`` listing at ``url``: the set of keys, with
    ``total`` agreeing."""
    keys: set[str] = set()
    skip = 0
    while True:
        status, body = live.get_json(caller, f"{url}?$top=500&$skip={skip}")
        if status != 200:
            return status
        keys |= {live.key(row["id"]) for row in body["data"]}
        skip = body["nextSkip"]
        if skip >= body["total"]:
            break
    if body["total"] != len(keys):
        return ("total disagrees", body["total"], frozenset(keys))
    return frozenset(keys)
