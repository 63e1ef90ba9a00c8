"""Import uploads in the database store (``LABAPP_FILE_STORE=database``, issue 34 §2).

An upload made through one application (host A, an instance folder of its own) is read by
the worker of another (host B) over the same PostgreSQL database, as no file of A's
instance folder reaches B; the content is streamed in and out with bounded memory, a
stream cut halfway leaves nothing, ``files gc`` keeps what a job names and the worker's
upkeep removes it with the job.
"""
from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator
from datetime import timedelta
from io import BytesIO
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import func, select, update

from labapp import blobs
from labapp.db import db, transaction
from labapp.imports import jobs, uploads
from labapp.model import Entity, FileContent, FileContentChunk, ImportJob, ImportPending
from labapp.model.types import utc_now
from tests.conftest import (
    ADMIN_PASSWORD,
    BACKEND,
    ApiClient,
    basic_header,
    build_app,
    dispose,
    login,
)
from tests.helpers.streams import Pieces
from tests.imports.uploading import GOOD_CSV, job_of, run_queued, upload, upload_files

pytestmark = pytest.mark.skipif(BACKEND != "postgresql",
                                reason="the database store is PostgreSQL's alone")
MIB = 1024 * 1024


def rows(app: Flask) -> tuple[int, int]:
    """How many contents and pieces the database store holds."""
    with app.app_context(), db.engine.connect() as connection:
        return (connection.scalar(select(func.count()).select_from(FileContent)) or 0,
                connection.scalar(select(func.count()).select_from(FileContentChunk)) or 0)


def admin_of(app: Flask) -> ApiClient:
    return ApiClient(app.test_client(), basic_header("admin", ADMIN_PASSWORD), "basic")


@pytest.fixture
def hosts(fresh_app: Callable[..., Flask], tmp_path: Path) -> Iterator[tuple[Flask, Flask]]:
    """Host A and host B keeping contents in one database; nothing of their instance
    folders shared."""
    first = fresh_app(initialised=True, FILE_STORE="database")
    other = tmp_path / "host-b"
    other.mkdir()
    second = build_app(other, first.config["LABAPP"]["DATABASE_URL"], FILE_STORE="database")
    try:
        yield first, second
    finally:
        dispose(second)


def test_an_upload_on_one_host_is_run_and_committed_by_another(
        hosts: tuple[Flask, Flask]) -> None:
    first, second = hosts
    on_a, on_b = admin_of(first), admin_of(second)
    dry = upload(on_a, GOOD_CSV)
    assert upload_files(first) == []  # the received file went; the content is in rows
    assert rows(first) == (1, 1)
    assert run_queued(second) == 1
    assert job_of(on_b, dry["id"])["status"] == "done"

    committing = on_a.post(f"/api/import/{dry['id']}/commit")
    assert committing.status_code == 202, committing.get_json()
    commit_id = committing.get_json()["id"]
    assert run_queued(second) == 1
    done = job_of(on_a, commit_id)
    assert done["status"] == "done" and done["counts"]["create"] == 3
    with second.app_context():
        names = set(db.session.scalars(select(Entity.name).where(Entity.eclass == "Sample")))
    assert {"S-1", "S-2", "S-3"} <= names
    assert rows(first) == (1, 1)  # the commit job names the same content
    for api in (on_a, on_b):
        annotated = api.get(f"/api/import/{dry['id']}/annotated", query_string={
            "format": "csv"})
        assert annotated.status_code == 200 and b"S-2" in annotated.data
        annotated.close()
    assert upload_files(first) == upload_files(second) == []  # the copies read went too


def test_files_gc_keeps_what_a_job_names_and_the_upkeep_removes_it_with_the_jobs(
        hosts: tuple[Flask, Flask]) -> None:
    first, second = hosts
    on_a = admin_of(first)
    dry = upload(on_a, GOOD_CSV)
    run_queued(second)
    commit_id = on_a.post(f"/api/import/{dry['id']}/commit").get_json()["id"]
    run_queued(second)
    with second.app_context():
        with transaction():
            db.session.execute(update(FileContent).values(
                stored_utc=utc_now() - timedelta(days=1)))
        assert blobs.collect_garbage(blobs.stored_digests(), 0, dry_run=False) == []
        assert rows(first) == (1, 1)

        old = utc_now() - jobs.KEEP_FINISHED - timedelta(hours=1)
        with transaction():  # the dry run expires first: the commit still names the content
            db.session.execute(update(ImportJob).where(ImportJob.id == dry["id"]).values(
                finished_utc=old))
        assert jobs.purge_finished() is True
        assert rows(first) == (1, 1)
        with transaction():
            db.session.execute(update(ImportJob).where(ImportJob.id == commit_id).values(
                finished_utc=old))
        assert jobs.purge_finished() is True
    assert rows(first) == (0, 0)
    job_of(on_a, commit_id, status=404)


def test_a_job_whose_content_is_gone_fails_and_its_commit_is_refused(
        hosts: tuple[Flask, Flask]) -> None:
    first, second = hosts
    on_a = admin_of(first)
    dry = upload(on_a, GOOD_CSV)
    run_queued(second)
    lost = upload(on_a, GOOD_CSV.replace("S-3", "S-4"))
    with first.app_context(), transaction():
        db.session.execute(FileContentChunk.__table__.delete())
        db.session.execute(FileContent.__table__.delete())
    run_queued(second)
    failed = job_of(on_a, lost["id"])
    assert failed["status"] == "failed" and "no longer stored" in failed["error"]
    refused = on_a.post(f"/api/import/{dry['id']}/commit")
    assert refused.status_code == 409 and "upload it again" in refused.get_json()["detail"]
    assert admin_of(second).get(f"/api/import/{dry['id']}/annotated").status_code == 404


def test_a_large_upload_goes_in_and_out_with_bounded_memory(
        fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app(initialised=True, FILE_STORE="database")
    size = 40 * MIB + 7
    stream = Pieces(size)
    with app.app_context():
        received = uploads.receive(stream)
        tracemalloc.start()
        try:
            with transaction():
                name = uploads.keep(received, "a" * 32)
            stored_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
            with uploads.opened(name, received.sha256) as path:
                copied = path.stat().st_size
            read_peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        uploads.discard(received.path)
    assert received.sha256 == stream.digest.hexdigest() and copied == size
    assert rows(app) == (1, 41)
    assert stored_peak < 8 * MIB and read_peak < 4 * MIB, (stored_peak, read_peak)
    assert upload_files(app) == []


def test_a_stream_cut_halfway_leaves_nothing(fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app(initialised=True, FILE_STORE="database")
    with app.app_context():
        with pytest.raises(OSError, match="went away"):
            uploads.receive(Pieces(5 * MIB, fail_after=2 * MIB))
        received = uploads.receive(Pieces(3 * MIB))
        with pytest.raises(OSError, match="went away"), transaction():
            uploads.keep(received, "b" * 32)
            raise OSError("the client went away")  # the job's unit fails after the write
        uploads.discard(received.path)
    assert rows(app) == (0, 0) and upload_files(app) == []


def browser_of(app: Flask) -> ApiClient:
    """Admin signed in with a session cookie, as the wizard's pages want."""
    client = app.test_client()
    login(client, "admin", ADMIN_PASSWORD)
    return ApiClient(client, {}, "cookie")


def wizard_upload(browser: ApiClient, content: str) -> str:
    """Step 1 of the wizard: the URL of the mapping step."""
    part = (BytesIO(content.encode()), "plates.csv")
    uploaded = browser.post("/import", data={"eClass": "Sample", "file": part},
                            content_type="multipart/form-data")
    assert uploaded.status_code == 303, uploaded.data
    return str(uploaded.headers["Location"])


def test_the_wizard_uploads_on_one_host_and_maps_on_another(
        hosts: tuple[Flask, Flask]) -> None:
    first, second = hosts
    mapping_url = wizard_upload(browser_of(first), GOOD_CSV)
    assert upload_files(first) == [] and rows(first) == (1, 1)
    on_b = browser_of(second)
    page = on_b.get(mapping_url)
    assert page.status_code == 200 and b"Volume (mL)" in page.data
    started = on_b.post(mapping_url, data={"column-0": "name", "column-1": "amount",
                                           "column-2": ""})
    assert started.status_code == 303, started.data
    assert run_queued(first) == 1
    with first.app_context():
        job = db.session.scalars(select(ImportJob)).one()
        assert job.status == "done" and job.counts["create"] == 3
        assert db.session.scalar(select(func.count()).select_from(ImportPending)) == 0
    assert rows(first) == (1, 1)  # the pending upload's content is the job's
    assert upload_files(first) == upload_files(second) == []
    assert on_b.get(mapping_url).status_code == 404


def test_a_pending_upload_is_kept_from_files_gc_and_goes_after_a_day(
        hosts: tuple[Flask, Flask]) -> None:
    first, second = hosts
    mapping_url = wizard_upload(browser_of(first), GOOD_CSV)
    with second.app_context():
        with transaction():
            db.session.execute(update(FileContent).values(
                stored_utc=utc_now() - timedelta(days=2)))
        assert blobs.collect_garbage(blobs.stored_digests(), 0, dry_run=False) == []
        assert rows(first) == (1, 1)
        with transaction():
            db.session.execute(update(ImportPending).values(
                created_utc=utc_now() - timedelta(seconds=uploads.KEEP_PENDING_SECONDS + 60)))
        assert uploads.purge_stale() == 1
    assert rows(first) == (0, 0)
    assert browser_of(second).get(mapping_url).status_code == 404
