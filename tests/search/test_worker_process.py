"""The worker process (``flask --app labapp worker``) as the search index sees it: requests
only queue their changes while it runs, it makes them searchable within 2 s, and without a
live worker the requests drain inline again. ``search worker``, its old name, still runs it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flask import Flask
from sqlalchemy import select

from labapp.db import db
from labapp.model import EntityCountChange, SearchQueue
from labapp.search.indexer import beat, heartbeat_path, worker_alive
from tests.conftest import SECRET_KEY
from tests.search.test_workers import ADMIN, ROOT, post, searched, served, wait_for

FRESH = 2.0  # seconds: the freshness target


@contextmanager
def worker_process(app: Flask, command: tuple[str, ...] = ("worker",),
                   **overrides: str) -> Iterator[subprocess.Popen]:
    """``flask --app labapp worker`` (or ``command``) on ``app``'s database and instance,
    with the settings ``overrides`` (``ALERT_TICK_SECONDS="1"``), once its heartbeat is
    up."""
    settings = app.config["LABAPP"]
    env = {**os.environ, "LABAPP_INSTANCE_PATH": settings["INSTANCE_PATH"],
           "LABAPP_DATABASE_URL": settings["DATABASE_URL"], "LABAPP_SECRET_KEY": SECRET_KEY,
           **{f"LABAPP_{name}": value for name, value in overrides.items()}}
    process = subprocess.Popen([sys.executable, "-m", "flask", "--app", "labapp", *command],
                               env=env, cwd=ROOT, start_new_session=True,
                               stdout=subprocess.DEVNULL)
    try:
        wait_for(lambda: beating(app) == str(process.pid) or process.poll() is not None,
                 "the worker's heartbeat")
        assert process.poll() is None, "the worker exited"
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def beating(app: Flask) -> str | None:
    """The pid in the heartbeat file, if any."""
    with app.app_context():
        path = heartbeat_path()
    try:
        return path.read_text()
    except OSError:
        return None


def alive(app: Flask) -> bool:
    with app.app_context():
        return worker_alive()


def queued(app: Flask) -> list[str]:
    with app.app_context():
        try:
            return list(db.session.scalars(select(SearchQueue.entity_id)))
        finally:
            db.session.remove()


def tally_changes(app: Flask) -> int:
    """Entity tally changes not folded yet."""
    with app.app_context():
        try:
            return len(db.session.scalars(select(EntityCountChange.id)).all())
        finally:
            db.session.remove()


def client_post(app: Flask, name: str) -> None:
    response = app.test_client().post("/api/entity", headers=ADMIN, json={
        "entities": [{"eClass": "Sample", "name": name}]})
    assert response.status_code == 201, response.get_json()


def client_found(app: Flask, term: str) -> set[str]:
    response = app.test_client().get(f"/api/search/fulltext/{term}?$top=500", headers=ADMIN)
    assert response.status_code == 200, response.get_json()
    return {item["name"] for item in response.get_json()["data"]}


def within(seconds: float, condition: Any, what: str) -> float:
    """Wait for ``condition``; fail unless it holds within ``seconds``; the time taken."""
    start = time.monotonic()
    wait_for(condition, what, timeout=seconds)
    return time.monotonic() - start


def test_gunicorn_requests_are_indexed_by_the_worker_within_two_seconds(
        served_app: Flask) -> None:
    with worker_process(served_app), served(served_app, workers=2) as (server, _gunicorn):
        for batch in range(3):
            names = [f"worked b{batch} i{item}" for item in range(50)]
            assert post(server, [{"eClass": "Sample", "name": name} for name in names]) == 201
            term = f"b{batch}"
            within(FRESH, lambda names=names, term=term: set(names) <= searched(server, term),
                   f"batch {batch} searchable")
    assert queued(served_app) == []


def test_while_a_worker_beats_requests_only_queue_and_it_indexes_them(
        served_app: Flask) -> None:
    with served_app.app_context():
        beat(heartbeat_path())  # a worker's heartbeat, before the worker itself starts
    client_post(served_app, "handed over")
    assert queued(served_app), "the request must leave its change to the worker"
    assert client_found(served_app, "handed") == set()

    with worker_process(served_app, ("search", "worker")) as process:  # the old name
        within(FRESH, lambda: client_found(served_app, "handed") == {"handed over"},
               "the worker to index the queued change")
        within(FRESH, lambda: tally_changes(served_app) == 0,
               "the worker to fold the entity tallies")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    assert not alive(served_app), "a worker that stops removes its heartbeat"

    client_post(served_app, "inline again")  # no worker: the request drains itself
    assert client_found(served_app, "inline") == {"inline again"}
    assert queued(served_app) == []


def test_a_killed_worker_lets_requests_drain_inline_again(served_app: Flask) -> None:
    with worker_process(served_app) as process:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        wait_for(lambda: not alive(served_app), "the dead worker's heartbeat to go stale",
                 timeout=10)
    client_post(served_app, "after the crash")
    assert client_found(served_app, "crash") == {"after the crash"}
    assert queued(served_app) == []
