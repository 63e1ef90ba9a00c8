"""``/healthz``: no authentication; 200 only when the database answers at the current schema,
``degraded`` (still 200) while imports wait and no worker runs to take them."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import update

from labapp import liveness
from labapp.db import db, transaction
from labapp.model import ImportJob
from tests.helpers.processes import held_lock, killed
from tests.imports.uploading import queue_job


def test_healthy_when_initialised(client: FlaskClient) -> None:
    response = client.get("/healthz")

    assert response.status_code == 200
    body = response.get_json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"
    assert body["schema"] == "up to date"
    assert body["revision"] == body["expected"] and body["revision"]


def test_unavailable_until_the_schema_is_created(fresh_app: Callable[..., Flask]) -> None:
    response = fresh_app().test_client().get("/healthz")

    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "unavailable"
    assert body["database"] == "ok"
    assert body["schema"] == "needs upgrade"
    assert body["revision"] == [] and body["expected"]


def test_the_migration_scripts_are_read_once(client: FlaskClient,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Reading every migration script cost most of the check's time, on every call.
    reads: list[str] = []
    original = ScriptDirectory.from_config

    def counted(config: Config) -> ScriptDirectory:
        reads.append(config.get_main_option("script_location"))
        return original(config)

    monkeypatch.setattr(ScriptDirectory, "from_config", counted)

    answers = [client.get("/healthz") for _ in range(5)]

    assert [answer.status_code for answer in answers] == [200] * 5
    assert len(reads) <= 1


def test_degraded_while_imports_wait_and_no_worker_runs(
        fresh_app: Callable[..., Flask]) -> None:
    app = fresh_app(initialised=True)
    client = app.test_client()
    idle = client.get("/healthz")
    assert idle.status_code == 200 and idle.get_json()["status"] == "ok"
    assert idle.get_json()["worker"] == "ok", "nothing waits: no worker is needed"

    first, second = queue_job(app), queue_job(app)
    waiting = client.get("/healthz")
    assert waiting.status_code == 200, "the site serves; some work waits"
    assert waiting.get_json()["status"] == "degraded"
    assert waiting.get_json()["worker"] == (
        "2 imports wait and no worker is running; start one with `flask --app labapp worker`.")
    with app.app_context(), liveness.holding():
        served = client.get("/healthz").get_json()
        assert served["status"] == "ok" and served["worker"] == "ok"

    # A job whose worker was killed waits as well, for a worker to record it.
    with held_lock(app) as (dead, process):
        with app.app_context(), transaction():
            db.session.execute(update(ImportJob).where(ImportJob.id == first).values(
                status="running", worker=dead))
            db.session.execute(update(ImportJob).where(ImportJob.id == second).values(
                status="done"))
        assert client.get("/healthz").get_json()["status"] == "ok", "its worker runs"
        killed(process)
    stranded = client.get("/healthz").get_json()
    assert stranded["status"] == "degraded" and stranded["worker"].startswith("1 import waits")
