"""The worker (``flask --app labapp worker``) runs every feature's upkeep: the search queue,
the entity tallies and SQLite's statistics; a refused upkeep is tried again, one that raises
anything at all is logged and the others go on, a periodic one waits for its period.
tests/search/test_worker_process.py runs it as a process, tests/alerts/test_poisoned.py
with a poisoned e-mail outbox."""
from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from flask import Flask
from sqlalchemy import func, literal, select
from sqlalchemy.exc import OperationalError

from labapp import sqlite_stats
from labapp.alerts import evaluate as alerts
from labapp.dashboards import tally_folding
from labapp.db import db
from labapp.imports import jobs as import_jobs
from labapp.model import EntityCountChange, SearchQueue
from labapp.search import upkeep as search_upkeep
from labapp.search.cli import search_cli
from labapp.search.indexer import beat, heartbeat_path, worker_alive
from labapp.storage import counts as location_counts
from labapp.worker import Upkeep, run, upkeeps, worker_command
from tests.conftest import BACKEND, run_init
from tests.helpers.processes import ADMIN, wait_for


def test_each_feature_gives_one_upkeep(fresh_app: Callable[..., Flask]) -> None:
    assert [(job.name, job.run, job.every) for job in upkeeps(fresh_app())] == [
        ("search queue", search_upkeep.upkeep, 0.0),
        ("entity tallies", tally_folding.upkeep, 0.0),
        ("location counts", location_counts.upkeep, 0.0),
        ("spreadsheet imports", import_jobs.upkeep, 0.0),
        ("finished imports", import_jobs.purge_finished, 3600.0),
        ("alert rules", alerts.upkeep, 60.0),
        ("SQLite statistics", sqlite_stats.upkeep, 60.0)]
    assert [job.name for job in upkeeps(fresh_app(SQLITE_STATISTICS_SECONDS=0))] == [
        "search queue", "entity tallies", "location counts", "spreadsheet imports",
        "finished imports", "alert rules"]


def _waiting(app: Flask) -> tuple[int, int]:
    """(queued search changes, tally changes not folded)."""
    with app.app_context():
        try:
            return (db.session.scalar(select(func.count()).select_from(SearchQueue)) or 0,
                    db.session.scalar(select(func.count()).select_from(EntityCountChange))
                    or 0)
        finally:
            db.session.remove()


def test_the_worker_keeps_every_feature_up(fresh_app: Callable[..., Flask],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_stats, "ANALYZE_FROM", 1)
    app = fresh_app()
    run_init(app)
    with app.app_context():
        beat(heartbeat_path())  # a worker beats: the request only queues its change
    response = app.test_client().post("/api/entity", headers=ADMIN, json={
        "entities": [{"eClass": "Sample", "name": "upkept sample"}]})
    assert response.status_code == 201, response.get_json()
    queued, unfolded = _waiting(app)
    assert queued and unfolded

    stop = threading.Event()

    def work() -> None:
        with app.app_context():
            run(stop)

    thread = threading.Thread(target=work, name="test-worker")
    thread.start()
    try:
        wait_for(lambda: _waiting(app) == (0, 0), "the worker to drain and fold", timeout=30)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not thread.is_alive()
    found = app.test_client().get("/api/search/fulltext/upkept", headers=ADMIN)
    assert [item["name"] for item in found.get_json()["data"]] == ["upkept sample"]
    with app.app_context():
        assert not worker_alive(), "a worker that stops removes its heartbeat"
        if BACKEND == "sqlite":
            assert sqlite_stats._recorded_entities(), "the statistics were gathered"
        db.session.remove()


def test_an_upkeep_the_database_refused_is_tried_again(fresh_app: Callable[..., Flask],
                                                       caplog: pytest.LogCaptureFixture) -> None:
    app = fresh_app()
    stop = threading.Event()
    calls: list[str] = []

    def flaky() -> bool:
        calls.append("flaky")
        if len(calls) == 1:
            raise OperationalError("ANALYZE", {}, Exception("database is locked"))
        stop.set()
        return False

    with app.app_context():
        run(stop, [Upkeep("flaky job", flaky)])
    assert calls == ["flaky", "flaky"]
    assert "flaky job not kept up" in caplog.text
    assert "database is locked" in caplog.text


def test_an_upkeep_that_raises_anything_is_logged_and_the_worker_goes_on(
        fresh_app: Callable[..., Flask], caplog: pytest.LogCaptureFixture) -> None:
    app = fresh_app()
    stop = threading.Event()
    calls: list[str] = []

    def poisoned() -> bool:
        calls.append("poisoned")
        db.session.execute(select(literal(1)))  # its session in a transaction
        raise ValueError("Header values may not contain linefeed or carriage return characters")

    def healthy() -> bool:
        calls.append("healthy")
        assert not db.session().in_transaction(), "the failed job's session was rolled back"
        if calls.count("healthy") == 3:
            stop.set()
        return False

    with app.app_context():
        run(stop, [Upkeep("poisoned job", poisoned), Upkeep("healthy job", healthy)])
    assert calls == ["poisoned", "healthy"] * 3, "each look runs both, the failing one again"
    failures = [record for record in caplog.records if "poisoned job failed" in record.getMessage()]
    assert len(failures) == 3 and all(record.exc_info for record in failures)
    assert "linefeed" in caplog.text


def test_a_periodic_upkeep_waits_for_its_period(fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app()
    stop = threading.Event()
    calls = {"hourly": 0, "always": 0}

    def hourly() -> bool:
        calls["hourly"] += 1
        return True

    def always() -> bool:
        calls["always"] += 1
        if calls["always"] == 5:
            stop.set()
        return True

    with app.app_context():
        run(stop, [Upkeep("hourly", hourly, every=3600), Upkeep("always", always)])
    assert calls == {"hourly": 1, "always": 5}


def test_search_worker_is_the_old_name_of_the_worker(app: Flask) -> None:
    assert search_cli.commands["worker"] is worker_command
    assert app.cli.commands["worker"] is worker_command
    result = app.test_cli_runner().invoke(args=["search", "worker", "--help"])
    assert result.exit_code == 0, result.output
    assert "search index, the dashboard tallies and SQLite's statistics" in result.output
