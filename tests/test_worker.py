"""The worker (``flask --app labapp worker``) runs every feature's upkeep: the search queue,
the entity tallies and SQLite's statistics; a refused upkeep is tried again, one that raises
anything at all is logged and the others go on, a periodic one waits for its period.
tests/search/test_worker_process.py runs it as a process, tests/alerts/test_poisoned.py
with a poisoned e-mail outbox."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from flask import Flask
from sqlalchemy import func, literal, select
from sqlalchemy.exc import OperationalError

from labapp import sqlite_stats
from labapp.alerts import evaluate as alerts
from labapp.auth import sign_in_log
from labapp.changefeed import retention as change_retention
from labapp.dashboards import tally_folding
from labapp.db import db
from labapp.imports import jobs as import_jobs
from labapp.model import EntityCountChange, SearchQueue
from labapp.search import upkeep as search_upkeep
from labapp.search.cli import search_cli
from labapp.search.indexer import worker_alive
from labapp.storage import counts as location_counts
from labapp.worker import (
    IMPORTS,
    SEARCH,
    UPKEEP,
    Lane,
    LaneEnded,
    Upkeep,
    lanes,
    run,
    worker_command,
)
from tests.conftest import BACKEND, run_init
from tests.helpers.processes import (
    ADMIN,
    alive,
    wait_for,
    worker_beating,
    worker_in_thread,
)


def _lanes(app: Flask) -> list[tuple[str, list[tuple[str, float]]]]:
    return [(lane.name, [(job.name, job.every) for job in lane.jobs]) for lane in lanes(app)]


@pytest.fixture
def worker_app(fresh_app: Callable[..., Flask]) -> Flask:
    """An initialised application (the worker records itself in ``worker_process``), made
    before the test runs: making it runs migrations, whose logging set-up would drop the
    handler ``caplog`` adds for the test's run."""
    return fresh_app(initialised=True)


def test_each_feature_gives_one_upkeep_in_its_lane(fresh_app: Callable[..., Flask]) -> None:
    assert _lanes(fresh_app()) == [
        ("search", [("search queue", 0.0)]),
        ("upkeep", [("entity tallies", 0.0), ("location counts", 0.0),
                    ("change log retention", 60.0), ("sign-in log retention", 60.0),
                    ("alert rules", 60.0), ("SQLite statistics", 60.0)]),
        ("imports", [("spreadsheet imports", 0.0), ("finished imports", 3600.0)]),
        ("webhooks", [("webhook deliveries", 0.0), ("webhook delivery log", 3600.0)])]
    search, upkeep, imports, webhooks = lanes(fresh_app())
    assert search.pulse is not None
    assert upkeep.pulse is None and imports.pulse is None and webhooks.pulse is None
    assert [job.run for job in upkeep.jobs] == [
        tally_folding.upkeep, location_counts.upkeep, change_retention.upkeep,
        sign_in_log.upkeep, alerts.upkeep, sqlite_stats.upkeep]
    assert [job.run for job in imports.jobs] == [import_jobs.upkeep, import_jobs.purge_finished]
    assert _lanes(fresh_app(SQLITE_STATISTICS_SECONDS=0, ALERT_TICK_SECONDS=5))[1] == (
        "upkeep", [("entity tallies", 0.0), ("location counts", 0.0),
                   ("change log retention", 60.0), ("sign-in log retention", 60.0),
                   ("alert rules", 5.0)])


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
    with worker_beating(app):  # a worker beats: the request only queues its change
        response = app.test_client().post("/api/entity", headers=ADMIN, json={
            "entities": [{"eClass": "Sample", "name": "upkept sample"}]})
    assert response.status_code == 201, response.get_json()
    queued, unfolded = _waiting(app)
    assert queued and unfolded

    with worker_in_thread(app, threading.Event()) as thread:
        wait_for(lambda: _waiting(app) == (0, 0), "the worker to drain and fold", timeout=30)
    assert not thread.is_alive()
    found = app.test_client().get("/api/search/fulltext/upkept", headers=ADMIN)
    assert [item["name"] for item in found.get_json()["data"]] == ["upkept sample"]
    with app.app_context():
        assert not worker_alive(), "a worker that stops removes its heartbeat"
        if BACKEND == "sqlite":
            assert sqlite_stats._recorded_entities(), "the statistics were gathered"
        db.session.remove()


def test_an_upkeep_the_database_refused_is_tried_again(worker_app: Flask,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    app = worker_app
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
        worker_app: Flask, caplog: pytest.LogCaptureFixture) -> None:
    app = worker_app
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
    app = fresh_app(initialised=True)  # the worker records itself in worker_process
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


def _searchable(app: Flask, term: str) -> set[str]:
    response = app.test_client().get(f"/api/search/fulltext/{term}", headers=ADMIN)
    assert response.status_code == 200, response.get_json()
    return {item["name"] for item in response.get_json()["data"]}


@contextmanager
def lanes_running(app: Flask, in_lanes: list[Lane], stop: threading.Event,
                  released: threading.Event) -> Iterator[threading.Thread]:
    """The worker's loop over ``in_lanes`` in a thread, on ``app``; on leaving, the held
    jobs are ``released``, the worker is told to ``stop`` and its thread joined."""
    with worker_in_thread(app, stop, in_lanes) as thread:
        try:
            yield thread
        finally:
            released.set()


def test_a_long_job_in_one_lane_never_starves_the_others(
        fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app()
    run_init(app)
    importing, released = threading.Event(), threading.Event()
    ticks = [0]

    def long_import() -> bool:
        importing.set()
        released.wait(timeout=120)  # the test releases it once the other lanes were seen
        return False

    def tick() -> bool:
        ticks[0] += 1
        return False

    pulse = search_upkeep.Pulse()
    stop = threading.Event()
    in_lanes = [Lane(SEARCH, [Upkeep("search queue", lambda: search_upkeep.upkeep(pulse))],
                     pulse),
                Lane(UPKEEP, [Upkeep("tick", tick)]),
                Lane(IMPORTS, [Upkeep("long import", long_import)])]

    with lanes_running(app, in_lanes, stop, released) as thread:
        wait_for(importing.is_set, "the long import to start")
        wait_for(lambda: alive(app), "the search lane's heartbeat")
        response = app.test_client().post("/api/entity", headers=ADMIN, json={
            "entities": [{"eClass": "Sample", "name": "beside the import"}]})
        assert response.status_code == 201, response.get_json()
        wait_for(lambda: _searchable(app, "beside") == {"beside the import"},
                 "the search lane to index the change while the import runs", timeout=30)
        seen = ticks[0]
        wait_for(lambda: ticks[0] > seen, "the upkeep lane to tick while the import runs")
        assert not released.is_set() and thread.is_alive()
    assert not thread.is_alive(), "every lane stopped"
    assert not alive(app), "a worker that stops removes its heartbeat"


def test_a_stalled_search_lane_lets_the_heartbeat_go_stale(
        fresh_app: Callable[..., Flask], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_upkeep, "DRAIN_STALLED", 0.5)
    app = fresh_app(initialised=True)  # the worker records itself in worker_process
    draining, released = threading.Event(), threading.Event()
    ticks = [0]

    def stalled_drain() -> bool:
        draining.set()
        released.wait(timeout=120)
        return False

    def tick() -> bool:
        ticks[0] += 1
        return True

    pulse = search_upkeep.Pulse()
    stop = threading.Event()
    in_lanes = [Lane(SEARCH, [Upkeep("search queue", stalled_drain)], pulse),
                Lane(UPKEEP, [Upkeep("tick", tick)])]

    with lanes_running(app, in_lanes, stop, released) as thread:
        wait_for(draining.is_set, "the drain to stall")
        wait_for(lambda: not alive(app), "the heartbeat of a stalled drain to go stale",
                 timeout=30)
        seen = ticks[0]
        wait_for(lambda: ticks[0] > seen, "the other lane to go on", timeout=30)
        released.set()
        wait_for(lambda: alive(app), "the heartbeat once the drain goes on", timeout=30)
    assert not thread.is_alive()


def test_a_lane_that_ends_stops_the_worker(worker_app: Flask,
                                           caplog: pytest.LogCaptureFixture) -> None:
    app = worker_app
    stop = threading.Event()

    def broken() -> bool:
        raise KeyboardInterrupt  # not an Exception: no job's failure, the lane ends

    with app.app_context(), pytest.raises(LaneEnded, match="worker lanes ended: imports"):
        run(stop, in_lanes=[Lane(IMPORTS, [Upkeep("broken", broken)]),
                            Lane(UPKEEP, [Upkeep("idle", lambda: False)])])
    assert stop.is_set()
    assert "worker lane imports ended; the worker stops" in caplog.text
