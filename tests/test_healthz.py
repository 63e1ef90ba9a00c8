"""``/healthz``: no authentication; 200 only when the database answers at the current schema."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from flask import Flask
from flask.testing import FlaskClient


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
