"""Rate limits hold across processes (issue 36 §4): the buckets live where every worker and
host sees them — the database on PostgreSQL, a file of the instance folder on SQLite — and
one atomic statement charges each request, so concurrent requests through several
processes are allowed exactly the quota."""
from __future__ import annotations

import secrets
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from flask import Flask

from bench.server import request
from labapp.db import sqlite_path
from tests.conftest import (
    ADMIN_PASSWORD,
    BACKEND,
    PASSWORD,
    basic_header,
    bearer_header,
    build_app,
    dispose,
)
from tests.helpers.processes import served
from tests.helpers.ratelimits import fields_of

# A window so long that nothing refills while a test runs: the quota is all there is.
HOUR = {"RATE_LIMIT_WINDOW_SECONDS": 3600, "RATE_LIMIT_PER_USER": 0,
        "RATE_LIMIT_PER_ADDRESS": 0}


def new_pat(app: Flask, username: str) -> dict[str, str]:
    """Basic ``username:PAT…`` for a new user ``username`` and token, made in ``app``."""
    client = app.test_client()
    admin = basic_header("admin", ADMIN_PASSWORD)
    made = client.post("/api/entity", headers=admin, json={"entities": [{
        "eClass": "User", "id": username, "name": username, "password": PASSWORD}]})
    assert made.status_code == 201, made.get_json()
    tokens = client.post("/api/auth/login", json={"username": username, "password": PASSWORD})
    created = client.post("/api/user/pat", json={"name": "script"},
                          headers=bearer_header(tokens.get_json()["accessToken"]))
    assert created.status_code == 201, created.get_json()
    return basic_header(username, created.get_json()["value"])


def test_two_applications_share_the_buckets(fresh_app: Callable[..., Flask],
                                            tmp_path: Path) -> None:
    """Two workers of one host (SQLite: one instance folder) or two hosts (PostgreSQL: one
    database, instance folders of their own), taking turns: one quota for both."""
    first = fresh_app(initialised=True, **HOUR, RATE_LIMIT_PER_TOKEN=5)
    settings = first.config["LABAPP"]
    instance = Path(settings["INSTANCE_PATH"])
    if BACKEND == "postgresql":
        instance = tmp_path / "host-b"
        instance.mkdir()
    second = build_app(instance, settings["DATABASE_URL"], **HOUR, RATE_LIMIT_PER_TOKEN=5)
    try:
        headers = new_pat(first, f"rl{secrets.token_hex(4)}")
        clients = [first.test_client(), second.test_client()]
        statuses = [clients[turn % 2].get("/api/user/pat", headers=headers).status_code
                    for turn in range(8)]
    finally:
        dispose(second)
    assert statuses == [200] * 5 + [429] * 3


def test_concurrent_requests_through_two_gunicorn_workers_get_exactly_the_quota(
        fresh_app: Callable[..., Flask]) -> None:
    quota, threads, each = 20, 8, 6
    app = fresh_app(initialised=True, **HOUR, RATE_LIMIT_PER_TOKEN=quota)
    headers = new_pat(app, f"rl{secrets.token_hex(4)}")
    statuses: list[int] = []
    lock = threading.Lock()
    with served(app, workers=2) as (server, _process):
        start = threading.Barrier(threads)

        def hammer() -> None:
            connection = server.connection()
            try:
                start.wait()
                for _ in range(each):
                    status, _body = request(connection, "GET", "/api/user/pat", headers)
                    with lock:
                        statuses.append(status)
            finally:
                connection.close()

        workers = [threading.Thread(target=hammer) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert sorted(statuses) == [200] * quota + [429] * (threads * each - quota)


@pytest.mark.skipif(BACKEND != "sqlite", reason="the SQLite buckets' file of their own")
def test_counting_never_waits_for_the_main_database_s_write_lock(
        fresh_app: Callable[..., Flask]) -> None:
    """On SQLite the buckets are a file of their own: while another process holds the main
    database's one write lock (an import committing, say), reads are still counted and
    answered at once."""
    app = fresh_app(initialised=True, **HOUR, RATE_LIMIT_PER_TOKEN=100)
    headers = new_pat(app, f"rl{secrets.token_hex(4)}")
    client = app.test_client()
    assert client.get("/api/user/pat", headers=headers).status_code == 200  # last use noted
    database = sqlite_path(app.config["LABAPP"]["DATABASE_URL"])
    assert database is not None
    writer = sqlite3.connect(database, timeout=0, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        answers = [client.get("/api/user/pat", headers=headers) for _ in range(3)]
        writer.execute("ROLLBACK")
    finally:
        writer.close()
    # Had counting needed the lock, each would have waited the busy timeout and answered
    # 503 database_busy.
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert [fields_of(answer.headers).state["token"]["r"] for answer in answers] == [
        98, 97, 96]
