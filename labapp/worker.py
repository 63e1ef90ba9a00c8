"""The background worker: ``flask --app labapp worker`` (``search worker`` is its old name).

One long-running process beside the web server does every feature's upkeep, each through the
one function the feature exposes: the search queue drained into the index
(:func:`labapp.search.upkeep.upkeep`), the entity tallies and the location counts folded
(:func:`labapp.dashboards.tally_folding.upkeep`, :func:`labapp.storage.counts.upkeep`), the queued
spreadsheet imports run one at a time (:func:`labapp.imports.jobs.upkeep`, long finished
ones removed hourly), the alert rules evaluated once a minute
(:func:`labapp.alerts.evaluate.upkeep`, every ``ALERT_TICK_SECONDS``) and SQLite's planner
statistics gathered when the data has grown (:func:`labapp.sqlite_stats.upkeep`, looked at
every ``SQLITE_STATISTICS_SECONDS``; 0 turns that off), and the directory synced
(:func:`labapp.users.directory.scheduled_sync`, every ``DIRECTORY_SYNC_MINUTES`` when LDAP is
on; 0 turns that off), the webhooks delivered (:func:`labapp.webhooks.delivery.upkeep`,
old delivery log lines removed hourly), and the change log and the sign-in log cut to their
retention (:func:`labapp.changefeed.retention.upkeep`, :func:`labapp.auth.sign_in_log.upkeep`,
looked at every minute).

Lanes
    The upkeep runs in four lanes (:func:`lanes`), each a thread with an application
    context and a database session of its own, so a long job never starves a short one:
    ``search`` drains the search queue and nothing else, ``upkeep`` runs the short periodic
    jobs (folds, alert tick and its e-mail, statistics), ``imports`` runs the imports, whose
    commit may last minutes, and ``webhooks`` delivers webhooks
    (:func:`labapp.webhooks.delivery.upkeep`), whose receivers may take their timeout to
    answer. Within a lane the due jobs run in order, and the lane looks
    again at once while any of them found work, else after :data:`POLL` seconds.
    The search heartbeat (requests that see it fresh leave their queued changes to the
    worker) is kept fresh only by the search lane's pulse (:mod:`labapp.search.upkeep`):
    while that lane is stalled, requests index inline again, whatever the other lanes do.

Failures
    A job that fails, whatever it raised (the database refused it, or one bad row made it
    fail), is logged, its lane's session rolled back, and it is tried again at its next
    turn: one job never stops the others, nor its lane. A lane that ends for any other
    reason stops the whole worker (SIGTERM, Ctrl-C too), each lane after the job in hand.

For its whole run the worker holds a lock file of its own (:func:`labapp.liveness.holding`;
on PostgreSQL an advisory lock and a ``worker_process`` row, seen by every host): the jobs
it claims name it, and the kernel (the database server) drops the lock when the process
dies, so other workers fail those jobs at once and pages tell whether a worker runs.
"""
from __future__ import annotations

import functools
import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

import click
from flask import Flask, current_app
from flask.cli import with_appcontext
from sqlalchemy.exc import SQLAlchemyError

from labapp import liveness, sqlite_stats
from labapp.alerts import evaluate as alerts
from labapp.auth import sign_in_log
from labapp.changefeed import retention as change_retention
from labapp.dashboards import tally_folding
from labapp.db import db, end_read
from labapp.imports import jobs as import_jobs
from labapp.search import backend as search_backend
from labapp.search import upkeep as search_upkeep
from labapp.serving import freeze_start_up
from labapp.storage import counts as location_counts
from labapp.users import directory
from labapp.webhooks import delivery as webhook_delivery

POLL = 0.15  # seconds between two looks of a lane when none of its jobs found work
PURGE_IMPORTS = 3600.0  # seconds between two removals of long finished imports
PURGE_DELIVERIES = 3600.0  # seconds between two removals of old webhook delivery log lines
RETAIN_CHANGES = 60.0  # seconds between two looks for changes past the retention
RETAIN_SIGN_INS = 60.0  # seconds between two looks for sign-in events past the retention
SEARCH, UPKEEP, IMPORTS, WEBHOOKS = "search", "upkeep", "imports", "webhooks"  # the lanes
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Upkeep:
    """One feature's upkeep: ``run`` returns whether it found work; ``every`` is the
    seconds between two runs (0: at every look)."""

    name: str
    run: Callable[[], bool]
    every: float = 0.0


@dataclass(frozen=True)
class Lane:
    """Jobs that run one after another in a thread of their own. ``pulse``, when set, is
    touched at each look: the lane drains the search queue and keeps its heartbeat fresh."""

    name: str
    jobs: Sequence[Upkeep]
    pulse: search_upkeep.Pulse | None = field(default=None, compare=False)


def lanes(app: Flask) -> list[Lane]:
    """The worker's lanes and the upkeep each runs (see the module docstring)."""
    pulse = search_upkeep.Pulse()
    periodic = [Upkeep("entity tallies", tally_folding.upkeep),
                Upkeep("location counts", location_counts.upkeep),
                Upkeep("change log retention", change_retention.upkeep, RETAIN_CHANGES),
                Upkeep("sign-in log retention", sign_in_log.upkeep, RETAIN_SIGN_INS),
                Upkeep("alert rules", alerts.upkeep,
                       float(app.config["LABAPP"]["ALERT_TICK_SECONDS"]))]
    every = float(app.config["LABAPP"]["SQLITE_STATISTICS_SECONDS"])
    if every:
        periodic.append(Upkeep("SQLite statistics", sqlite_stats.upkeep, every))
    sync_minutes = app.config["LABAPP"]["DIRECTORY_SYNC_MINUTES"]
    if sync_minutes and app.config["LABAPP"]["LDAP_URL"]:
        periodic.append(Upkeep("directory sync", directory.scheduled_sync,
                               60.0 * sync_minutes))
    return [Lane(SEARCH, [Upkeep("search queue", functools.partial(search_upkeep.upkeep,
                                                                   pulse))], pulse),
            Lane(UPKEEP, periodic),
            Lane(IMPORTS, [Upkeep("spreadsheet imports", import_jobs.upkeep),
                           Upkeep("finished imports", import_jobs.purge_finished,
                                  PURGE_IMPORTS)]),
            Lane(WEBHOOKS, [Upkeep("webhook deliveries", webhook_delivery.upkeep),
                            Upkeep("webhook delivery log", webhook_delivery.purge,
                                   PURGE_DELIVERIES)])]


def run_once(job: Upkeep) -> bool:
    """Run one upkeep; whether it found work (False when it failed).

    Any exception of the job is caught here: a database that is busy is an everyday
    warning, anything else an error logged with its traceback. Either way the session is
    rolled back and the lane goes on, since a job that stopped its lane would stop search
    indexing, imports, tallies or alerts with it (and, failing on the same row again,
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


def run_lane(stop: threading.Event, lane: Lane) -> None:
    """Run the lane's jobs until ``stop`` is set (in an application context of the lane's
    own); ``stop`` is set when the lane ends, however it ends, so the others end too."""
    due = dict.fromkeys(range(len(lane.jobs)), time.monotonic())
    try:
        while not stop.is_set():
            if lane.pulse is not None:
                lane.pulse.touch()
            worked = False
            for number, job in enumerate(lane.jobs):
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


def run(stop: threading.Event, jobs: Sequence[Upkeep] | None = None, *,
        in_lanes: Sequence[Lane] | None = None) -> None:
    """Run the worker until ``stop`` is set (in an application context): each lane of
    ``in_lanes`` (default: :func:`lanes`) in a thread of its own, this thread waiting for
    them. ``jobs`` instead runs those jobs as one lane in this thread. The worker's lock
    file is held for the whole run, the search heartbeat while the search lane runs."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    try:
        with liveness.holding():
            if jobs is not None:
                run_lane(stop, Lane(UPKEEP, jobs))
                return
            _run_lanes(app, stop, list(lanes(app) if in_lanes is None else in_lanes))
    finally:
        stop.set()
        db.session.remove()


class LaneEnded(RuntimeError):
    """A lane ended on something no job's failure explains (the worker stopped with it)."""


def _run_lanes(app: Flask, stop: threading.Event, running: list[Lane]) -> None:
    pulses = [lane.pulse for lane in running if lane.pulse is not None]
    ended: list[str] = []
    threads = [threading.Thread(target=_lane_thread, args=(app, stop, lane, ended),
                                name=f"worker-{lane.name}") for lane in running]
    for thread in threads:
        thread.start()
    try:
        with search_upkeep.heartbeat(pulses[0]) if pulses else nullcontext():
            # Waiting in slices keeps this thread free to take SIGTERM and Ctrl-C.
            while not stop.wait(POLL):
                pass
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    if ended:
        raise LaneEnded(f"worker lanes ended: {', '.join(ended)}; see the log above")


def _lane_thread(app: Flask, stop: threading.Event, lane: Lane, ended: list[str]) -> None:
    """Run ``lane`` in an application context of its own; when it ends on something else
    than ``stop``, it is logged and named in ``ended`` (the worker then stops)."""
    with app.app_context():
        try:
            run_lane(stop, lane)
        except BaseException:
            logger.exception("worker lane %s ended; the worker stops", lane.name)
            ended.append(lane.name)


@click.command("worker")
@with_appcontext
def worker_command() -> None:
    """Keep up the search index, the dashboard tallies and SQLite's statistics as the data
    changes, run the imports and the alert rules, deliver the webhooks (run it beside the
    web server; `make run` does). Stops on SIGTERM or Ctrl-C after the work in hand."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    click.echo(f"worker: indexing queued changes ({search_backend.current().name}), folding "
               "tallies, gathering SQLite statistics, running imports and alert rules, "
               "delivering webhooks in lanes: "
               f"{', '.join(lane.name for lane in lanes(current_app))}")
    click.echo(f"worker: {freeze_start_up():,} start-up objects frozen out of garbage "
               "collection")
    run(stop)
