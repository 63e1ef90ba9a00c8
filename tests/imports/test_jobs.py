"""Import jobs as the worker runs them: claimed once, progress recorded, failures explained,
old jobs removed with their files."""
from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from flask import Flask
from sqlalchemy import select, update

from labapp import blobs, liveness
from labapp.db import db, transaction
from labapp.imports import jobs, uploads, workers
from labapp.model import ImportJob, ImportRow
from labapp.model.types import utc_now
from tests.conftest import ADMIN_PASSWORD, BACKEND, ApiClient, basic_header
from tests.helpers.processes import held_lock, killed, recorded_locks
from tests.imports.uploading import GOOD_CSV, job_of, queue_job, run_queued, upload

WORKERS = 4


def test_two_workers_racing_for_a_job_take_it_once(fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app(initialised=True)
    job_id = queue_job(app)
    start = threading.Barrier(WORKERS)
    taken: list[str | None] = []

    def worker() -> None:
        with app.app_context():
            start.wait(timeout=30)
            try:
                taken.append(jobs.claim())
            finally:
                db.session.remove()

    threads = [threading.Thread(target=worker, name=f"claimer-{n}") for n in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(taken) == WORKERS and [claimed for claimed in taken if claimed] == [job_id]
    with app.app_context():
        job = db.session.get(ImportJob, job_id)
        assert job is not None and job.status == "running" and job.started_utc is not None
        assert jobs.claim() is None
        ended = jobs.run(job_id)
        assert ended.status == "done" and ended.counts["create"] == 3
        db.session.remove()


def test_the_worker_runs_a_queued_commit_and_records_progress(
        fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app(initialised=True)
    rows = "Name\n" + "".join(f"S-{number}\n" for number in range(1, 1201))
    job_id = queue_job(app, rows, dry_run=False)
    with app.app_context():
        seen: list[tuple[str, int, int | None]] = []
        assert jobs.claim() == job_id
        ended = jobs.run(job_id, lambda phase, done, total: seen.append((phase, done, total)))
        assert ended.status == "done" and ended.counts["create"] == 1200
        assert ended.progress_done == ended.progress_total == 1200
        assert ("reading", 1200, 1200) in seen and seen[-1][0] == "writing"
        ids = set(db.session.scalars(select(ImportRow.entity_id).where(
            ImportRow.job_id == job_id)))
        assert len(ids) == 1200 and None not in ids
        db.session.remove()


def test_a_job_whose_file_is_gone_fails_with_the_reason(app: Flask, admin: ApiClient) -> None:
    started = upload(admin, GOOD_CSV)
    with app.app_context():
        job = db.session.get(ImportJob, started["id"])
        assert job is not None
        uploads.discard(job.upload)
    run_queued(app)
    failed = job_of(admin, started["id"])
    assert failed["status"] == "failed"
    assert "no longer stored" in failed["error"] and failed["finishedUtc"]
    assert failed["rows"]["data"] == []
    annotated = admin.get(f"/api/import/{started['id']}/annotated")
    assert annotated.status_code == 409 and "failed before" in annotated.get_json()["detail"]


def test_a_job_of_a_class_the_model_lost_fails_with_the_reason(
        app: Flask, admin: ApiClient) -> None:
    started = upload(admin, GOOD_CSV)
    with app.app_context(), transaction():
        db.session.execute(update(ImportJob).where(ImportJob.id == started["id"])
                           .values(eclass="Vanished"))
    run_queued(app)
    failed = job_of(admin, started["id"])
    assert failed["status"] == "failed" and "Vanished" in failed["error"]


def test_finished_jobs_go_with_their_files_after_a_while(app: Flask, admin: ApiClient) -> None:
    old, recent = upload(admin, GOOD_CSV), upload(admin, GOOD_CSV)
    run_queued(app)
    with app.app_context():
        with transaction():
            db.session.execute(update(ImportJob).where(ImportJob.id == old["id"]).values(
                finished_utc=utc_now() - jobs.KEEP_FINISHED - timedelta(hours=1)))
        stored_file = uploads.path_of(db.session.get(ImportJob, old["id"]).upload)
        assert stored_file.exists()
        assert jobs.purge_finished() is True
        assert jobs.purge_finished() is False
        assert not Path(stored_file).exists()
    job_of(admin, old["id"], status=404)
    assert job_of(admin, recent["id"])["status"] == "done"


def _claimed_by(app: Flask, job_id: str, worker: str | None, *,
                started_ago: timedelta = timedelta(0)) -> None:
    """Record ``worker`` as the process running the job, started ``started_ago``."""
    with app.app_context(), transaction():
        db.session.execute(update(ImportJob).where(ImportJob.id == job_id).values(
            worker=worker, started_utc=utc_now() - started_ago))


def test_a_job_whose_worker_is_gone_fails_at_the_next_look(app: Flask,
                                                           admin: ApiClient) -> None:
    killed_job, live, elsewhere, old_elsewhere, unnamed = (
        upload(admin, GOOD_CSV) for _ in range(5))
    with app.app_context():
        for job in (killed_job, live, elsewhere, old_elsewhere, unnamed):
            assert jobs.claim(job["id"]) == job["id"]
        own = db.session.get(ImportJob, live["id"]).worker
        assert liveness.state(own) == liveness.ALIVE, "a claim records this process"
    long_ago = jobs.ABANDONED + timedelta(minutes=1)
    with held_lock(app) as (dead, process):
        _claimed_by(app, killed_job["id"], dead)
        with app.app_context():
            assert jobs.fail_stopped() is False, "its worker still runs"
        killed(process)
    _claimed_by(app, elsewhere["id"], "worker_other-host.example_7_0123456789ab")
    _claimed_by(app, old_elsewhere["id"], "worker_other-host.example_7_0123456789ab",
                started_ago=long_ago)
    _claimed_by(app, unnamed["id"], None, started_ago=long_ago)
    with app.app_context():
        assert jobs.upkeep() is True, "failing a job is work"
        assert jobs.upkeep() is False
    failed = job_of(admin, killed_job["id"])
    assert failed["status"] == "failed" and failed["error"] == workers.STOPPED
    assert failed["finishedUtc"] and failed["worker"] is None
    assert failed["rows"]["total"] == 0
    assert job_of(admin, live["id"])["status"] == "running"
    if BACKEND == "postgresql":  # every host's locks are the database's: gone is told
        assert job_of(admin, elsewhere["id"])["error"] == workers.STOPPED
    else:
        assert job_of(admin, elsewhere["id"])["status"] == "running", "cannot be told: waits"
        assert job_of(admin, elsewhere["id"])["worker"] == {"alive": None, "message": None}
    for abandoned in (old_elsewhere, unnamed):
        assert job_of(admin, abandoned["id"])["error"] == workers.STOPPED


def test_the_hourly_upkeep_sweeps_the_files_of_gone_workers(app: Flask,
                                                            admin: ApiClient) -> None:
    running = upload(admin, GOOD_CSV)
    with app.app_context():
        assert jobs.claim(running["id"]) == running["id"]
    with held_lock(app) as (named, first), held_lock(app) as (unnamed, second):
        # A job of a worker whose file another host may still have to ask keeps the file.
        _claimed_by(app, running["id"], named)
        killed(first)
        killed(second)
        with app.app_context():
            assert jobs.purge_finished() is True
            assert jobs.purge_finished() is False
    traces = recorded_locks(app)
    assert named in traces and unnamed not in traces


def test_uploads_live_in_the_shared_file_store_folder_when_it_is_set(
        fresh_app: Callable[..., Flask], tmp_path: Path) -> None:
    shared = tmp_path / "shared-store"
    app = fresh_app(initialised=True, FILE_STORE_PATH=str(shared))
    admin = ApiClient(app.test_client(), basic_header("admin", ADMIN_PASSWORD), "basic")
    job = upload(admin, GOOD_CSV)
    assert sorted(path.name for path in (shared / ".imports").iterdir()) == [f"{job['id']}.csv"]
    with app.app_context():  # the content store's collector never sees them
        assert blobs.stored_digests() == []
    assert run_queued(app) == 1
    assert job_of(admin, job["id"])["status"] == "done"
    assert (shared / ".imports" / f"{job['id']}.csv").is_file()
