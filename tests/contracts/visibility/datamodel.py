"""The data-model paths (issue 14): the expected model for every authenticated caller; the
reflected schema, the diff and sync for ADMIN only (403 for everyone else)."""
from __future__ import annotations

from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld, closed
from tests.contracts.visibility.paths import MatrixPath, Outcome


def expected_model(live: LiveWorld, caller: str, _subject: str) -> Outcome:
    status, body = live.get_json(caller, "/api/datamodel")
    if status == 200 and "Sample" not in {item["name"] for item in body["classes"]}:
        return ("model without Sample", body)
    return status


def admin_read(live: LiveWorld, caller: str, path: str) -> Outcome:
    status, _body = live.get_json(caller, path)
    return status


def sync(live: LiveWorld, caller: str, _subject: str) -> Outcome:
    response = closed(live.client(caller).post("/api/sync"))
    return response.status_code


def expect_any(_caller: str, _subject: str) -> Outcome:
    return 200


def expect_admin(caller: str, _subject: str) -> Outcome:
    return 200 if oracle.reach(caller).admin else 403


DATAMODEL_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("datamodel.expected", ("model",), expect_any, expected_model),
    MatrixPath("datamodel.admin", ("/api/datamodel/actual", "/api/datamodel/diff"),
               expect_admin, admin_read),
)
DATAMODEL_WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("sync", ("run",), expect_admin, sync),
)
