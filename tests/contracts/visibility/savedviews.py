"""Saved views in the matrix (issue 21 §2): shared by the dashboards' rule.

Each dashboard of :data:`boards.BOARDS` has a saved view with the same owner and shares
(keyed ``V-`` and the board's key): the same callers see it, the owner or ADMIN changes it,
the owner alone deletes it; one the caller cannot see is 404 like an unknown id. A view is
shared with the parties a dashboard may be (:func:`boards.may_name`).
"""
from __future__ import annotations

from typing import Any

from tests.contracts.visibility.boards import (
    BOARDS,
    PARTIES,
    BoardDef,
    _like_unknown,
    expect_share,
    naming,
    refused_like_unknown,
    sees,
)
from tests.contracts.visibility.build import LiveWorld
from tests.contracts.visibility.paths import MatrixPath, Outcome, hidden_like_unknown

VIEWS = {f"V-{board.key}": board for board in BOARDS}
VIEW_KEYS = tuple(VIEWS)
_MADE = "saved-views-made"


def _body(key: str, board: BoardDef) -> dict[str, Any]:
    return {"name": key, "eClass": "Sample", "filter": "status eq 'Initial'",
            "columns": ["name", "status"], "orderby": "name desc",
            "shares": board.body()["shares"]}


def _made(live: LiveWorld, key: str) -> dict[str, Any]:
    board = VIEWS[key]
    response = live.client(board.owner).post("/api/saved-view", json=_body(key, board))
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()


def ensure_views(live: LiveWorld) -> None:
    """Make the world's saved views once (their ids join the world's keys)."""
    if _MADE in live.ids:
        return
    for key in VIEW_KEYS:
        made = _made(live, key)
        live.ids[key] = made["id"]
        live.keys[made["id"]] = key
    live.ids[_MADE] = _MADE


def listed(live: LiveWorld, caller: str, _subject: str) -> Outcome:
    ensure_views(live)
    status, body = live.get_json(caller, "/api/saved-view?eClass=Sample")
    return frozenset(live.key(item["id"]) for item in body) if status == 200 else status


def expect_listed(caller: str, _subject: str) -> Outcome:
    return frozenset(key for key, board in VIEWS.items() if sees(caller, board))


def get_one(live: LiveWorld, caller: str, key: str) -> Outcome:
    ensure_views(live)
    url = f"/api/saved-view/{live.id(key)}"
    status, body = live.get_json(caller, url)
    if status == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), body)
    return status


def expect_get(caller: str, key: str) -> Outcome:
    return 200 if sees(caller, VIEWS[key]) else 404


def change(live: LiveWorld, caller: str, key: str) -> Outcome:
    """PUT a fresh copy of the view (made by its owner) as the caller."""
    copy = _made(live, key)
    url = f"/api/saved-view/{copy['id']}"
    body = {**_body(key, VIEWS[key]), "name": "changed"}
    response = live.client(caller).put(url, json=body)
    if response.status_code == 404:
        return _like_unknown(live, caller, "PUT", url, copy["id"], response.get_json(),
                             json=body)
    return response.status_code


def expect_change(caller: str, key: str) -> Outcome:
    board = VIEWS[key]
    if not sees(caller, board):
        return 404
    return 200 if caller in (board.owner, "admin") else 403


def remove(live: LiveWorld, caller: str, key: str) -> Outcome:
    """DELETE a fresh copy of the view as the caller; the owner removes it otherwise."""
    board = VIEWS[key]
    copy = _made(live, key)
    url = f"/api/saved-view/{copy['id']}"
    response = live.client(caller).delete(url)
    if response.status_code != 204:
        assert live.client(board.owner).delete(url).status_code == 204
    if response.status_code == 404:
        return _like_unknown(live, caller, "DELETE", url, copy["id"], response.get_json())
    return response.status_code


def expect_remove(caller: str, key: str) -> Outcome:
    board = VIEWS[key]
    if not sees(caller, board):
        return 404
    return 204 if caller == board.owner else 403


def share(live: LiveWorld, caller: str, party: str) -> Outcome:
    """A view of the caller's shared with one party: made (201, then deleted) or 400 exactly
    as for a party that does not exist."""
    body = {"name": "sharing", "eClass": "Sample", "shares": naming(live, party)}
    response = live.client(caller).post("/api/saved-view", json=body)
    if response.status_code == 201:
        url = f"/api/saved-view/{response.get_json()['id']}"
        assert live.client(caller).delete(url).status_code == 204
    elif response.status_code == 400:
        return refused_like_unknown(live, caller, "/api/saved-view", party, body, "shares",
                                    response)
    return response.status_code


SAVED_VIEW_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("saved-view.list", ("all",), expect_listed, listed),
    MatrixPath("saved-view.get", VIEW_KEYS, expect_get, get_one),
)
SAVED_VIEW_WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("saved-view.update", VIEW_KEYS, expect_change, change),
    MatrixPath("saved-view.delete", VIEW_KEYS, expect_remove, remove),
    MatrixPath("saved-view.share", PARTIES, expect_share, share),
)
