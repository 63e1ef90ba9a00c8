"""Workers of two hosts at once over one PostgreSQL database (issue 34 §2): two
applications with instance folders of their own (the import uploads folder shared, as
docs/deploying.md asks of the folder file store, which these run on), each running the
whole worker in a thread. Imports, alert ticks and folds are claimed through the database:
an import runs once, an alert tells each recipient once, a fold never counts a change
twice."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import Select, func, select

from labapp import liveness
from labapp.alerts import evaluate as alerts
from labapp.alerts import service as rules
from labapp.dashboards import tally_folding
from labapp.db import db, transaction
from labapp.entities.service import save_batch
from labapp.imports import jobs as import_jobs
from labapp.model import Entity, EntityCountChange, ImportJob, Notification
from labapp.search.indexer import worker_alive
from labapp.users.service import create_user
from labapp.worker import IMPORTS, UPKEEP, Lane, Upkeep, run
from tests.alerts.conftest import rule_body
from tests.conftest import BACKEND, DEFAULT_DEPARTMENT, PASSWORD, build_app, dispose
from tests.helpers.dashboards import tallied, true_counts
from tests.helpers.processes import wait_for
from tests.imports.conftest import actor_of
from tests.imports.uploading import queue_job

pytestmark = pytest.mark.skipif(BACKEND != "postgresql",
                                reason="hosts share a PostgreSQL database (issue 34)")
JOBS = 6
SAMPLES = 40


@pytest.fixture
def hosts(fresh_app: Callable[..., Flask], tmp_path: Path) -> Iterator[tuple[Flask, Flask]]:
    """Host A and host B: one database, two instance folders (the uploads folder shared)."""
    first = fresh_app(initialised=True)
    instance = Path(first.config["LABAPP"]["INSTANCE_PATH"])
    (instance / "imports").mkdir(exist_ok=True)
    other = tmp_path / "host-b"
    other.mkdir()
    (other / "imports").symlink_to(instance / "imports", target_is_directory=True)
    second = build_app(other, first.config["LABAPP"]["DATABASE_URL"])
    try:
        yield first, second
    finally:
        dispose(second)


class Counted:
    """An upkeep that counts its runs (so a test waits for ticks, not for time)."""

    def __init__(self, upkeep: Callable[[], bool]) -> None:
        self.upkeep, self.runs = upkeep, 0

    def __call__(self) -> bool:
        self.runs += 1
        return self.upkeep()


@contextmanager
def working(*apps: Flask) -> Iterator[list[Counted]]:
    """Each app's worker in a thread (the upkeep and imports lanes, the alert rules ticked
    at every look): the counted alert ticks of each, in order."""
    stop = threading.Event()
    ticks = [Counted(alerts.upkeep) for _ in apps]
    failures: list[BaseException] = []

    def work(app: Flask, tick: Counted) -> None:
        try:
            with app.app_context():
                run(stop, in_lanes=[
                    Lane(UPKEEP, [Upkeep("entity tallies", tally_folding.upkeep),
                                  Upkeep("alert rules", tick)]),
                    Lane(IMPORTS, [Upkeep("spreadsheet imports", import_jobs.upkeep)])])
        except BaseException as error:  # reported by the test, not lost in the thread
            failures.append(error)

    threads = [threading.Thread(target=work, args=(app, tick), name=f"host-{number}")
               for number, (app, tick) in enumerate(zip(apps, ticks, strict=True))]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: all(tick.runs for tick in ticks), "both workers to tick")
        yield ticks
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    assert not failures, failures


def _count(app: Flask, statement: Select[Any]) -> int:
    with app.app_context():
        value: int = db.session.scalar(statement) or 0
        db.session.remove()
        return value


def test_each_worker_sees_the_other_hosts_worker(hosts: tuple[Flask, Flask]) -> None:
    first, second = hosts
    with working(first, second):
        for app in hosts:
            with app.app_context():
                assert len(liveness.alive()) == 2, "both hosts' workers, from either host"


def test_requests_of_one_host_leave_their_indexing_to_a_worker_of_another(
        hosts: tuple[Flask, Flask]) -> None:
    first, second = hosts
    stop = threading.Event()

    def work() -> None:
        with first.app_context():
            run(stop)  # every lane, the search lane and its heartbeat included

    worker = threading.Thread(target=work, name="host-a-worker")
    worker.start()
    try:
        with second.app_context():
            wait_for(worker_alive, "B's requests to see A's worker drain the search queue")
            assert [process.host for process in liveness.alive()] == [liveness.host_name()]
    finally:
        stop.set()
        worker.join(timeout=60)
    with second.app_context():
        assert not worker_alive() and liveness.alive() == [], "a stopped worker lets go"


def test_an_import_runs_once_whichever_worker_claims_it(hosts: tuple[Flask, Flask]) -> None:
    first, second = hosts
    for number in range(JOBS):
        queue_job(first if number % 2 else second,
                  f"Name;Volume (mL)\nJ{number}-1;1\nJ{number}-2;2\n", dry_run=False)
    with working(first, second):
        wait_for(lambda: _count(first, select(func.count()).select_from(ImportJob).where(
            ImportJob.status.in_(("queued", "running")))) == 0, "every import to end")
    with first.app_context():
        statuses = db.session.scalars(select(ImportJob.status)).all()
        names = db.session.scalars(select(Entity.name).where(Entity.name.like("J%"))).all()
    assert statuses == ["done"] * JOBS
    assert sorted(names) == sorted(f"J{job}-{row}" for job in range(JOBS) for row in (1, 2))


def _seed_rule(app: Flask) -> None:
    """Forty low samples, and one rule telling the admin and Bob."""
    with app.app_context(), transaction():
        create_user(username="bob", name="Bob", department_id=DEFAULT_DEPARTMENT,
                    password=PASSWORD, roles=(), created_by="admin")
    with app.app_context(), transaction():
        admin = actor_of("admin")
        save_batch(admin, [{"eClass": "Sample", "name": f"Tube {number}", "amount": 1.0}
                           for number in range(SAMPLES)])
        rules.create(admin, {**rule_body("Low", users=["admin", "bob"]),
                             "filter": "amount le 5"})


def test_an_alert_tells_each_recipient_once_with_both_workers_ticking(
        hosts: tuple[Flask, Flask]) -> None:
    first, second = hosts
    _seed_rule(first)

    def told() -> list[str]:
        with first.app_context():
            users = sorted(db.session.scalars(select(Notification.user_id).where(
                Notification.kind == "Alert")))
            db.session.remove()
            return users

    with working(first, second) as ticks:
        wait_for(lambda: told() == ["admin", "bob"], "the alert to reach both recipients")
        seen = [tick.runs for tick in ticks]
        wait_for(lambda: all(tick.runs >= runs + 3 for tick, runs in zip(ticks, seen,
                                                                           strict=True)),
                 "both workers to tick three more times")
    assert told() == ["admin", "bob"], "told once each, however often both ticked"


def test_folds_of_both_workers_never_count_a_change_twice(hosts: tuple[Flask, Flask]) -> None:
    first, second = hosts
    with working(first, second):
        for batch in range(8):
            app = first if batch % 2 else second
            with app.app_context(), transaction():
                save_batch(actor_of("admin"), [
                    {"eClass": "Sample", "name": f"Fold {batch}-{number}"}
                    for number in range(25)])
        wait_for(lambda: _count(first, select(func.count()).select_from(
            EntityCountChange)) == 0, "both workers to fold every change")
    assert tallied(first) == true_counts(first)
