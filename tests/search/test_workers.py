"""Real gunicorn workers: a worker killed between its commit and the indexing loses nothing
(the next start drains the queue), and concurrent workers never fail on the index lock."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select
from whoosh import index as whoosh_index

from bench.server import Server, basic, free_port, request
from labapp.db import db
from labapp.model import Entity, SearchQueue
from labapp.search.indexer import index_path
from tests.conftest import ADMIN_PASSWORD, SECRET_KEY

ROOT = Path(__file__).resolve().parents[2]
ADMIN = basic("admin", ADMIN_PASSWORD)


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    """Poll ``condition`` until it returns something true; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)  # polling a condition another process brings about
    raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def served(app: Flask, workers: int) -> Iterator[tuple[Server, subprocess.Popen]]:
    """gunicorn serving ``app``'s database and instance in a process group of its own."""
    settings = app.config["LABAPP"]
    port = free_port()
    env = {**os.environ, "LABAPP_INSTANCE_PATH": settings["INSTANCE_PATH"],
           "LABAPP_DATABASE_URL": settings["DATABASE_URL"], "LABAPP_SECRET_KEY": SECRET_KEY,
           "LABAPP_SEARCH_WRITER_TIMEOUT": "120"}
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers",
         str(workers), "--timeout", "300", "--log-level", "warning", "labapp:create_app()"],
        env=env, cwd=ROOT, start_new_session=True)
    server = Server("127.0.0.1", port)

    def healthy() -> bool:
        connection = server.connection()
        try:
            return request(connection, "GET", "/healthz")[0] == 200
        except OSError:
            return process.poll() is not None and pytest.fail("gunicorn exited")
        finally:
            connection.close()

    try:
        wait_for(healthy, "gunicorn to answer")
        yield server, process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)


def call(server: Server, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One request as the administrator on a connection of its own, closed afterwards."""
    connection = server.connection()
    try:
        status, raw = request(connection, method, path, ADMIN, body)
    finally:
        connection.close()
    return status, json.loads(raw)


def post(server: Server, entities: list[dict[str, Any]]) -> int:
    return call(server, "POST", "/api/entity", {"entities": entities})[0]


def searched(server: Server, term: str) -> set[str]:
    status, body = call(server, "GET", f"/api/search/fulltext/{term}?$top=500")
    assert status == 200, body
    return {item["name"] for item in body["data"]}


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
