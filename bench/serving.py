"""The application as ``make run`` serves it, for the benchmarks: the search indexer worker
beside the requests (it also gathers SQLite's planner statistics), and the seeded
search backlog dropped where a benchmark measures something else."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import delete, select, text

from bench.harness import Bench
from labapp.model import EntityCountChange, LocationCountChange, SearchQueue
from labapp.search import indexer


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)  # polling what another process brings about


def worker_alive(bench: Bench) -> bool:
    with bench.app.app_context():
        return indexer.worker_alive()


@contextmanager
def indexer_worker(bench: Bench, *, statistics: bool = True) -> Iterator[subprocess.Popen]:
    """``flask --app labapp search worker`` on the bench's database, as ``make run`` starts
    it beside gunicorn; ``statistics=False`` keeps it from gathering SQLite's planner
    statistics (a benchmark that pauses the worker must not catch it inside ``ANALYZE``,
    holding the write lock)."""
    settings = bench.app.config["LABAPP"]
    env = {**os.environ, "LABAPP_INSTANCE_PATH": settings["INSTANCE_PATH"],
           "LABAPP_DATABASE_URL": settings["DATABASE_URL"],
           "LABAPP_SECRET_KEY": settings["SECRET_KEY"],
           "LABAPP_SEARCH_BACKEND": settings["SEARCH_BACKEND"],
           "LABAPP_SQLITE_STATISTICS_SECONDS": "60" if statistics else "0"}
    process = subprocess.Popen([sys.executable, "-m", "flask", "--app", "labapp", "search",
                                "worker"], env=env, cwd=Path(__file__).resolve().parents[1],
                               stdout=subprocess.DEVNULL)
    try:
        wait_until(lambda: process.poll() is None and worker_alive(bench), "the indexer worker")
        yield process
    finally:
        process.send_signal(signal.SIGCONT)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)


def forget_search_backlog(bench: Bench) -> None:
    """For benchmarks of something else than search: drop the search-queue rows of the
    entities seeded through Core, which the first request or the worker would otherwise
    index while the API is timed."""
    with bench.engine.begin() as connection:
        connection.execute(delete(SearchQueue.__table__))


def planner_statistics_gathered(bench: Bench) -> None:
    """Wait until the worker has gathered SQLite's planner statistics (at its start, as it
    does after a restart of ``make run``); PostgreSQL's autovacuum keeps its own."""
    if bench.engine.dialect.name != "sqlite":
        return

    def gathered() -> bool:
        with bench.engine.connect() as connection:
            return bool(connection.scalar(text(
                "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'"))) and bool(
                connection.scalar(text("SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'entity'")))
    wait_until(gathered, "the planner statistics")


def tallies_folded(bench: Bench) -> None:
    """Wait until the worker has folded the changes of the seeding into the entity tallies
    and the counts per location, as it keeps them folded while the application serves
    (PostgreSQL's statistics, gathered next, then see the change tables empty)."""
    def folded() -> bool:
        with bench.engine.connect() as connection:
            return all(connection.scalar(select(change.id).limit(1)) is None
                       for change in (EntityCountChange, LocationCountChange))
    wait_until(folded, "the entity tallies and location counts folded", timeout=600)
