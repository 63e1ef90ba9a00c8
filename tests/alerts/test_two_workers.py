"""Two workers evaluating the same rules at the same moment, each on its own connection and
with real commits, tell an item once; so does a worker started afresh over the same
database (the unique (rule, item) state, ``INSERT … ON CONFLICT DO NOTHING``)."""
from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime

from flask import Flask
from sqlalchemy import func, select

from labapp.access.grant_sets import actor_for
from labapp.alerts import service as rules
from labapp.alerts.evaluate import Report, evaluate
from labapp.db import db, transaction
from labapp.entities.service import save_batch
from labapp.model import Notification, User
from tests.alerts.conftest import rule_body
from tests.conftest import build_app, dispose

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
SAMPLES = 40


def _seed(app: Flask) -> None:
    """Forty low samples of the admin's department, and one rule telling the admin."""
    with app.app_context(), transaction():
        admin = actor_for(db.session.get(User, "admin"), method=None)
        save_batch(admin, [{"eClass": "Sample", "name": f"Tube {number}", "amount": 1.0}
                              for number in range(SAMPLES)])
        body = rule_body("Low", users=["admin"])
        rules.create(admin, {**body, "filter": "amount le 5"})


def _notified(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Notification)
                                 .where(Notification.kind == "Alert")) or 0


def test_two_evaluations_at_once_alert_once(fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app(initialised=True)
    _seed(app)
    start = threading.Barrier(2)
    reports: list[Report] = []
    failures: list[BaseException] = []

    def work() -> None:
        try:
            with app.app_context():
                start.wait(timeout=30)
                reports.append(evaluate(NOW))
                db.session.remove()
        except BaseException as error:  # reported by the test, not lost in the thread
            failures.append(error)

    workers = [threading.Thread(target=work) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert not failures, failures
    assert sorted(report.started for report in reports) == [0, SAMPLES]
    assert sum(report.notifications for report in reports) == 1
    assert _notified(app) == 1

    restarted = build_app(app.config["LABAPP"]["INSTANCE_PATH"],
                          app.config["LABAPP"]["DATABASE_URL"])
    try:
        with restarted.app_context():
            assert evaluate(NOW).started == 0
    finally:
        dispose(restarted)
    assert _notified(app) == 1
