"""The background worker: ``flask --app labapp worker`` (``search worker`` is its old name).

One long-running process beside the web server does every feature's upkeep, each through the
one function the feature exposes: the search queue drained into the index
(:func:`labapp.search.upkeep.upkeep`), the entity tallies and the location counts folded
(:func:`labapp.dashboards.tally_folding.upkeep`, :func:`labapp.storage.counts.upkeep`), the queued
spreadsheet imports run one at a time (:func:`labapp.imports.jobs.upkeep`, long finished
ones removed hourly), the alert rules evaluated once a minute
(:func:`labapp.alerts.evaluate.upkeep`) and SQLite's planner statistics gathered when the
data has grown (:func:`labapp.sqlite_stats.upkeep`, looked at every
``SQLITE_STATISTICS_SECONDS``; 0 turns that off). The loop runs the due upkeep in that order
and looks again at once while any of them found work, else after :data:`POLL` seconds. An
upkeep that fails, whatever it raised (the database refused it, or one bad row made it
fail), is logged, its session rolled back, and it is tried again at its next turn: one job
never stops the others, nor the worker.
For its whole run the loop holds a lock file of its own (:func:`labapp.liveness.holding`):
the jobs it claims name it, and the kernel drops the lock when the process dies, so other
workers fail those jobs at once and pages tell whether a worker runs.
"""
from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import click
from flask import Flask, current_app
from flask.cli import with_appcontext
from sqlalchemy.exc import SQLAlchemyError

from labapp import liveness, sqlite_stats
from labapp.alerts import evaluate as alerts
from labapp.dashboards import tally_folding
from labapp.db import db, end_read
from labapp.imports import jobs as import_jobs
from labapp.search import indexer
from labapp.search import upkeep as search_upkeep
from labapp.serving import freeze_start_up
from labapp.storage import counts as location_counts

POLL = 0.15  # seconds between two looks when no upkeep found work
PURGE_IMPORTS = 3600.0  # seconds between two removals of long finished imports
ALERT_SECONDS = 60.0  # alert rules are evaluated (and due e-mail sent) once a minute
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Upkeep:
    """One feature's upkeep: ``run`` returns whether it found work; ``every`` is the
    seconds between two runs (0: at every look)."""

    name: str
    run: Callable[[], bool]
    every: float = 0.0


def upkeeps(app: Flask) -> list[Upkeep]:
    """Every feature's upkeep, in the order one look runs them."""
    jobs = [Upkeep("search queue", search_upkeep.upkeep),
            Upkeep("entity tallies", tally_folding.upkeep),
            Upkeep("location counts", location_counts.upkeep),
            Upkeep("spreadsheet imports", import_jobs.upkeep),
            Upkeep("finished imports", import_jobs.purge_finished, PURGE_IMPORTS)]
    jobs.append(Upkeep("alert rules", alerts.upkeep, ALERT_SECONDS))
    every = float(app.config["LABAPP"]["SQLITE_STATISTICS_SECONDS"])
    if every:
        jobs.append(Upkeep("SQLite statistics", sqlite_stats.upkeep, every))
    return jobs


def run_once(job: Upkeep) -> bool:
    """Run one upkeep; whether it found work (False when it failed).

    Any exception of the job is caught here: a database that is busy is an everyday
    warning, anything else an error logged with its traceback. Either way the session is
    rolled back and the worker goes on, since a job that stopped the loop would stop search
    indexing, imports, tallies and alerts with it (and, failing on the same row again,
    after every restart)."""
    try:
        return job.run()
    except SQLAlchemyError as error:
        logger.warning("%s not kept up: %s", job.name, error)
    except Exception:
        logger.exception("%s failed; the worker goes on", job.name)
    _roll_back(job)
    return False


def _roll_back(job: Upkeep) -> None:
    """End what a failed job left of its read; a connection that cannot even do that is
    dropped, so the next job starts on a fresh one."""
    try:
        end_read()
    except Exception:
        logger.exception("%s: the rollback failed too; the session is discarded", job.name)
        db.session.remove()


def run(stop: threading.Event, jobs: list[Upkeep] | None = None) -> None:
    """Run the upkeep until ``stop`` is set (in an application context); ``jobs`` defaults
    to :func:`upkeeps`. The search heartbeat and the worker's lock file are up for the
    whole run."""
    jobs = upkeeps(current_app) if jobs is None else jobs
    due = dict.fromkeys(range(len(jobs)), time.monotonic())
    try:
        with search_upkeep.heartbeat(), liveness.holding():
            while not stop.is_set():
                worked = False
                for number, job in enumerate(jobs):
                    if stop.is_set() or time.monotonic() < due[number]:
                        continue
                    worked = run_once(job) or worked
                    if job.every:
                        due[number] = time.monotonic() + job.every
                if not worked:
                    stop.wait(POLL)
    finally:
        stop.set()
        db.session.remove()


@click.command("worker")
@with_appcontext
def worker_command() -> None:
    """Keep up the search index, the dashboard tallies and SQLite's statistics as the data
    changes (run it beside the web server; `make run` does). Stops on SIGTERM or Ctrl-C
    after the work in hand."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    click.echo(f"worker: indexing queued changes into {indexer.index_path()}, folding "
               "tallies, gathering SQLite statistics")
    click.echo(f"worker: {freeze_start_up():,} start-up objects frozen out of garbage "
               "collection")
    run(stop)
