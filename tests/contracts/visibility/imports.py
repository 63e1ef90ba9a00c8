"""Spreadsheet imports in the matrix (issue 22): a job is seen by its owner and ADMIN only,
anyone else gets the 404 of an unknown id; starting one and the template need the right to
create entities of the class (a Sample anyone signed in, a Department ADMIN or
DATA_MANAGER: 403 otherwise)."""
from __future__ import annotations

from io import BytesIO

from labapp.imports import jobs
from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld, closed
from tests.contracts.visibility.paths import MatrixPath, Outcome, hidden_like_unknown

OWNERS = ("admin", "alice", "bob")
JOBS = tuple(f"I-{owner}" for owner in OWNERS)
CLASSES = ("Sample", "Department")
_MADE = "imports-made"


def _start(live: LiveWorld, caller: str, eclass: str) -> tuple[int, dict]:
    form = {"file": (BytesIO(b"Name\nImported by the matrix\n"), "matrix.csv"),
            "eClass": eclass}
    response = closed(live.client(caller).post("/api/import", data=form,
                                               content_type="multipart/form-data"))
    return response.status_code, response.get_json()


def ensure_jobs(live: LiveWorld) -> None:
    """Each owner's dry run, run to its end, once per world (their ids join its keys)."""
    if _MADE in live.ids:
        return
    for owner, key in zip(OWNERS, JOBS, strict=True):
        status, body = _start(live, owner, "Sample")
        assert status == 202, body
        live.ids[key] = body["id"]
        live.keys[body["id"]] = key
    with live.app.app_context():
        while jobs.upkeep():
            continue
    live.ids[_MADE] = _MADE


def _sees(caller: str, key: str) -> bool:
    mine = oracle.reach(caller)
    return mine is not None and (mine.admin or key == f"I-{caller}")


def _may_create(caller: str, eclass: str) -> bool:
    mine = oracle.reach(caller)
    return mine is not None and (eclass == "Sample" or mine.admin or "DATA_MANAGER" in mine.roles)


def get_job(live: LiveWorld, caller: str, key: str) -> Outcome:
    ensure_jobs(live)
    url = f"/api/import/{live.id(key)}"
    status, body = live.get_json(caller, url)
    if status == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), body)
    if status == 200 and body["counts"]["create"] != 1:
        return ("not done", body)
    return status


def annotated(live: LiveWorld, caller: str, key: str) -> Outcome:
    ensure_jobs(live)
    response = closed(live.client(caller).get(f"/api/import/{live.id(key)}/annotated"))
    return response.status_code


def expect_job(caller: str, key: str) -> Outcome:
    return 200 if _sees(caller, key) else 404


def template(live: LiveWorld, caller: str, eclass: str) -> Outcome:
    return closed(live.client(caller).get(f"/api/import/template/{eclass}")).status_code


def expect_template(caller: str, eclass: str) -> Outcome:
    return 200 if _may_create(caller, eclass) else 403


def start(live: LiveWorld, caller: str, eclass: str) -> Outcome:
    return _start(live, caller, eclass)[0]


def expect_start(caller: str, eclass: str) -> Outcome:
    return 202 if _may_create(caller, eclass) else 403


def commit(live: LiveWorld, caller: str, key: str) -> Outcome:
    """Commit the dry run (queued only: no worker runs it, the world is left as it was)."""
    ensure_jobs(live)
    url = f"/api/import/{live.id(key)}/commit"
    response = closed(live.client(caller).post(url))
    if response.status_code == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), response.get_json(),
                                   post=True)
    return response.status_code


def expect_commit(caller: str, key: str) -> Outcome:
    return 202 if _sees(caller, key) else 404


IMPORT_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("import.get", JOBS, expect_job, get_job),
    MatrixPath("import.annotated", JOBS, expect_job, annotated),
    MatrixPath("import.template", CLASSES, expect_template, template),
)
IMPORT_WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("import.start", CLASSES, expect_start, start),
    MatrixPath("import.commit", JOBS, expect_commit, commit),
)
