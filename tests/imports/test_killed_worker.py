"""Issue 32 §4: a worker killed with SIGKILL in the middle of an import's commit. Two real
worker processes run on one machine; the one that took the job is killed while its commit's
transaction writes; the other fails the job within the deadline, saying why, and no entity
of the import exists. The survivor's own job is never failed."""
from __future__ import annotations

import os
import signal
from collections.abc import Callable
from contextlib import ExitStack

from flask import Flask
from sqlalchemy import func, select

from labapp import liveness
from labapp.db import db
from labapp.imports import workers
from labapp.model import ImportRow, Sample
from tests.helpers.importing import commit_writing, holds_its_lock, job_now, steadily, worker_pids
from tests.helpers.processes import wait_for, worker_process
from tests.imports.uploading import GOOD_CSV, queue_job

ROWS = 10_000  # a commit of this many rows writes for seconds on either database
FAILED_WITHIN = 60.0  # seconds: the deadline


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
    app = fresh_app(initialised=True)
    rows = "Name\n" + "".join(f"K-{number}\n" for number in range(1, ROWS + 1))
    with ExitStack() as running:
        started = [running.enter_context(worker_process(
            app, ready=holds_its_lock, what="the worker's lock")) for _ in range(2)]
        job_id = queue_job(app, rows, dry_run=False)
        # Whichever worker took the job: its process id is in the job's worker id.
        claimed = wait_for(lambda: job_now(app, job_id).worker, "a worker to claim the job")
        parsed = liveness.ProcessId.parse(claimed)
        assert parsed is not None and parsed.role == "worker"
        victim = next(process for process in started if process.pid == parsed.pid)
        survivor = next(process for process in started if process is not victim)
        wait_for(lambda: job_now(app, job_id).progress_done == ROWS, "the plan", timeout=120)
        wait_for(steadily(commit_writing(app)), "the commit's transaction to write",
                 timeout=120)
        assert job_now(app, job_id).status == "running", "the survivor failed a live job"

        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)

        ended = wait_for(lambda: (job := job_now(app, job_id)).status != "running" and job,
                         "the job to be failed", timeout=FAILED_WITHIN)
        assert ended.status == "failed", "the commit ended before the kill: raise ROWS"
        assert ended.error == workers.STOPPED and ended.finished_utc is not None
        assert _imported(app, job_id) == {"samples": 0, "rows": 0}

        # The survivor lives on and runs the next job to its end.
        assert survivor.poll() is None and worker_pids(app) == {survivor.pid}
        following = queue_job(app, GOOD_CSV, dry_run=False)
        done = wait_for(lambda: (job := job_now(app, following)).status != "queued"
                        and job.status != "running" and job, "the survivor's job")
        assert done.status == "done", done.error
        assert liveness.ProcessId.parse(done.worker or "").pid == survivor.pid
