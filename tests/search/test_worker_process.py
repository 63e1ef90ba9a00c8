"""The worker process (``flask --app labapp worker``) as the search index sees it: requests
only queue their changes while it runs, it makes them searchable (how soon is measured in
``bench/search.py``), and without a live worker the requests drain inline again.
``search worker``, its old name, still runs it."""
from __future__ import annotations

import os
import signal

from flask import Flask
from sqlalchemy import select

from labapp.db import db
from labapp.model import EntityCountChange, SearchQueue
from tests.helpers.processes import (
    alive,
    post,
    searched,
    served,
    wait_for,
    worker_beating,
    worker_process,
)
from tests.helpers.searching import client_found, client_post


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


def test_gunicorn_requests_are_indexed_by_the_worker(
        served_app: Flask) -> None:
    with worker_process(served_app), served(served_app, workers=2) as (server, _gunicorn):
        for batch in range(3):
            names = [f"worked b{batch} i{item}" for item in range(50)]
            assert post(server, [{"eClass": "Sample", "name": name} for name in names]) == 201
            term = f"b{batch}"
            wait_for(lambda names=names, term=term: set(names) <= searched(server, term),
                     f"batch {batch} searchable")
    assert queued(served_app) == []


def test_while_a_worker_beats_requests_only_queue_and_it_indexes_them(
        served_app: Flask) -> None:
    with worker_beating(served_app):  # a worker's heartbeat, before the worker starts
        client_post(served_app, "handed over")
    assert queued(served_app), "the request must leave its change to the worker"
    assert client_found(served_app, "handed") == set()

    with worker_process(served_app, ("search", "worker")) as process:  # the old name
        wait_for(lambda: client_found(served_app, "handed") == {"handed over"},
                 "the worker to index the queued change")
        wait_for(lambda: tally_changes(served_app) == 0,
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
