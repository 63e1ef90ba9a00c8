"""Exports in the matrix (issue 14): only ADMIN (on an on-premises installation, which the
matrix's worlds are) lists, downloads and saves exports; everyone else gets 403, and a name
that is not an export of the sync/ folder is 404 even for ADMIN."""
from __future__ import annotations

from typing import Any

from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld, closed
from tests.contracts.visibility.paths import MatrixPath, Outcome

NOT_EXPORTS = {"unknown": "labapp-export-20260101T000000Z-abcdef.jsonl.gz",
               "traversal": "..%2Flabapp.db", "instance-file": "labapp.db"}


def _admin(caller: str) -> bool:
    mine = oracle.reach(caller)
    return mine is not None and mine.admin


def expect_admin(status: int) -> Any:
    return lambda caller, _subject: status if _admin(caller) else 403


def listed(live: LiveWorld, caller: str, _subject: str) -> Outcome:
    status, body = live.get_json(caller, "/api/sync/files")
    if status == 200 and not isinstance(body, list):
        return ("not a list", body)
    return status


def download(live: LiveWorld, caller: str, subject: str) -> Outcome:
    response = closed(live.client(caller).get(f"/api/sync/files/{NOT_EXPORTS[subject]}"))
    return response.status_code


def save(live: LiveWorld, caller: str, _subject: str) -> Outcome:
    """Save an export; ADMIN's must then be listed and downloadable."""
    response = live.client(caller).post("/api/sync/save")
    if response.status_code != 201:
        return response.status_code
    name = response.get_json()["filename"]
    status, body = live.get_json(caller, "/api/sync/files")
    if name not in {item["name"] for item in body}:
        return ("not listed", name, body)
    fetched = closed(live.client(caller).get(f"/api/sync/files/{name}"))
    if fetched.status_code != 200 or fetched.data[:2] != b"\x1f\x8b":
        return ("not downloadable", fetched.status_code)
    return 201


EXPORT_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("sync.files", ("all",), expect_admin(200), listed),
    MatrixPath("sync.file", tuple(NOT_EXPORTS), expect_admin(404), download),
)
EXPORT_WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("sync.save", ("all",), expect_admin(201), save),
)
