"""One code, two logins at the same moment over real HTTP (a threaded server, as gunicorn's
gthread serves it): exactly one opens a session, whichever request the database serves first.
The step of an accepted code is claimed by one conditional UPDATE, so no worker, thread or
host accepts it twice."""
from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import requests
from flask import Flask

from labapp.db import transaction
from labapp.users.service import create_user
from tests.auth.checks import sessions_of
from tests.auth.factors import code, enrol
from tests.conftest import DEFAULT_DEPARTMENT, PASSWORD, serving

RACERS = 2


def test_a_code_sent_twice_at_once_logs_in_once(fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app(initialised=True)
    with app.app_context(), transaction():
        create_user(username="alice", name="Alice", department_id=DEFAULT_DEPARTMENT,
                    password=PASSWORD, created_by="admin")
    secret, _ = enrol(app, "alice")
    used = code(secret)
    start = threading.Barrier(RACERS)

    with serving(app) as base_url:
        def attempt(_: int) -> int:
            start.wait(timeout=30)
            return requests.post(f"{base_url}/api/auth/login", timeout=30, json={
                "username": "alice", "password": PASSWORD, "code": used}).status_code

        with ThreadPoolExecutor(RACERS) as pool:
            statuses = sorted(pool.map(attempt, range(RACERS)))
    assert statuses == [200, 401]
    assert len(sessions_of(app, "alice")) == 1
