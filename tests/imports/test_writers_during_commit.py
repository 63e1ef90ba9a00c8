"""Writers while an import's commit holds SQLite's write lock (issue 33 §3): the commit is one
transaction (all or nothing), so a writer waits up to the busy timeout, then gets a 503 with
``Retry-After`` whose message names the import, never a bare "database is locked"; once
the commit ends, writes succeed again. A real worker process runs the import."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask

from tests.conftest import BACKEND, run_init
from tests.helpers.importing import commit_writing, holds_its_lock, job_now, steadily
from tests.helpers.processes import ADMIN, wait_for, worker_process
from tests.imports.uploading import queue_job

pytestmark = pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's one write lock")

ROWS = 10_000  # a commit of this many rows writes for seconds


def _create(app: Flask, name: str) -> tuple[int, dict[str, str], dict[str, object]]:
    response = app.test_client().post("/api/entity", headers=ADMIN, json={
        "entities": [{"eClass": "Experiment", "name": name}]})
    return response.status_code, dict(response.headers), response.get_json()


def test_a_writer_during_an_import_commit_is_told_which_import_holds_the_database(
        fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app(SQLITE_BUSY_TIMEOUT_MS=200)  # the writer gives up long before the commit
    run_init(app)
    rows = "Name\n" + "".join(f"W-{number}\n" for number in range(1, ROWS + 1))
    with worker_process(app, ready=holds_its_lock, what="the worker's lock"):
        job_id = queue_job(app, rows, dry_run=False)
        wait_for(lambda: job_now(app, job_id).progress_done == ROWS, "the plan", timeout=120)
        wait_for(steadily(commit_writing(app)), "the commit's transaction to write",
                 timeout=120)
        status, headers, body = _create(app, "during the commit")
        assert job_now(app, job_id).status == "running", "the commit ended first: raise ROWS"
        assert status == 503, body
        assert body["code"] == "database_busy" and headers["Retry-After"] == "5"
        assert f"import {job_id}" in body["detail"] and "samples.csv" in body["detail"]
        assert f"{ROWS:,} rows" in body["detail"]
        assert "locked" not in body["detail"]

        wait_for(lambda: job_now(app, job_id).status == "done", "the import to end", timeout=180)
        status, _headers, body = _create(app, "after the commit")
        assert status == 201, body
