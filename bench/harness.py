"""A fresh application and database per backend, users and tokens, the data, timing helpers.

The database is made by the test suite's own function (``tests/databases.py``): a temporary
SQLite file, or a new ``labapp_bench_<hex>`` PostgreSQL database on the server of
``LABAPP_TEST_POSTGRES_URL`` that is dropped afterwards, brought up with the real
``flask init``.
"""
from __future__ import annotations

import secrets
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.engine import Engine

from labapp import create_app
from labapp.db import db, transaction
from labapp.users.service import create_user
from tests.databases import new_database

ADMIN_PASSWORD = "admin-password-for-the-benchmark"
READER = "bench-reader"
READER_PASSWORD = "reader-password-for-the-benchmark"
BATCH = 500


@dataclass
class Bench:
    """One backend's application, its test client and the tokens of the two callers.

    API requests run without an application context of the caller's, so that each request
    gets its own (and its own database session, closed at the end), as in production. The
    Core baseline uses ``engine`` directly.
    """

    backend: str
    app: Flask
    client: FlaskClient
    admin_headers: dict[str, str]
    reader_headers: dict[str, str]
    department: str  # the department every seeded entity belongs to (the reader's)
    engine: Engine


def _login(client: FlaskClient, username: str, password: str) -> dict[str, str]:
    response = client.post("/api/auth/login", json={"username": username, "password": password})
    if response.status_code != 200:
        raise RuntimeError(f"login of {username} failed: {response.get_json()}")
    client.delete_cookie("labapp_session")
    return {"Authorization": f"Bearer {response.get_json()['accessToken']}"}


@contextmanager
def open_bench(backend: str, settings: dict[str, Any] | None = None) -> Iterator[Bench]:
    """A fresh app on a fresh database: ``init``, a department, its reader, two tokens;
    ``settings`` are further settings of the app (e.g. ``{"SEARCH_BACKEND": "postgresql"}``)."""
    with tempfile.TemporaryDirectory(prefix="labapp-bench-") as tmp:
        instance = Path(tmp) / "instance"
        with new_database(instance, backend, prefix="labapp_bench", durable=True) as url:
            app = create_app({"INSTANCE_PATH": str(instance), "DATABASE_URL": url,
                              "SECRET_KEY": secrets.token_hex(32),
                              "ADMIN_PASSWORD": ADMIN_PASSWORD, **(settings or {})})
            try:
                result = app.test_cli_runner().invoke(args=["init"])
                if result.exit_code != 0:
                    raise RuntimeError(f"flask init failed:\n{result.output}")
                client = app.test_client()
                admin = _login(client, "admin", ADMIN_PASSWORD)
                created = client.post("/api/entity", headers=admin, json={
                    "entities": [{"eClass": "Department", "name": "Benchmark"}]})
                if created.status_code != 201:
                    raise RuntimeError(f"department not created: {created.get_json()}")
                department = created.get_json()["entities"][0]["id"]
                with app.app_context(), transaction():
                    create_user(username=READER, name="Benchmark reader",
                                department_id=department, password=READER_PASSWORD,
                                created_by="admin")
                reader = _login(client, READER, READER_PASSWORD)
                with app.app_context():
                    engine = db.engine
                yield Bench(backend, app, client, admin, reader, department, engine)
            finally:
                with app.app_context():
                    db.session.remove()
                    db.engine.dispose()


def fresh_tokens(bench: Bench) -> None:
    """Sign both callers in again: a part that starts after a long build (seeding and
    rebuilding 10^6 took longer than an access token lives) needs tokens of its own."""
    bench.admin_headers = _login(bench.client, "admin", ADMIN_PASSWORD)
    bench.reader_headers = _login(bench.client, READER, READER_PASSWORD)


# --- the data ------------------------------------------------------------------------------
# Every seeded Sample belongs to the reader's department. Names start with "S" except one in
# 50, amounts are above 10 except one in 50 (other rows), so the benchmark filter
# ``amount gt 10 and startswith(name,'S')`` matches 96% of the rows; names are a permutation
# of the row number, so name order is not insertion order.

def sample_values(number: int) -> dict[str, Any]:
    """The properties of seeded sample ``number`` (0-based), as the API receives them."""
    letter = "T" if number % 50 == 7 else "S"
    amount = 5.0 if number % 50 == 31 else 10.5 + (number * 37) % 990 / 10
    return {"name": f"{letter}-{(number * 48271) % 1_000_003:07d}",
            "amount": amount, "unit": "mL",
            "attributes": {"conc": round(0.1 + (number % 97) / 10, 2),
                           "batch": f"B{number // 500:04d}"}}


def matching(count: int) -> int:
    """How many of the first ``count`` samples the benchmark filter matches."""
    return sum(1 for n in range(count) if n % 50 not in (7, 31))


# --- timing --------------------------------------------------------------------------------

def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    """``(seconds, result)`` of one call."""
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def median(values: list[float]) -> float:
    return statistics.median(values)


class ApiVersusCore:
    """Mixin of a measurement holding ``api_runs`` and ``core_runs`` (seconds): medians and
    their ratio."""

    api_runs: list[float]
    core_runs: list[float]

    @property
    def api(self) -> float:
        return median(self.api_runs)

    @property
    def core(self) -> float:
        return median(self.core_runs)

    @property
    def ratio(self) -> float:
        return self.api / self.core
