"""Issue 32 §4: a worker killed with SIGKILL in the middle of an import's commit. Two real
worker processes run on one machine; the one that took the job is killed while its commit's
transaction writes; the other fails the job within the deadline, saying why, and no entity
of the import exists. The survivor's own job is never failed."""
from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import Callable
from contextlib import ExitStack

import psycopg
from flask import Flask
from sqlalchemy import func, select
from sqlalchemy.engine import make_url

from labapp import liveness
from labapp.db import db
from labapp.imports import workers
from labapp.model import ImportJob, ImportRow, Sample
from tests.conftest import BACKEND, run_init
from tests.helpers.processes import wait_for, worker_process
from tests.imports.uploading import GOOD_CSV, queue_job

ROWS = 10_000  # a commit of this many rows writes for seconds on either database
FAILED_WITHIN = 60.0  # seconds: the deadline
STEADY_PROBES = 10  # a commit, not a short write, holds the lock this many probes in a row


def _worker_pids(app: Flask) -> set[int]:
    with app.app_context():
        return {worker.pid for worker in liveness.alive()}


def holds_its_lock(app: Flask, pid: int) -> bool:
    """Whether the worker ``pid`` holds its lock file (what it takes before any job)."""
    return pid in _worker_pids(app)


def _job(app: Flask, job_id: str) -> ImportJob:
    with app.app_context():
        try:
            job = db.session.get(ImportJob, job_id)
            assert job is not None
            db.session.expunge(job)
            return job
        finally:
            db.session.remove()


def _commit_writing(app: Flask) -> Callable[[], bool]:
    """A probe: whether another connection's transaction is writing entities now."""
    url = make_url(app.config["LABAPP"]["DATABASE_URL"])
    if BACKEND == "sqlite":
        def sqlite_writing() -> bool:
            probe = sqlite3.connect(str(url.database), timeout=0, isolation_level=None)
            try:
                probe.execute("BEGIN IMMEDIATE")  # refused at once while a writer holds it
                probe.execute("ROLLBACK")
                return False
            except sqlite3.OperationalError as error:
                assert "locked" in str(error) or "busy" in str(error), error
                return True
            finally:
                probe.close()
        return sqlite_writing
    dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)

    def postgresql_writing() -> bool:
        with psycopg.connect(dsn, autocommit=True) as probe:
            return bool(probe.execute(
                "SELECT count(*) FROM pg_locks WHERE relation = 'entity'::regclass "
                "AND mode = 'RowExclusiveLock' AND pid <> pg_backend_pid()").fetchone()[0])
    return postgresql_writing


def _steadily(probe: Callable[[], bool]) -> Callable[[], bool]:
    """``probe`` true :data:`STEADY_PROBES` times in a row (a worker's short write — a
    plan's progress, statistics — holds SQLite's lock for milliseconds)."""
    run = [0]

    def steady() -> bool:
        run[0] = run[0] + 1 if probe() else 0
        return run[0] >= STEADY_PROBES
    return steady


def _imported(app: Flask, job_id: str) -> dict[str, int]:
    """What the import wrote: its samples (named ``K-…``) and its rows' outcomes."""
    with app.app_context():
        try:
            return {"samples": db.session.scalar(select(func.count()).select_from(Sample)
                                                 .where(Sample.name.like("K-%"))) or 0,
                    "rows": db.session.scalar(select(func.count()).select_from(ImportRow)
                                              .where(ImportRow.job_id == job_id)) or 0}
        finally:
            db.session.remove()


def test_a_worker_killed_mid_commit_fails_its_job_and_writes_nothing(
        fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app()
    run_init(app)
    rows = "Name\n" + "".join(f"K-{number}\n" for number in range(1, ROWS + 1))
    with ExitStack() as running:
        started = [running.enter_context(worker_process(
            app, ready=holds_its_lock, what="the worker's lock")) for _ in range(2)]
        job_id = queue_job(app, rows, dry_run=False)
        # Whichever worker took the job: its process id is in the job's worker id.
        claimed = wait_for(lambda: _job(app, job_id).worker, "a worker to claim the job")
        parsed = liveness.ProcessId.parse(claimed)
        assert parsed is not None and parsed.role == "worker"
        victim = next(process for process in started if process.pid == parsed.pid)
        survivor = next(process for process in started if process is not victim)
        wait_for(lambda: _job(app, job_id).progress_done == ROWS, "the plan", timeout=120)
        wait_for(_steadily(_commit_writing(app)), "the commit's transaction to write",
                 timeout=120)
        assert _job(app, job_id).status == "running", "the survivor failed a live job"

        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)

        ended = wait_for(lambda: (job := _job(app, job_id)).status != "running" and job,
                         "the job to be failed", timeout=FAILED_WITHIN)
        assert ended.status == "failed", "the commit ended before the kill: raise ROWS"
        assert ended.error == workers.STOPPED and ended.finished_utc is not None
        assert _imported(app, job_id) == {"samples": 0, "rows": 0}

        # The survivor lives on and runs the next job to its end.
        assert survivor.poll() is None and _worker_pids(app) == {survivor.pid}
        following = queue_job(app, GOOD_CSV, dry_run=False)
        done = wait_for(lambda: (job := _job(app, following)).status != "queued"
                        and job.status != "running" and job, "the survivor's job")
        assert done.status == "done", done.error
        assert liveness.ProcessId.parse(done.worker or "").pid == survivor.pid
