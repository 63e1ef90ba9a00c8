"""The worker's lanes as a process (issue 33 §3): while an import's commit is in the middle
of its transaction, a change made through the application is found by search and the alert
tick still tells of it, the import then ends as it would have.

The commit is held mid-transaction by the test itself, on PostgreSQL: a lock on the table of
row outcomes, which the commit writes after its entities. On SQLite a commit holds the
database's only write lock, so no writer can make a change meanwhile; what writers get
then is tested in tests/imports/test_writers_during_commit.py, and the lanes themselves on
both databases in tests/test_worker.py. The change is a sample, of the class the import
writes: the import drew its ids before its commit began, so the sample takes the next id
without waiting for the commit (docs/decisions/import-ids-drawn-apart.md)."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask
from sqlalchemy import func, select

from labapp.access.grant_sets import actor_for
from labapp.alerts import service as rules
from labapp.db import db, transaction
from labapp.model import AlertState, ImportJob, Notification, Sample, User
from tests.alerts.conftest import rule_body
from tests.conftest import BACKEND, run_init
from tests.helpers.importing import commits_held
from tests.helpers.processes import ADMIN, alive, wait_for, worker_process
from tests.helpers.searching import client_found
from tests.imports.uploading import queue_job

pytestmark = pytest.mark.skipif(BACKEND != "postgresql", reason=(
    "on SQLite an import's commit holds the only write lock: no change can be made beside it"))

ROWS = 300  # the import's samples, named L-1 …


def _in_app(app: Flask, read: Callable[[], object]) -> object:
    with app.app_context():
        try:
            return read()
        finally:
            db.session.remove()


def _job_status(app: Flask, job_id: str) -> object:
    return _in_app(app, lambda: db.session.scalar(
        select(ImportJob.status).where(ImportJob.id == job_id)))


def _imported(app: Flask) -> set[str]:
    """The ids of the samples the import wrote."""
    with app.app_context():
        try:
            return set(db.session.scalars(select(Sample.id).where(Sample.name.like("L-%"))))
        finally:
            db.session.remove()


def _alerted(app: Flask, rule_id: str, entity_id: str) -> object:
    """Whether the tick tracked the entity for the rule and told the admin (the bell)."""
    def read() -> bool:
        tracked = db.session.scalar(select(AlertState.entity_id).where(
            AlertState.rule_id == rule_id, AlertState.entity_id == entity_id))
        told = db.session.scalar(select(func.count()).select_from(Notification).where(
            Notification.kind == "Alert", Notification.user_id == "admin"))
        return tracked is not None and bool(told)
    return _in_app(app, read)


def _make_rule(app: Flask) -> str:
    with app.app_context(), transaction():
        admin = actor_for(db.session.get(User, "admin"), method=None)
        made = rules.create(admin, rule_body("New samples", eclass="Sample",
                                             filter=None, users=["admin"]))
        rule_id = str(made.id)
    return rule_id


def test_a_change_is_searched_and_alerted_while_an_import_commits(
        fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app()
    run_init(app)
    rows = "Name,Amount\n" + "".join(f"L-{number},100\n" for number in range(1, ROWS + 1))
    # The worker is stopped last: it ends an import it runs before it stops.
    with worker_process(app, ALERT_TICK_SECONDS="1"), commits_held(app) as held:
        job_id = queue_job(app, rows, dry_run=False)
        wait_for(held.waiting, "the import's commit to write", timeout=120)
        rule_id = _make_rule(app)
        response = app.test_client().post("/api/entity", headers=ADMIN, json={
            "entities": [{"eClass": "Sample", "name": "beside the commit"}]})
        assert response.status_code == 201, response.get_json()
        entity_id = response.get_json()["entities"][0]["id"]

        wait_for(lambda: client_found(app, "beside") == {"beside the commit"},
                 "the change to be searchable while the import commits")
        wait_for(lambda: _alerted(app, rule_id, entity_id),
                 "the alert tick to tell of it while the import commits")
        assert alive(app), "the search lane drains: its heartbeat is fresh"
        assert held.waiting(), "the import still commits"
        assert _job_status(app, job_id) == "running" and _imported(app) == set()

        held.release()  # the import's commit goes on and ends
        wait_for(lambda: _job_status(app, job_id) == "done", "the import to end", timeout=120)
    imported = _imported(app)
    assert len(imported) == ROWS and entity_id not in imported
