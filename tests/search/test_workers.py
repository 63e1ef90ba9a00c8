"""Real gunicorn workers: a worker killed between its commit and the indexing loses nothing
(the next start drains the queue), and concurrent workers never fail on the index lock."""
from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

from flask import Flask
from sqlalchemy import select
from whoosh import index as whoosh_index

from bench.server import Server
from labapp.db import db
from labapp.model import Entity, SearchQueue
from labapp.search.indexer import index_path
from tests.helpers.processes import call, post, searched, served, wait_for


def test_a_worker_killed_between_commit_and_indexing_loses_nothing(served_app: Flask) -> None:
    with served_app.app_context():
        path = index_path()
    held = whoosh_index.open_dir(str(path)).writer()  # the worker's drain will wait on it
    try:
        with served(served_app, workers=1) as (server, process):
            poster = threading.Thread(
                target=lambda: _swallow(post, server, [{"eClass": "Sample",
                                                        "name": "survivor"}]),
                daemon=True)
            poster.start()

            def committed() -> bool:
                with served_app.app_context():
                    try:
                        return bool(db.session.scalar(
                            select(Entity.id).where(Entity.name == "survivor")))
                    finally:
                        db.session.remove()

            wait_for(committed, "the entity's commit")
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
            poster.join(timeout=60)
    finally:
        held.cancel()

    with served_app.app_context():
        waiting = list(db.session.scalars(select(SearchQueue.entity_id)))
        db.session.remove()
    assert waiting, "the change's queue row must survive the kill"

    with served(served_app, workers=1) as (server, _process):
        assert searched(server, "survivor") == {"survivor"}
    with served_app.app_context():
        assert db.session.scalars(select(SearchQueue.id)).all() == []
        db.session.remove()


def _swallow(call: Callable[..., Any], *args: Any) -> None:
    """Run ``call``; its connection dies with the killed worker, which is the point."""
    try:
        call(*args)
    except OSError:
        pass


def test_concurrent_workers_index_everything(served_app: Flask) -> None:
    statuses: list[int] = []

    def client(number: int, server: Server) -> None:
        for batch in range(4):
            statuses.append(post(server, [
                {"eClass": "Sample", "name": f"parallel c{number} b{batch} i{item}"}
                for item in range(25)]))

    with served(served_app, workers=2) as (server, _process):
        threads = [threading.Thread(target=client, args=(number, server))
                   for number in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert statuses == [201] * 24
        status, body = call(server, "GET", "/api/search/fulltext/parallel?$top=1")
        assert (status, body["total"]) == (200, 600)
