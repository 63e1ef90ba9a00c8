"""Sign-in events and second-factor resets in the matrix (issue 35 §4, §5): ADMIN only.

``GET /api/auth/signins`` answers every administrator and refuses (403) every other
signed-in caller; ``DELETE /api/user/{id}/secondFactor`` the same, with an unknown user 404
for an administrator only (no one else learns which users exist).
"""
from __future__ import annotations

from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld, closed
from tests.contracts.visibility.paths import UNKNOWN_ID, MatrixPath, Outcome


def sign_ins(live: LiveWorld, caller: str, _subject: str) -> Outcome:
    status, body = live.get_json(caller, "/api/auth/signins?$top=5")
    if status == 200 and not {"items", "count"} <= set(body):
        return ("not a page of events", body)
    return status


def reset(live: LiveWorld, caller: str, subject: str) -> Outcome:
    return closed(live.client(caller).delete(f"/api/user/{subject}/secondFactor")).status_code


def expect_admin(caller: str, _subject: str) -> Outcome:
    return 200 if oracle.reach(caller).admin else 403


def expect_reset(caller: str, subject: str) -> Outcome:
    if not oracle.reach(caller).admin:
        return 403
    return 404 if subject == UNKNOWN_ID else 204


SIGN_IN_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("signins", ("list",), expect_admin, sign_ins),
)
SIGN_IN_WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("secondFactor.reset", ("alice", UNKNOWN_ID), expect_reset, reset),
)
