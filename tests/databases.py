"""Brand-new databases for the test suite and the benchmarks (``bench/harness.py``).

The backend comes from ``LABAPP_TEST_BACKEND`` (``sqlite``, the default, or ``postgresql``)
and the PostgreSQL server from ``LABAPP_TEST_POSTGRES_URL``; both are variables of the test
suite, not application settings. Imports nothing of pytest, so the benchmarks can use it.
"""
from __future__ import annotations

import os
import secrets
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

BACKENDS = ("sqlite", "postgresql")
BACKEND = os.environ.get("LABAPP_TEST_BACKEND", "sqlite")
POSTGRES_URL = os.environ.get("LABAPP_TEST_POSTGRES_URL",
                              "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def _server_dsn() -> str:
    url = make_url(POSTGRES_URL)
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@contextmanager
def new_database(directory: Path, backend: str = BACKEND, prefix: str = "labapp_test",
                 template: str | None = None, durable: bool = False) -> Iterator[str]:
    """The URL of a brand-new database of ``backend``: an SQLite file in ``directory``, or a
    PostgreSQL database ``<prefix>_<random>`` on the server of ``LABAPP_TEST_POSTGRES_URL``,
    dropped afterwards. Empty, or a copy of the database at the URL ``template`` (of the same
    backend, with no open connection: PostgreSQL copies only an idle template).

    A PostgreSQL database that is not ``durable`` commits without waiting for its write-ahead
    log to reach the disk (``synchronous_commit = off``): a crash of the server could lose its
    last commits, never leave it inconsistent, and a test's database is thrown away anyway.
    Each commit of the suite saved a disk flush (milliseconds on a virtual disk). The
    benchmarks ask for durable databases, as production runs."""
    if backend not in BACKENDS:
        raise RuntimeError(f"LABAPP_TEST_BACKEND must be sqlite or postgresql, not {backend!r}")
    if backend == "sqlite":
        target = directory / "labapp.db"
        if template is not None:
            directory.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(sqlite_file(template), target)
        yield f"sqlite:///{target}"
        return
    name = f"{prefix}_{secrets.token_hex(6)}"
    copying = "" if template is None else f' TEMPLATE "{make_url(template).database}"'
    with psycopg.connect(_server_dsn(), autocommit=True) as server:
        server.execute(f'CREATE DATABASE "{name}"{copying}')
        if not durable:
            server.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    try:
        yield make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(_server_dsn(), autocommit=True) as server:
            server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def sqlite_file(url: str) -> Path:
    """The file of the SQLite database at ``url``."""
    database = make_url(url).database
    if not database:
        raise RuntimeError(f"{url!r} names no SQLite file")
    return Path(database)


def settle(url: str) -> None:
    """Make the idle database at ``url`` whole in one file, ready to be copied: SQLite moves
    its write-ahead log into the main file; a PostgreSQL database is one already."""
    if make_url(url).get_backend_name() != "sqlite":
        return
    with sqlite3.connect(sqlite_file(url)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
