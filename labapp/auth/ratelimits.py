"""API rate limits: buckets per token, per user and per client address, charged with one
atomic statement per request where every worker and host sees them
(docs/decisions/rate-limits.md).

Each bucket follows the generic cell rate algorithm (GCRA): a policy of ``quota`` requests
per ``window`` seconds makes one request cost ``window / quota`` (its *emission*) and lets a
bucket hold ``window`` of them (its *capacity*, a burst of ``quota`` requests at once). A
bucket is one row holding its *theoretical arrival time* (TAT): a request at ``now`` fits
when ``max(tat, now) + emission <= now + capacity``, and then moves the TAT to
``max(tat, now) + emission``; a refused request leaves it. A TAT in the past is a full
bucket, the same as no row, so such rows are pruned.

The statement — ``INSERT … ON CONFLICT DO UPDATE … RETURNING`` over the request's buckets,
the same SQL on both databases — runs on a connection of its own in autocommit, outside the
request's unit of work: one round trip, never the unit's write lock, and a refused request's
rollback cannot undo it.
On PostgreSQL the buckets are a table of the main database (several hosts share it); on
SQLite, a single host by definition (decisions §17), they are a small SQLite file of their
own in the instance folder (WAL, shared by the host's worker processes), so no request
ever waits for the main database's write lock to count itself.
"""
from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask, current_app
from sqlalchemy import Engine, create_engine, delete, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import CreateTable

from labapp.db import create_sqlite_file, table_of
from labapp.model import RateLimitBucket

NANOSECONDS = 1_000_000_000
# The file of an SQLite install's buckets, in its instance folder.
SQLITE_FILE = "ratelimits.db"
# Seconds between two prunings of full buckets by one process.
PRUNE_EVERY = 600
_EXTENSION = "labapp.auth.ratelimits"
_TABLE = table_of(RateLimitBucket)

Clock = Callable[[], int]


@dataclass(frozen=True)
class Policy:
    """``quota`` requests per ``window`` seconds for each bucket named ``name`` (``token``,
    ``user`` or ``address``)."""

    name: str
    quota: int
    window: int

    @property
    def capacity(self) -> int:
        """What a bucket holds, in nanoseconds: the window."""
        return self.window * NANOSECONDS

    @property
    def emission(self) -> int:
        """What one request costs, in nanoseconds (rounded down, so a full bucket always
        takes ``quota`` requests at once)."""
        return self.capacity // self.quota


@dataclass(frozen=True)
class Charge:
    """One bucket a request is counted in: its policy and its key (``pat:<id>``,
    ``login:<id>``, ``user:<id>``, ``address:<ip>``)."""

    policy: Policy
    key: str


@dataclass(frozen=True)
class Budget:
    """A bucket after a request: whether the request fitted, the requests left now, the
    seconds until the bucket is full again (until one more request fits when none does),
    and the seconds until one more request fits (0 when one does now)."""

    policy: Policy
    allowed: bool
    remaining: int
    reset: int
    retry_after: int


@dataclass(frozen=True)
class Outcome:
    """What one request's charge left in each of its buckets (none: no limit applies)."""

    budgets: tuple[Budget, ...] = ()

    @property
    def allowed(self) -> bool:
        return all(budget.allowed for budget in self.budgets)

    @property
    def retry_after(self) -> int:
        """Seconds until the request would fit in every bucket it was refused by."""
        return max((budget.retry_after for budget in self.budgets if not budget.allowed),
                   default=0)


def _budget(policy: Policy, tat: int, allowed: bool, now: int) -> Budget:
    """The budget of a bucket whose TAT is ``tat`` at ``now``."""
    remaining = max(0, (now + policy.capacity - tat) // policy.emission) if allowed else 0
    next_fits = max(0, tat + policy.emission - policy.capacity - now)
    retry_after = math.ceil(next_fits / NANOSECONDS)
    reset = math.ceil(max(0, tat - now) / NANOSECONDS) if remaining else max(1, retry_after)
    return Budget(policy, allowed, remaining, reset, retry_after)


class Limiter:
    """The buckets of one application: where they are kept and the clock they are charged
    by (``clock``: nanoseconds since the epoch; tests set their own)."""

    def __init__(self, database_url: str, instance_path: Path, busy_timeout_ms: int) -> None:
        self.clock: Clock = time.time_ns
        self._database_url = database_url
        self._instance_path = instance_path
        self._busy_timeout_ms = busy_timeout_ms
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self._pruned_at = 0

    @property
    def engine(self) -> Engine:
        """The engine the buckets are charged through, made on first use: autocommit, no
        ping on checkout (a connection a restart dropped is retried once instead)."""
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    self._engine = self._make_engine()
        return self._engine

    def _make_engine(self) -> Engine:
        if make_url(self._database_url).get_backend_name() == "postgresql":
            # A bucket need not survive a crash (lost, it is full again), so its commit does
            # not wait for the WAL's flush to disk: that wait was most of a charge's time.
            return create_engine(self._database_url, isolation_level="AUTOCOMMIT",
                                 pool_size=2, max_overflow=18,
                                 connect_args={"options": "-c synchronous_commit=off"})
        path = self._instance_path / SQLITE_FILE
        if not path.exists():
            create_sqlite_file(path)
        engine = create_engine(f"sqlite:///{path}", isolation_level="AUTOCOMMIT")
        busy_timeout = int(self._busy_timeout_ms)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA busy_timeout={busy_timeout}")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        with engine.connect() as connection:
            connection.execute(CreateTable(_TABLE, if_not_exists=True))
        return engine

    def charge(self, charges: Sequence[Charge]) -> Outcome:
        """Count one request in each bucket of ``charges`` (one statement) and answer what
        is left. A bucket that refuses is not charged; one that fits is, even when another
        refuses the request (a refused request costs its caller's other buckets)."""
        if not charges:
            return Outcome()
        now = self.clock()
        ordered = sorted(charges, key=lambda charge: charge.key)  # one lock order for all
        named = "%({})s" if self.engine.dialect.name == "postgresql" else ":{}"
        sql, parameters = _charge_sql(named, len(ordered)), _charge_parameters(ordered, now)
        rows = {key: (tat, bool(allowed)) for key, tat, allowed in self._run(
            lambda connection: connection.exec_driver_sql(sql, parameters).all())}
        if now - self._pruned_at > PRUNE_EVERY * NANOSECONDS:
            self._pruned_at = now
            self.prune(now)
        return Outcome(tuple(_budget(charge.policy, *rows[charge.key], now)
                             for charge in charges))

    def prune(self, now: int | None = None) -> int:
        """Remove the buckets that are full again (their TAT has passed); how many."""
        moment = self.clock() if now is None else now
        removed: int = self._run(lambda connection: connection.execute(
            delete(_TABLE).where(_TABLE.c.tat < moment)).rowcount)
        return removed

    def _run(self, work: Callable[[Any], Any]) -> Any:
        try:
            with self.engine.connect() as connection:
                return work(connection)
        except DBAPIError as error:
            if not error.connection_invalidated:
                raise
        with self.engine.connect() as connection:
            return work(connection)

    def dispose(self) -> None:
        """Close every connection of the limiter's engine."""
        if self._engine is not None:
            self._engine.dispose()


@functools.cache
def _charge_sql(named: str, rows: int) -> str:
    """``INSERT … ON CONFLICT (key) DO UPDATE … RETURNING key, tat, allowed`` charging
    ``rows`` buckets at ``now``, in SQL both databases read alike; ``named`` is the driver's
    placeholder for a named parameter (``%({})s`` for psycopg, ``:{}`` for sqlite3).

    Written once per row count and run as it is: building and compiling the same statement
    with SQLAlchemy took most of a charge's time (bench/runs/2026-11-29-request-cost.md).
    """
    table = _TABLE.name

    def bind(name: str) -> str:
        return named.format(name)

    now = bind("now")
    values = ", ".join(
        f"({bind(f'key{row}')}, {now} + {bind(f'emission{row}')}, {bind(f'emission{row}')}, "
        f"{bind(f'capacity{row}')}, TRUE)" for row in range(rows))
    start = f"CASE WHEN {table}.tat > {now} THEN {table}.tat ELSE {now} END"
    fits = f"{start} + excluded.emission <= {now} + excluded.capacity"
    return (f"INSERT INTO {table} (key, tat, emission, capacity, allowed) VALUES {values} "
            f"ON CONFLICT (key) DO UPDATE SET "
            f"tat = CASE WHEN {fits} THEN {start} + excluded.emission ELSE {table}.tat END, "
            f"allowed = {fits}, emission = excluded.emission, capacity = excluded.capacity "
            f"RETURNING key, tat, allowed")


def _charge_parameters(charges: Sequence[Charge], now: int) -> dict[str, Any]:
    parameters: dict[str, Any] = {"now": now}
    for row, charge in enumerate(charges):
        parameters |= {f"key{row}": charge.key, f"emission{row}": charge.policy.emission,
                       f"capacity{row}": charge.policy.capacity}
    return parameters


def policies() -> dict[str, Policy]:
    """The policies in force, by name; a limit set to 0 has none."""
    settings = current_app.config["LABAPP"]
    window = settings["RATE_LIMIT_WINDOW_SECONDS"]
    quotas = {"token": settings["RATE_LIMIT_PER_TOKEN"], "user": settings["RATE_LIMIT_PER_USER"],
              "address": settings["RATE_LIMIT_PER_ADDRESS"]}
    return {name: Policy(name, quota, window) for name, quota in quotas.items() if quota}


def limiter(app: Flask | None = None) -> Limiter:
    """The limiter of ``app`` (default: the current application)."""
    found: Limiter = (app or current_app).extensions[_EXTENSION]
    return found


def init_app(app: Flask) -> None:
    """Give ``app`` its limiter (its engine is made on first use)."""
    settings = app.config["LABAPP"]
    app.extensions[_EXTENSION] = Limiter(settings["DATABASE_URL"],
                                         Path(settings["INSTANCE_PATH"]),
                                         settings["SQLITE_BUSY_TIMEOUT_MS"])
