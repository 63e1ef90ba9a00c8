"""The read path of the change feed (issue 36): a caller is told of an entity exactly when
they may read it now. Every entity of the world was made (and some moved) by committed
changes; the latest change the feed lists of an entity is an ordinary one, with the entity,
when the caller may read it, and either none or ``hidden`` when they may not."""
from __future__ import annotations

from typing import Any

from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld
from tests.contracts.visibility.paths import MatrixPath, Outcome
from tests.contracts.visibility.world import KEYS

PAGE = "/api/changes?$top=500&$expand=entity&after={}"


def _feed(live: LiveWorld, caller: str) -> tuple[int, list[dict[str, Any]]]:
    """Every change the feed lists to ``caller`` from the start (each page cached on a
    frozen world), or the refusal's status."""
    changes: list[dict[str, Any]] = []
    cursor = "0"
    while True:
        status, body = live.get_json(caller, PAGE.format(cursor))
        if status != 200:
            return status, []
        changes += body["data"]
        if not body["data"]:
            return 200, changes
        cursor = body["next"]


def told_of(live: LiveWorld, caller: str, key: str) -> Outcome:
    status, changes = _feed(live, caller)
    if status != 200:
        return status
    unreadable = sorted({live.key(change["entity"]["id"]) for change in changes
                         if change.get("entity") is not None
                         and not oracle.visible(caller, live.key(change["entity"]["id"]))})
    if unreadable:
        return ("shows unreadable", unreadable)
    mine = [change for change in changes if change["entityID"] == live.id(key)]
    if not mine or mine[-1]["kind"] == "hidden":
        return False
    if mine[-1].get("entity") is None:
        return ("listed without its entity", mine[-1])
    return True


def expect_told(caller: str, key: str) -> Outcome:
    return oracle.visible(caller, key)


CHANGE_READ_PATHS: tuple[MatrixPath, ...] = (MatrixPath("changes", KEYS, expect_told, told_of),)
