"""Probes of a running import for tests with real worker processes: which worker holds its
lock, a job as the database holds it now, whether an import's commit is writing, and (on
PostgreSQL) a hold on every import's commit once its entities are written."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from flask import Flask
from sqlalchemy.engine import make_url

from labapp import liveness
from labapp.db import db
from labapp.model import ImportJob
from tests.conftest import BACKEND

STEADY_PROBES = 10  # a commit, not a short write, holds the lock this many probes in a row


def worker_pids(app: Flask) -> set[int]:
    """The process ids of the workers that hold their lock files on ``app``'s instance."""
    with app.app_context():
        return {worker.pid for worker in liveness.alive()}


def holds_its_lock(app: Flask, pid: int) -> bool:
    """Whether the worker ``pid`` holds its lock file (what it takes before any job)."""
    return pid in worker_pids(app)


def job_now(app: Flask, job_id: str) -> ImportJob:
    """The import job ``job_id`` as the database holds it now, detached."""
    with app.app_context():
        try:
            job = db.session.get(ImportJob, job_id)
            assert job is not None
            db.session.expunge(job)
            return job
        finally:
            db.session.remove()


def postgresql_dsn(app: Flask) -> str:
    """The psycopg connection string of ``app``'s PostgreSQL database."""
    url = make_url(app.config["LABAPP"]["DATABASE_URL"])
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@dataclass
class CommitHold:
    """A lock the test holds on the table of row outcomes, which an import's commit writes
    after its entities, within its one transaction."""

    holder: psycopg.Connection
    probe: psycopg.Connection

    def waiting(self) -> bool:
        """Whether a commit waits for the hold (its entities written, its transaction open)."""
        row = self.probe.execute("SELECT count(*) FROM pg_locks WHERE relation = "
                                 "'import_row'::regclass AND NOT granted").fetchone()
        return bool(row and row[0])

    def release(self) -> None:
        """Let the commit go on to its end."""
        self.holder.rollback()


@contextmanager
def commits_held(app: Flask) -> Iterator[CommitHold]:
    """On PostgreSQL, hold every import's commit of ``app`` in the middle of its transaction
    until :meth:`CommitHold.release` or the end of the block."""
    dsn = postgresql_dsn(app)
    with psycopg.connect(dsn) as holder, psycopg.connect(dsn, autocommit=True) as probe:
        holder.execute("LOCK TABLE import_row IN SHARE MODE")
        yield CommitHold(holder, probe)


def commit_writing(app: Flask) -> Callable[[], bool]:
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
    dsn = postgresql_dsn(app)

    def postgresql_writing() -> bool:
        with psycopg.connect(dsn, autocommit=True) as probe:
            return bool(probe.execute(
                "SELECT count(*) FROM pg_locks WHERE relation = 'entity'::regclass "
                "AND mode = 'RowExclusiveLock' AND pid <> pg_backend_pid()").fetchone()[0])
    return postgresql_writing


def steadily(probe: Callable[[], bool]) -> Callable[[], bool]:
    """``probe`` true :data:`STEADY_PROBES` times in a row (a worker's short write — a
    plan's progress, statistics — holds SQLite's lock for milliseconds)."""
    run = [0]

    def steady() -> bool:
        run[0] = run[0] + 1 if probe() else 0
        return run[0] >= STEADY_PROBES
    return steady
