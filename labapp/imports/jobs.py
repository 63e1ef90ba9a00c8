"""Processing import jobs: claimed by the worker's upkeep (or run at once by the CLI).

Claiming
    A queued job is taken by one ``UPDATE … SET status = 'running' WHERE id = :id AND status =
    'queued'``: of two workers racing for it, the second matches no row (PostgreSQL re-checks
    the condition after the first commits; SQLite's write lock makes them queue) and looks
    for another job.

Running
    The rows are planned first (read only), the progress written after each chunk of rows
    the plan reads, in a short transaction of a session of its own, so a page polling the
    job sees it move (a commit's progress is not written: on SQLite its transaction holds
    the write lock; the page says the rows are being written). A dry run then stores each
    row's outcome and the counts.
    A commit writes the entities, the outcomes and the counts in ONE transaction: all or
    nothing; any row error (found by the plan or by the write) fails the job and writes no
    entity. A failed job keeps the reason in ``error`` and, when the plan was made, the
    outcome of every row. The ids of the rows it creates are drawn just before, in a short
    transaction of their own (:func:`labapp.imports.engine.draw_ids`): the class's sequence
    is not held for the length of the commit, and a commit that fails leaves a gap in it.

A worker that stops while it runs a job
    ``claim`` records the id of the claiming process (:func:`labapp.liveness.own_id`); that
    process holds the lock file of its id as long as it lives, and the kernel drops the lock
    when it dies, even by ``kill -9`` in the middle of a commit's transaction (which the
    database then rolls back: nothing is written). At every look, each worker's upkeep asks
    the lock of every running job's process without waiting (:func:`fail_stopped`) and fails
    the jobs of the processes that are gone, saying so; no lease row is renewed, so a long
    commit holding SQLite's write lock cannot make its own worker look dead, and two workers
    on one machine never fail each other's jobs. A failed job is not queued again: a file
    that killed its worker (memory) would kill the next one too, and the user decides.
    A job whose process cannot be asked (on SQLite a worker of another host not sharing the
    instance folder; on PostgreSQL every host's process can be asked, its lock being the
    database's; or a job claimed before jobs named their process) is failed
    :data:`ABANDONED` after it started, as before.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import delete, insert, select, update

from labapp import blobs, liveness
from labapp.access.actor import Actor
from labapp.access.grant_sets import actor_for
from labapp.db import db, end_read, own_read, rows_matched, side_unit, transaction
from labapp.errors import AppError
from labapp.imports import service, uploads, workers
from labapp.imports.engine import ImportPlan, RowOutcome, commit_import, draw_ids, plan_import
from labapp.model import ImportJob, ImportRow, User
from labapp.model.registry import existing_class
from labapp.model.types import utc_now

INSERT_CHUNK = 1000  # row outcomes per INSERT
KEEP_FINISHED = timedelta(days=30)  # a finished job and its file are kept this long
# A job whose process cannot be asked (see the module docstring) still running this long
# after it started was left by a worker that stopped (the largest file takes minutes).
ABANDONED = timedelta(hours=2)

logger = logging.getLogger(__name__)
# report(phase, done, total): phase "reading" (the plan) or "writing" (the commit).
Report = Callable[[str, int, int | None], None]


def claim(job_id: str | None = None) -> str | None:
    """Take the oldest queued job (or job ``job_id``) for this process, recording the
    process's id: the job's id, or None when there is none or another process took it
    first."""
    with transaction():
        candidate = job_id or db.session.scalars(
            select(ImportJob.id).where(ImportJob.status == "queued")
            .order_by(ImportJob.created_utc, ImportJob.id).limit(1)).first()
        if candidate is None:
            return None
        taken = rows_matched(update(ImportJob).where(
            ImportJob.id == candidate, ImportJob.status == "queued")
            .values(status="running", started_utc=utc_now(), worker=liveness.own_id()))
    return candidate if taken else None


def _queued() -> bool:
    """Whether a job waits (a read, so an idle worker takes no write lock)."""
    with own_read() as session:
        return session.scalar(
            select(ImportJob.id).where(ImportJob.status == "queued").limit(1)) is not None


def upkeep() -> bool:
    """The worker's upkeep: fail the jobs of processes that are gone
    (:func:`fail_stopped`), then run one queued job; whether there was any of that work."""
    failed = fail_stopped()
    job_id = claim() if _queued() else None
    if job_id is None:
        return failed
    run(job_id)
    return True


def _write_progress(job_id: str, done: int) -> None:
    """Record the rows planned so far in a unit beside the main session's (which is reading
    the plan and must not end its transaction)."""
    with side_unit() as session:
        session.execute(update(ImportJob).where(ImportJob.id == job_id)
                        .values(progress_done=done))


def _owner(job: ImportJob) -> Actor:
    user = db.session.get(User, job.owner_id)
    if user is None or not user.is_active:
        raise AppError("The owner of this import is no longer an active user.")
    return actor_for(user, method=None, on_premises=current_app.config["LABAPP"]["ON_PREMISES"])


def run(job_id: str, report: Report | None = None) -> ImportJob:
    """Run a claimed job to its end (see the module docstring); ``report(done, total)`` is
    told the progress as well. Returns the job as it ended."""
    job = db.session.get(ImportJob, job_id, populate_existing=True)
    if job is None or job.status != "running":
        raise LookupError(f"import {job_id} is not claimed")
    total = job.progress_total
    plan: ImportPlan | None = None
    try:
        actor = _owner(job)
        spec = existing_class(job.eclass)
        with service.job_table(job) as table:
            total = table.row_count if table.row_count is not None else total

            def progress(done: int) -> None:
                if report is not None:
                    report("reading", done, total)
                _write_progress(job_id, done)

            plan = plan_import(actor, spec, table, dict(job.mapping), match=job.match,
                               progress=progress)
            _finish(job_id, actor, plan, job.dry_run, report)  # a commit reads the rows again
    except Exception as error:  # recorded on the job: the owner sees why it failed
        end_read()
        if not isinstance(error, AppError | LookupError):
            logger.exception("import %s failed", job_id)
        _fail(job_id, plan, _reason(error))
    return _reloaded(job_id)


def _reason(error: Exception) -> str:
    if isinstance(error, AppError):
        return error.detail
    if isinstance(error, LookupError):
        return str(error).strip("'\"")
    return f"The import stopped on an unexpected error ({type(error).__name__}); the " \
           "worker's log has the details."


def _finish(job_id: str, actor: Actor, plan: ImportPlan, dry_run: bool,
            report: Report | None) -> None:
    """Store the plan's outcome, and when the job commits and no row failed, the entities
    (their ids drawn before the commit's unit opens: see the module docstring)."""
    counts = {outcome: int(plan.counts.get(outcome, 0))
              for outcome in ("create", "update", "unchanged", "error")}
    done = sum(counts.values())
    ids = draw_ids(plan) if not dry_run and plan.ok else None
    with transaction():
        if not dry_run and counts["error"]:
            _store_rows(job_id, plan.outcomes)
            _set(job_id, status="failed", counts=counts, progress_done=done,
                 progress_total=done, error=(
                     "1 row has an error: nothing was imported. Correct it and import the "
                     "file again." if counts["error"] == 1 else
                     f"{counts['error']} rows have errors: nothing was imported. Correct "
                     "them and import the file again."))
            return
        if not dry_run:
            writing = counts["create"] + counts["update"]
            commit_import(actor, plan, ids=ids, progress=None if report is None else (
                lambda done: report("writing", min(done, writing), writing)))
        _store_rows(job_id, plan.outcomes)
        _set(job_id, status="done", counts=counts, progress_done=done, progress_total=done)


def _store_rows(job_id: str, outcomes: Sequence[RowOutcome], *, written: bool = True) -> None:
    """Store each row's outcome (a commit has set the id of each entity it wrote; when it
    was rolled back, ``written`` is False and the ids of the entities it created go)."""
    db.session.execute(delete(ImportRow).where(ImportRow.job_id == job_id))
    chunk: list[dict[str, Any]] = []
    for outcome in outcomes:
        chunk.append({"job_id": job_id, "row": outcome.row, "outcome": outcome.outcome,
                      "entity_id": outcome.entity_id
                      if written or outcome.outcome != "create" else None,
                      "errors": [{"column": error.column, "message": error.message}
                                 for error in outcome.errors]})
        if len(chunk) >= INSERT_CHUNK:
            db.session.execute(insert(ImportRow), chunk)
            chunk = []
    if chunk:
        db.session.execute(insert(ImportRow), chunk)


def _set(job_id: str, **values: Any) -> None:
    db.session.execute(update(ImportJob).where(ImportJob.id == job_id)
                       .values(finished_utc=utc_now(), **values))


def _fail(job_id: str, plan: ImportPlan | None, reason: str) -> None:
    """Record that the job failed (with its rows' outcomes when the plan was made)."""
    with transaction():
        values: dict[str, Any] = {"status": "failed", "error": reason}
        if plan is not None:
            _store_rows(job_id, plan.outcomes, written=False)
            values["counts"] = {outcome: int(plan.counts.get(outcome, 0))
                                for outcome in ("create", "update", "unchanged", "error")}
        _set(job_id, **values)


def _reloaded(job_id: str) -> ImportJob:
    job = db.session.get(ImportJob, job_id, populate_existing=True)
    assert job is not None
    return job


def _stopped(worker: str | None, started: datetime | None, cutoff: datetime) -> bool:
    state = liveness.state(worker)
    if state == liveness.UNKNOWN:
        return started is None or started < cutoff
    return state == liveness.GONE


def fail_stopped() -> bool:
    """Fail the running jobs whose process is gone, and those whose process cannot be asked
    running for more than :data:`ABANDONED` (see the module docstring); as a commit writes
    all or nothing, nothing of theirs was written. Whether there were any."""
    with own_read() as session:
        running = session.execute(select(
            ImportJob.id, ImportJob.worker, ImportJob.started_utc).where(
            ImportJob.status == "running")).all()
    cutoff = utc_now() - ABANDONED
    stopped = [(job_id, worker) for job_id, worker, started in running
               if _stopped(worker, started, cutoff)]
    if not stopped:
        return False
    failed = 0
    with transaction():
        for job_id, worker in stopped:
            # Still running and still that process's: a job that ended meanwhile stays so.
            failed += rows_matched(update(ImportJob).where(
                ImportJob.id == job_id, ImportJob.status == "running",
                ImportJob.worker == worker if worker else ImportJob.worker.is_(None))
                .values(status="failed", finished_utc=utc_now(), error=workers.STOPPED))
    for job_id, worker in stopped:
        logger.warning("import %s failed: its worker %s stopped", job_id, worker)
    return failed > 0


def purge_finished() -> bool:
    """The worker's hourly upkeep: remove the jobs finished more than
    :data:`KEEP_FINISHED` ago with their rows and files, the uploads the wizard never mapped
    (:func:`labapp.imports.uploads.purge_stale`) and the lock files of processes that are
    gone (but those running jobs name: another host may yet have to ask them); whether
    there was any of that work."""
    with own_read() as session:
        named = {worker for worker in session.scalars(select(ImportJob.worker).where(
            ImportJob.status == "running")) if worker}
    swept = liveness.sweep(keep=named)
    return _remove_finished() or swept > 0


def _remove_finished() -> bool:
    cutoff = utc_now() - KEEP_FINISHED
    uploads.purge_stale()
    with own_read() as session:
        waiting = session.scalar(select(ImportJob.id).where(
            ImportJob.finished_utc < cutoff).limit(1)) is not None
    if not waiting:
        return False
    with transaction():
        old = db.session.execute(select(ImportJob.id, ImportJob.upload, ImportJob.sha256).where(
            ImportJob.status.in_(("done", "failed")), ImportJob.finished_utc < cutoff)
            .limit(100)).all()
        if not old:
            return False
        ids = [row.id for row in old]
        db.session.execute(delete(ImportRow).where(ImportRow.job_id.in_(ids)))
        db.session.execute(delete(ImportJob).where(ImportJob.id.in_(ids)))
    for row in old:
        uploads.discard(row.upload)
    if blobs.uses_database():
        # Their contents too, unless a File or another job names them or a writer holds
        # them (the collector's own checks; no grace: a content commits with what names it).
        blobs.collect_garbage(sorted({row.sha256 for row in old}), 0, dry_run=False)
    return True
