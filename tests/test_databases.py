"""``tests/databases.py``: the one way the suite and the benchmarks make a new database."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from flask import Flask
from sqlalchemy.engine import make_url

import bench.harness
from tests import conftest, databases
from tests.databases import BACKEND, new_database


def test_the_benchmarks_and_the_suite_share_one_function() -> None:
    assert conftest.new_database is databases.new_database
    assert bench.harness.new_database is databases.new_database


def test_an_unknown_backend_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="sqlite or postgresql"):
        with new_database(tmp_path, "oracle"):
            pass


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _exists(name: str) -> bool:
    with psycopg.connect(_dsn(databases.POSTGRES_URL), autocommit=True) as server:
        return server.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                              (name,)).fetchone() is not None


def test_a_new_database_is_fresh_and_goes_away(tmp_path: Path) -> None:
    if BACKEND == "sqlite":
        with new_database(tmp_path) as url:
            assert url == f"sqlite:///{tmp_path / 'labapp.db'}"
        return
    with new_database(tmp_path, prefix="labapp_probe") as url:
        name = make_url(url).database
        assert name.startswith("labapp_probe_")
        assert _exists(name)
        with psycopg.connect(_dsn(url)) as connection:
            assert connection.execute("SELECT count(*) FROM pg_tables WHERE schemaname = "
                                      "'public'").fetchone() == (0,)
    assert not _exists(name)


@pytest.mark.skipif(BACKEND != "postgresql", reason="PostgreSQL's commit setting")
def test_a_test_database_commits_without_a_flush_and_a_benchmark_one_with(
        tmp_path: Path) -> None:
    for durable, expected in ((False, "off"), (True, "on")):
        with new_database(tmp_path, prefix="labapp_probe", durable=durable) as url:
            with psycopg.connect(_dsn(url)) as connection:
                assert connection.execute("SHOW synchronous_commit").fetchone() == (expected,)


def test_a_test_on_the_shared_application_cannot_make_one_of_its_own(
        app: Flask, fresh_app: Callable[..., Flask]) -> None:
    """Here ``db.session`` is the shared database's rolled-back connection: a new application
    (and the process's template, were this the first test to ask for it) would write there,
    leaving its own database without flask init's admin and department. CI lost 63 tests of
    one worker to that when such a test happened to build the template."""
    with pytest.raises(pytest.UsageError, match="shared application"):
        fresh_app(initialised=True)
    with pytest.raises(pytest.UsageError, match="shared application"):
        fresh_app()
