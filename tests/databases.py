"""Brand-new databases for the test suite and the benchmarks (``bench/harness.py``).

The backend comes from ``LABAPP_TEST_BACKEND`` (``sqlite``, the default, or ``postgresql``)
and the PostgreSQL server from ``LABAPP_TEST_POSTGRES_URL``; both are variables of the test
suite, not application settings. Imports nothing of pytest, so the benchmarks can use it.
"""
from __future__ import annotations

import os
import secrets
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
def new_database(directory: Path, backend: str = BACKEND,
                 prefix: str = "labapp_test") -> Iterator[str]:
    """The URL of a brand-new, empty database of ``backend``: an SQLite file in
    ``directory``, or a PostgreSQL database ``<prefix>_<random>`` on the server of
    ``LABAPP_TEST_POSTGRES_URL``, dropped afterwards."""
    if backend not in BACKENDS:
        raise RuntimeError(f"LABAPP_TEST_BACKEND must be sqlite or postgresql, not {backend!r}")
    if backend == "sqlite":
        yield f"sqlite:///{directory / 'labapp.db'}"
        return
    name = f"{prefix}_{secrets.token_hex(6)}"
    with psycopg.connect(_server_dsn(), autocommit=True) as server:
        server.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(_server_dsn(), autocommit=True) as server:
            server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
