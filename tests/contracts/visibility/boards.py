"""Dashboards and notifications in the matrix (issue 12).

Dashboards are not entities: the rule (decisions §12) is that a user sees those they own and
those shared with them, with their *home* department, with a project they can read or with
one of their roles; ADMIN sees all. Only the owner or ADMIN updates; only the owner deletes;
a dashboard one cannot see is 404 like an unknown id, one seen but not changeable 403.
A dashboard may be shared with any user, department or role, and with the projects its saver
can read: a project they cannot read is refused as one that does not exist (400, issue 33).
Notifications are seen, changed and deleted by their owner only (404 for everyone else).

The dashboards of :data:`BOARDS` are made by their owners the first time a path needs them
(they live in tables of their own, so the entity expectations of the world are untouched).
Write paths work on fresh copies, so one caller's delete never changes another's answer.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld
from tests.contracts.visibility.paths import (
    UNKNOWN_ID,
    MatrixPath,
    Outcome,
    hidden_like_unknown,
)
from tests.contracts.visibility.world import (
    DEPARTMENTS,
    GRANTS,
    PROJECT_OWNERS,
    USER_BY_ID,
    USERS,
)


@dataclass(frozen=True)
class BoardDef:
    key: str
    owner: str
    users: tuple[str, ...] = ()
    departments: tuple[str, ...] = ()
    projects: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()

    def body(self) -> dict[str, Any]:
        return {"name": self.key, "widgets": [
            {"plugin": {"app": "labapp", "plugin": "status-counts"},
             "gridster": {"x": 0, "y": 0, "cols": 6, "rows": 4},
             "config": {"eClass": "Sample"}}],
            "shares": {"userIDs": list(self.users), "departmentIDs": list(self.departments),
                       "projectIDs": list(self.projects), "userRoles": list(self.roles)}}


BOARDS: tuple[BoardDef, ...] = (
    BoardDef("B-ALICE", "alice"),
    BoardDef("B-ALICE-TO-BOB", "alice", users=("bob",)),
    BoardDef("B-ALICE-TO-DM-ROLE", "alice", roles=("DATA_MANAGER",)),
    # bob's home: bob sees it; reader only reads DEP-B through a grant, so does not.
    BoardDef("B-CAROL-TO-DEP-B", "carol", departments=("DEP-B",)),
    BoardDef("B-BOB-TO-DEP-C", "bob", departments=("DEP-C",)),
    # carol writes PRJ-1, pat_user reads it; alice's DEP-A owns it, which gives her nothing.
    BoardDef("B-ADMIN-TO-PRJ-1", "admin", projects=("PRJ-1",)),
    BoardDef("B-PAT", "pat_user"),
)
BOARD = {board.key: board for board in BOARDS}
BOARD_KEYS = tuple(BOARD)
_MADE = "boards-made"


def sees(caller: str, board: BoardDef) -> bool:
    mine = oracle.reach(caller)
    assert mine is not None
    return (mine.admin or board.owner == caller or caller in board.users
            or USER_BY_ID[caller].home in board.departments
            or bool(mine.read_projects & set(board.projects))
            or bool(mine.roles & set(board.roles)))


def _made(live: LiveWorld, board: BoardDef) -> dict[str, Any]:
    response = live.client(board.owner).post("/api/dashboard", json=board.body())
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()


def ensure_boards(live: LiveWorld) -> None:
    """Make the world's dashboards once (their ids join the world's keys)."""
    if _MADE in live.ids:
        return
    for board in BOARDS:
        made = _made(live, board)
        live.ids[board.key] = made["id"]
        live.keys[made["id"]] = board.key
    live.ids[_MADE] = _MADE


def listed(live: LiveWorld, caller: str, _subject: str) -> Outcome:
    ensure_boards(live)
    status, body = live.get_json(caller, "/api/dashboard")
    return frozenset(live.key(item["id"]) for item in body) if status == 200 else status


def expect_listed(caller: str, _subject: str) -> Outcome:
    return frozenset(board.key for board in BOARDS if sees(caller, board))


def widget(live: LiveWorld, caller: str, key: str) -> Outcome:
    ensure_boards(live)
    url = f"/api/dashboard/{live.id(key)}/widget/0"
    status, body = live.get_json(caller, url)
    if status == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), body)
    return status


def expect_widget(caller: str, key: str) -> Outcome:
    return 200 if sees(caller, BOARD[key]) else 404


def unread(live: LiveWorld, caller: str, _subject: str) -> Outcome:
    """The ``(kind, subject key)`` of the caller's unread notifications, all their own."""
    ensure_boards(live)
    status, body = live.get_json(caller, "/api/notification/unread")
    if status != 200:
        return status
    if any(item["userID"] != caller for item in body):
        return ("someone else's notification", body)
    return frozenset((item["kind"], live.key(item["subjectID"])) for item in body)


def expect_unread(caller: str, _subject: str) -> Outcome:
    """Grants to the caller or their home department (made by admin), dashboards shared
    with the caller by name. A directory user, made by their first sign-in after the
    grants, was not there to be told of their department's."""
    user = USER_BY_ID[caller]
    given = {("AccessGiven", grant.target) for grant in GRANTS
             if grant.user == caller or (grant.department is not None
                                         and grant.department == user.home
                                         and user.source == "local")}
    shared = {("DashboardShared", board.key) for board in BOARDS
              if caller in board.users and board.owner != caller}
    return frozenset(given | shared)


def _like_unknown(live: LiveWorld, caller: str, method: str, url: str, hidden_id: str,
                  body: Any, **kwargs: Any) -> Outcome:
    """404, provided ``method`` on an id that never existed answers the same."""
    unknown = live.client(caller).open(method, url.replace(hidden_id, UNKNOWN_ID), **kwargs)
    if json.dumps(unknown.get_json()).replace(UNKNOWN_ID, hidden_id) != json.dumps(body):
        return ("404 unlike an unknown id", body, unknown.get_json())
    return 404


def change(live: LiveWorld, caller: str, key: str) -> Outcome:
    """PUT a fresh copy of the board (made by its owner) as the caller."""
    ensure_boards(live)
    board = BOARD[key]
    copy = _made(live, board)
    url = f"/api/dashboard/{copy['id']}"
    body = {**board.body(), "name": "changed"}
    response = live.client(caller).put(url, json=body)
    if response.status_code == 404:
        return _like_unknown(live, caller, "PUT", url, copy["id"], response.get_json(),
                             json=body)
    return response.status_code


def expect_change(caller: str, key: str) -> Outcome:
    board = BOARD[key]
    if not sees(caller, board):
        return 404
    return 200 if caller in (board.owner, "admin") else 403


def remove(live: LiveWorld, caller: str, key: str) -> Outcome:
    """DELETE a fresh copy of the board as the caller; the owner removes it otherwise."""
    ensure_boards(live)
    board = BOARD[key]
    copy = _made(live, board)
    url = f"/api/dashboard/{copy['id']}"
    response = live.client(caller).delete(url)
    if response.status_code != 204:
        assert live.client(board.owner).delete(url).status_code == 204
    if response.status_code == 404:
        return _like_unknown(live, caller, "DELETE", url, copy["id"], response.get_json())
    return response.status_code


def expect_remove(caller: str, key: str) -> Outcome:
    board = BOARD[key]
    if not sees(caller, board):
        return 404
    return 204 if caller == board.owner else 403


# Owners of the notifications the write paths act on: every active user but the admin,
# who raises them (by sharing a dashboard) and is never notified of their own act.
OWNERS = tuple(user.id for user in USERS if user.active and user.id != "admin")


def _fresh_notification(live: LiveWorld, owner: str) -> dict[str, Any]:
    admin = live.client("admin")
    response = admin.post("/api/dashboard", json={
        "name": f"for {owner}", "shares": {"userIDs": [owner]}})
    assert response.status_code == 201, response.get_data(as_text=True)
    board_id = response.get_json()["id"]
    response = live.client(owner).get("/api/notification/unread")
    status, body = response.status_code, response.get_json()
    assert status == 200, body
    return next(item for item in body if item["subjectID"] == board_id)


def _still_there(live: LiveWorld, owner: str, notification: dict[str, Any]) -> bool:
    body = live.client(owner).get("/api/notification/unread").get_json()
    return notification in body


def set_status(live: LiveWorld, caller: str, owner: str) -> Outcome:
    notification = _fresh_notification(live, owner)
    response = live.client(caller).post("/api/notification",
                                        json={"id": notification["id"], "status": "Read"})
    if response.status_code != 200 and not _still_there(live, owner, notification):
        return ("changed by a refused caller", response.status_code)
    return response.status_code


def delete_one(live: LiveWorld, caller: str, owner: str) -> Outcome:
    notification = _fresh_notification(live, owner)
    response = live.client(caller).delete(f"/api/notification/{notification['id']}")
    if response.status_code != 204 and not _still_there(live, owner, notification):
        return ("deleted by a refused caller", response.status_code)
    return response.status_code


# Every party a share or a rule's recipients may name: each user, department and project of
# the world, and two roles.
PARTIES = (*(f"user:{user.id}" for user in USERS),
           *(f"department:{department}" for department in DEPARTMENTS),
           *(f"project:{project}" for project in PROJECT_OWNERS),
           "role:ADMIN", "role:DATA_MANAGER")
PARTY_FIELDS = {"user": "userIDs", "department": "departmentIDs", "project": "projectIDs",
                "role": "userRoles"}


def may_name(caller: str, party: str) -> bool:
    """Whether the caller may name ``party`` in shares or recipients: any user, department
    and role (the directory), a project only when they see it (the Project entity)."""
    kind, _, target = party.partition(":")
    return kind != "project" or oracle.visible(caller, target)


def naming(live: LiveWorld, party: str) -> dict[str, list[str]]:
    """The four lists of parties, naming ``party`` alone."""
    kind, _, target = party.partition(":")
    lists: dict[str, list[str]] = {field: [] for field in PARTY_FIELDS.values()}
    lists[PARTY_FIELDS[kind]] = [live.id(target) if target in live.ids else target]
    return lists


def refused_like_unknown(live: LiveWorld, caller: str, url: str, party: str,
                         body: dict[str, Any], where: str, response: Any) -> Outcome:
    """400, provided ``POST url`` of ``body`` naming an unknown party of the same kind (in
    its ``where`` lists) answers the same: a party one may not name is never revealed."""
    named = naming(live, party)
    [target] = [value for values in named.values() for value in values]
    unknown = {field: [UNKNOWN_ID if value == target else value for value in values]
               for field, values in named.items()}
    answer = live.client(caller).post(url, json={**body, where: unknown}).get_json()
    if json.dumps(answer).replace(UNKNOWN_ID, target) != json.dumps(response.get_json()):
        return ("400 unlike an unknown party", response.get_json(), answer)
    return 400


def share(live: LiveWorld, caller: str, party: str) -> Outcome:
    """A dashboard of the caller's shared with one party: made (201, then deleted) or 400
    exactly as for a party that does not exist."""
    body = {"name": "sharing", "shares": naming(live, party)}
    response = live.client(caller).post("/api/dashboard", json=body)
    if response.status_code == 201:
        url = f"/api/dashboard/{response.get_json()['id']}"
        assert live.client(caller).delete(url).status_code == 204
    elif response.status_code == 400:
        return refused_like_unknown(live, caller, "/api/dashboard", party, body, "shares",
                                    response)
    return response.status_code


def expect_share(caller: str, party: str) -> Outcome:
    return 201 if may_name(caller, party) else 400


def expect_owner_only(status: int) -> Any:
    return lambda caller, owner: status if caller == owner else 404


BOARD_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("dashboard.list", ("all",), expect_listed, listed),
    MatrixPath("dashboard.widget", BOARD_KEYS, expect_widget, widget),
    MatrixPath("notification.unread", ("mine",), expect_unread, unread),
)
BOARD_WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("dashboard.update", BOARD_KEYS, expect_change, change),
    MatrixPath("dashboard.delete", BOARD_KEYS, expect_remove, remove),
    MatrixPath("dashboard.share", PARTIES, expect_share, share),
    MatrixPath("notification.status", OWNERS, expect_owner_only(200), set_status),
    MatrixPath("notification.delete", OWNERS, expect_owner_only(204), delete_one),
)
