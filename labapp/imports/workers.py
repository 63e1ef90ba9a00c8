"""Who runs the import jobs, as a job's page, ``GET /api/import/{id}`` and ``/healthz`` tell it.

A job waits for a worker (``flask --app labapp worker``); a WSGI server alone never runs
one. A running job names the process that claimed it; whether that process is alive is
asked of its lock file (:mod:`labapp.liveness`), which takes no database lock and is right
at once. The worker's upkeep then fails the job of a process that is gone
(:func:`labapp.imports.jobs.fail_stopped`); until a worker does, the job's page says what
happened.
"""
from __future__ import annotations

from dataclasses import dataclass

from flask import Flask
from sqlalchemy import func, select

from labapp import liveness
from labapp.db import db
from labapp.errors import BUSY_HOLDERS, BusyHolder
from labapp.model import ImportJob

START = "flask --app labapp worker"
NO_WORKER = ("No worker is running, so this import waits. The worker runs beside the web "
             f"server; an administrator starts it with `{START}`.")
STOPPED = ("The worker stopped while it ran this import; nothing was written. Start the "
           "import again.")
_STOPPED_NONE_LEFT = (" No worker is running to record it: an administrator starts one with "
                      f"`{START}`.")


@dataclass(frozen=True)
class WorkerState:
    """Whether a worker runs an unfinished job: ``alive`` is None when it cannot be told
    (a worker of another host); ``message`` says what the user should know, or None."""

    alive: bool | None
    message: str | None


def state_of(job: ImportJob) -> WorkerState | None:
    """The worker state of ``job``; None once it is done or failed."""
    if job.status == "queued":
        return WorkerState(True, None) if liveness.alive() else WorkerState(False, NO_WORKER)
    if job.status != "running":
        return None
    state = liveness.state(job.worker)
    if state == liveness.ALIVE:
        return WorkerState(True, None)
    if state == liveness.UNKNOWN:
        return WorkerState(None, None)
    return WorkerState(False, STOPPED + ("" if liveness.alive() else _STOPPED_NONE_LEFT))


def waiting_problem() -> str | None:
    """For ``/healthz``: None when a worker runs or no import waits for one, else why the
    site is degraded and how to start a worker."""
    if liveness.alive():
        return None
    queued = db.session.scalar(select(func.count()).select_from(ImportJob)
                               .where(ImportJob.status == "queued")) or 0
    stranded = sum(liveness.state(worker) == liveness.GONE for worker in db.session.scalars(
        select(ImportJob.worker).where(ImportJob.status == "running")))
    waiting = queued + stranded
    if not waiting:
        return None
    imports = "1 import waits" if waiting == 1 else f"{waiting} imports wait"
    return f"{imports} and no worker is running; start one with `{START}`."


RETRY_WHILE_WRITTEN = 5  # seconds a writer refused during an import's commit is told to wait


def import_being_written() -> BusyHolder | None:
    """For a write SQLite refused after its busy timeout: the import whose commit is being
    written (it holds the write lock for its whole transaction, minutes for the largest
    files), named so the writer knows why and how long; None when no commit runs. Read in
    a session of its own: the refused request's has failed."""
    session = db.session.session_factory()
    try:
        job = session.scalars(select(ImportJob).where(
            ImportJob.status == "running", ImportJob.dry_run.is_(False))
            .order_by(ImportJob.started_utc).limit(1)).first()
    finally:
        session.close()
    if job is None:
        return None
    rows = "" if job.progress_total is None else f" of {job.progress_total:,} rows"
    return BusyHolder(
        f"An import{rows} ({job.filename}, import {job.id}) is being written and holds the "
        "database until it ends; nothing was saved. Send the request again in a moment.",
        RETRY_WHILE_WRITTEN)


def init_app(app: Flask) -> None:
    """Report imports waiting without a worker in ``/healthz`` (as ``worker``: degraded), and
    name an import being written to the writers SQLite refused meanwhile."""
    app.extensions.setdefault("labapp.health.degraded", {})["worker"] = waiting_problem
    app.extensions.setdefault(BUSY_HOLDERS, []).append(import_being_written)
